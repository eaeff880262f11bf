-- nn.sequential's backward through a relu nn.conv2d and the max pool after
-- it (Pool:takes_act, lua/vela/pool.lua): the pool applies the conv's relu′ to
-- dy on its own outputs and the conv takes the routed gradient as δ. On the
-- cpu (tests/lua/test_conv.lua checks a net so on every device), nets with both conv paths of the cpu (one input channel, several),
-- odd image sizes (pixels in no window), windows whose maximum is ≤ 0 and
-- negative gradients: net:backward's gradients must be the layer-by-layer
-- backward's (which applies relu′ over the conv's whole output) bit for bit,
-- and that one agrees with float64 central differences (nn.gradcheck). A pool
-- that does not tile its input, or a conv that is not relu, is left alone.
-- ~0.3 s on the cpu.
local t = dofile("tests/lua/t.lua")
local nn = require "vela.nn"

local check = dofile("tests/lua/helpers/pool_act.lua")

do
  local id = "cpu"
  t.test(id .. ": net:backward through relu conv + max pool gives the layer-by-layer gradients bit for bit", function()
    -- 9×9 → conv 3×3 → 7×7 (odd: its last row and column are in no window) → pool → 3×3
    -- → conv 2×2, 3 → 16 channels (the cpu's several-channel path) → 2×2 → pool → 1×1
    local net = nn.sequential{
      nn.linear(81, 81, "identity", {seed = 5}),  -- so the first conv's dx is asked for
      nn.conv2d(1, 3, 3, {activation = "relu", input = 9, seed = 1}),
      nn.maxpool2d(2),
      nn.conv2d(3, 16, 2, {activation = "relu", seed = 2}),
      nn.maxpool2d(2),
      nn.flatten(),
      nn.linear(16, 5, "identity", {seed = 3}),
    }
    local x = randn(81, 6, 11)
    vela.linear_frac(x, 1, -0.3, 0, 1)  -- x − 0.3: more windows whose maximum is ≤ 0
    check(net, x, randn(5, 6, 12), "conv + pool")
    assert(net.layers[3]:takes_act(net.layers[2]) and net.layers[5]:takes_act(net.layers[4]), "both pools take the relu′")
    local r = nn.gradcheck(net, x, {entries = 12})
    assert(r.ok, tostring(r))
  end)

  t.test(id .. ": a pool that does not tile, or a tanh conv, keeps the conv's own act′", function()
    local pool3 = nn.maxpool2d(3, 2)
    local net = nn.sequential{nn.conv2d(1, 2, 3, {activation = "relu", input = 9, seed = 1}), pool3, nn.flatten(),
      nn.linear(18, 3, "identity", {seed = 3})}
    assert(not pool3:takes_act(net.layers[1]), "a 3×3 pool of stride 2 takes no act′")
    check(net, randn(81, 4, 13), randn(3, 4, 14), "overlapping pool")
    local tanh = nn.sequential{nn.conv2d(1, 2, 3, {activation = "tanh", input = 8, seed = 1}), nn.maxpool2d(2)}
    assert(not tanh.layers[2]:takes_act(tanh.layers[1]), "a tanh conv's pool takes no act′")
    local relu = nn.sequential{nn.conv2d(1, 2, 3, {activation = "relu", input = 8, seed = 1}), nn.maxpool2d(2)}
    relu:forward(randn(64, 2, 15))
    assert(relu.layers[2]:takes_act(relu.layers[1]), "a relu conv's 2×2 pool takes its relu′")
    relu.layers[1].backward = function(self, ...) return nn.Conv2d.backward(self, ...) end
    assert(not relu.layers[2]:takes_act(relu.layers[1]), "a replaced backward is left alone")
  end)
end

t.done()

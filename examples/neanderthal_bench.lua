-- neanderthal_bench.lua — the micro-benchmark of the Neanderthal deep
-- learning tutorial: a 10000→5000→1000→10 fully connected net (sigmoid,
-- tanh, then a linear output into softmax cross-entropy), one forward and
-- one backward pass over a batch of random inputs, timed with the device
-- synchronised, on each device named. `size` scales every layer width down
-- (size=0.1 is 1000→500→100→10) and `batch` sets the number of samples.
--
--   build/vela examples/neanderthal_bench.lua [size=1] [batch=1000] [n=3] [devices=cpu,vulkan:0]
local vela = require "vela"
local nn = require "vela.nn"

local opts = require("vela.options").parse(arg,
  "build/vela examples/neanderthal_bench.lua [size=1] [batch=1000] [n=3] [devices=cpu,vulkan:0]", {
  {"size", 1, "scale of every layer width"},
  {"batch", 1000, "samples per pass"},
  {"n", 3, "timed passes per device"},
  {"devices", nil, "devices to time, comma separated (default: the current one)"},
  {"device", nil, "the one device to time"},
})
opts.devices = opts.devices or tostring(vela.device()):match("^%S+")
local widths = {}
for i, w in ipairs{10000, 5000, 1000} do widths[i] = math.max(1, math.floor(w * opts.size + 0.5)) end
widths[4] = 10
local b = opts.batch

-- Multiply-adds of one forward+backward: forward W·x per layer, backward dW
-- for every layer and dx for all but the first, two flops each.
local flops = 0
for i = 1, 3 do flops = flops + 2 * widths[i] * widths[i + 1] * b * (i == 1 and 2 or 3) end

print(("%d→%d→%d→%d, batch %d: %.1f GFLOP per forward+backward"):format(
  widths[1], widths[2], widths[3], widths[4], b, flops / 1e9))
print(("%-10s %12s %12s %12s"):format("device", "forward s", "fwd+bwd s", "GFLOP/s"))
for id in tostring(opts.devices):gmatch("[^,]+") do
  if not pcall(vela.device, id) then
    print(("%-10s not available"):format(id))
  else
    local net = nn.sequential{
      nn.linear(widths[1], widths[2], "sigmoid", {seed = 1}),
      nn.linear(widths[2], widths[3], "tanh", {seed = 2}),
      nn.linear(widths[3], widths[4], "identity", {seed = 3}),
    }
    local x = vela.rand(widths[1], b, 4)
    local y = vela.matrix(1, b, 1)
    local lossfn = nn.softmax_xent()
    local function fwd() return net:forward(x) end
    local function step()
      lossfn:forward(net:forward(x), y)
      net:backward(lossfn:backward())
    end
    step()  -- warm up: buffers, pipelines
    vela.sync()
    local function best(fn)
      local t = math.huge
      for _ = 1, opts.n do
        local t0 = vela.clock()
        fn()
        vela.sync()
        t = math.min(t, vela.clock() - t0)
      end
      return t
    end
    local tf, tb = best(fwd), best(step)
    print(("%-10s %12.4f %12.4f %12.1f"):format(id, tf, tb, flops / tb / 1e9))
    net = nil
    collectgarbage()
  end
end

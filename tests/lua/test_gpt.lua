-- A small character GPT (examples/gpt.lua's layout, small sizes), seeded, trained
-- 50 Adam steps on each device: the first loss against a float64 computation
-- on the host of the same initial weights (each layer's host_forward, the
-- float64 twin nn.gradcheck uses, and −log softmax in float64), near ln V;
-- the loss falls; and every device's 50 losses agree with the cpu's within
-- a stated tolerance (float32 rounding, amplified a little by 50 Adam steps).
local t = dofile("tests/lua/t.lua")
local nn, optim, data = require "vela.nn", require "vela.optim", require "vela.data"

local ids = t.devices()
local STEPS, T, B, DIM = 50, 8, 4, 16
-- The tolerances: first loss vs float64, and any step's loss vs the cpu's.
local TOL_FIRST, TOL_DEVICES = 1e-4, 1e-4

local S = ("The quick brown fox jumps over the lazy dog. A small model learns which letter follows which. "):rep(6)
local txt = data.text(nil, {text = S, val = 0.2})
local V = txt.size

local function gpt()
  return nn.sequential{nn.embedding(V, DIM, {seed = 1}), nn.posembed(T, DIM, {seed = 2}),
    nn.block(DIM, 2, {context = T, mlp = 32, seed = 10}), nn.block(DIM, 2, {context = T, mlp = 32, seed = 20}),
    nn.layernorm(DIM), nn.linear(DIM, V, {seed = 3})}
end

-- The mean cross-entropy of the net's float64 forward on the host (its parameters read once).
local function host_loss(net, x, y)
  local a = x:to("cpu"):totable()
  for _, l in ipairs(net.layers) do
    local P = {}
    for _, p in ipairs(l:params()) do P[p.name:match("[^.]*$")] = p[1]:to("cpu"):totable() end
    a = l:host_forward(a, P, {})
  end
  local Y, sum = y:to("cpu"):totable()[1], 0
  for j = 1, #Y do
    local m = -math.huge
    for c = 1, V do m = math.max(m, a[c][j]) end
    local z = 0
    for c = 1, V do z = z + math.exp(a[c][j] - m) end
    sum = sum + (m + math.log(z) - a[Y[j]][j])
  end
  return sum / #Y
end

local runs = {}
for _, id in ipairs(ids) do
  t.test(id .. ": a small GPT, 50 Adam steps: first loss = float64 host value ≈ ln V, the loss falls", function()
    device(id)
    local net, opt, loss = gpt(), optim.adam{lr = 0.01}, nn.softmax_xent()
    local loader = txt:loader(T, B, {seed = 1})
    local losses = {}
    for step = 1, STEPS do
      local x, y = loader:batch(step)
      if step == 1 then losses.host = host_loss(net, x, y) end
      losses[step] = nn.mean(loss:forward(net:forward(x), y))
      net:backward(loss:backward())
      opt:step(net)
    end
    t.near(losses[1], losses.host, TOL_FIRST, "step 1 vs float64")
    assert(math.abs(losses[1] - math.log(V)) < 0.6, ("step 1 loss %g, ln V = %g"):format(losses[1], math.log(V)))
    local last = (losses[STEPS] + losses[STEPS - 1] + losses[STEPS - 2]) / 3
    assert(last < losses[1] - 1, ("the loss did not fall: %g then %g"):format(losses[1], last))
    print(("  %s: loss %.6f (float64 %.6f, ln V %.4f) → %.6f after %d steps"):format(id, losses[1], losses.host,
      math.log(V), losses[STEPS], STEPS))
    runs[id] = losses
  end)
end

t.test("every device's 50 losses agree with the cpu's within " .. TOL_DEVICES, function()
  local ref = assert(runs.cpu, "no cpu run")
  for id, losses in pairs(runs) do
    local worst = 0
    for step = 1, STEPS do worst = math.max(worst, math.abs(losses[step] - ref[step])) end
    print(("  %s vs cpu: worst |Δloss| %.2e over %d steps"):format(id, worst, STEPS))
    assert(worst <= TOL_DEVICES, ("%s: worst |Δloss| %g > %g"):format(id, worst, TOL_DEVICES))
  end
end)

t.done()

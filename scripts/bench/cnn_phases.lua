-- Where the CNN's training step (examples/cnn.lua's net, batch 128, the
-- cpu) spends its processor time, per phase: each layer's forward and
-- backward alone, the whole step (forward, backward of a fixed output
-- gradient in place of a loss, SGD), the second conv's dx alone (its
-- backward with dx less its backward without), and the second conv's kernels
-- (vela.profile over its forward + backward), and the first conv + pool's
-- backward as nn.sequential runs it and layer by layer. Best of `rounds` timings of
-- `reps` calls, ms of wall clock and of process cpu time (all threads), the
-- minimum being what a loaded machine disturbs least.
--
--   build/vela scripts/bench/cnn_phases.lua [threads=N] [reps=10] [rounds=7] [batch=128]
local vela = require "vela"
local nn, optim = require "vela.nn", require "vela.optim"
local opts = {reps = 10, rounds = 7, batch = 128}
for _, a in ipairs(arg) do
  local k, v = a:match("^(%w+)=(%S+)$")
  if not k or not (k == "threads" or opts[k]) then
    error("cnn_phases.lua: unknown argument '" .. a .. "' (threads, reps, rounds, batch)")
  end
  opts[k] = math.tointeger(tonumber(v)) or error("cnn_phases.lua: " .. k .. " must be an integer")
end
vela.device("cpu")
if opts.threads then vela.threads(opts.threads) end
local B = opts.batch
local net = nn.sequential{
  nn.conv2d(1, 32, 5, {activation = "relu", input = {h = 28, w = 28}, seed = 1}), nn.maxpool2d(2),
  nn.conv2d(32, 64, 5, {activation = "relu", seed = 2}), nn.maxpool2d(2), nn.flatten(),
  nn.linear(1024, 128, "relu", {seed = 3}), nn.linear(128, 10, nil, {seed = 4})}
local x = vela.rand(784, B, 7)
local function best(f)
  f()
  local bw, bc = 1e9, 1e9
  for _ = 1, opts.rounds do
    local c, w = os.clock(), vela.clock()
    for _ = 1, opts.reps do f() end
    bw, bc = math.min(bw, (vela.clock() - w) / opts.reps), math.min(bc, (os.clock() - c) / opts.reps)
  end
  return bw * 1e3, bc * 1e3
end
-- inputs and output gradients of every layer, from one forward
local ins, outs = {x}, {}
for i, l in ipairs(net.layers) do ins[i + 1] = l:forward(ins[i]); outs[i] = ins[i + 1]:clone() end
local rows, total_c = {}, 0
for i, l in ipairs(net.layers) do
  local fw, fc = best(function() l:forward(ins[i]) end)
  local bw, bc = best(function() l:forward(ins[i]); l:backward(outs[i], i > 1) end)
  rows[#rows + 1] = {tostring(l), fw, fc, bw - fw, bc - fc}
  total_c = total_c + bc
end
print(("cnn_phases: batch %d, %d threads, best of %d × %d (ms per call; forward alone, backward = forward+backward − forward)"):format(
  B, vela.threads(), opts.rounds, opts.reps))
for _, r in ipairs(rows) do
  print(("  %-32s forward %7.3f wall %7.3f cpu   backward %7.3f wall %7.3f cpu"):format(table.unpack(r)))
end
-- The second conv's dx alone: its backward with dx less its backward without.
local conv2 = net.layers[3]
local dw1, dc1 = best(function() conv2:forward(ins[3]); conv2:backward(outs[3], true) end)
local dw0, dc0 = best(function() conv2:forward(ins[3]); conv2:backward(outs[3], false) end)
print(("  %-32s dx alone (backward with dx − without) %7.3f wall %7.3f cpu"):format(tostring(conv2), dw1 - dw0,
  dc1 - dc0))
-- The first conv and pool's backward as nn.sequential runs them (the pool
-- applying the conv's relu′ on its outputs: Pool:takes_act), beside the
-- layer-by-layer backward of the rows above (each layer its own).
local pair = nn.sequential{net.layers[1], net.layers[2]}
local pw, pc = best(function() pair:forward(x); pair:backward(outs[2]) end)
local lw, lc = best(function()
  pair:forward(x)
  net.layers[1]:backward(net.layers[2]:backward(outs[2], true), false)
end)
local fw1, fc1 = best(function() pair:forward(x) end)
print(("  first conv + pool backward: nn.sequential's %7.3f wall %7.3f cpu, layer by layer %7.3f wall %7.3f cpu"):format(
  pw - fw1, pc - fc1, lw - fw1, lc - fc1))
local g = vela.rand(10, B, 8)
local opt = optim.sgd{lr = 0.0, momentum = 0.9}
local params = net:params()
local sw, sc = best(function()
  net:forward(x)
  net:backward(g)
  opt:step(params)
end)
print(("  layers alone: %.3f ms cpu; whole step (forward, backward, SGD): %.3f wall %.3f cpu"):format(total_c, sw, sc))
local p = vela.profile(function()
  for _ = 1, opts.reps do conv2:forward(ins[3]); conv2:backward(outs[3], true) end
end)
table.sort(p, function(a, b) return (a.ms or 0) > (b.ms or 0) end)
print(("  %s, %d forward+backward, kernels by time (wall ms per call of the pair):"):format(tostring(conv2), opts.reps))
for _, r in ipairs(p) do
  if r.ms then print(("    %-14s %7.3f ms  %5.1f%%  %d calls"):format(r.kernel, r.ms / opts.reps, 100 * r.share, r.calls // opts.reps)) end
end

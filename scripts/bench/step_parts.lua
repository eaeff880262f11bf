-- Parts of the MLP's training step (784-256-10, batch 128) timed alone, as the
-- best of 15 rounds (the minimum is the figure a loaded machine disturbs least),
-- wall and cpu milliseconds: dense at both layers' shapes, and nn.fit's optimizer
-- step with every check (opt:step) and without (optim._epoch_stepper's later
-- steps; a tree without it prints dense only, for before/after).
--
--   build/vela scripts/bench/step_parts.lua [threads]
local vela = require "vela"
local nn, optim = require "vela.nn", require "vela.optim"
vela.device("cpu")
if arg[1] then vela.threads(tonumber(arg[1])) end
local function best(f, reps, rounds)
  f()
  local b, bc = 1e9, 1e9
  for r = 1, rounds do
    local c, w = os.clock(), vela.clock()
    for i = 1, reps do f() end
    b = math.min(b, (vela.clock() - w) / reps); bc = math.min(bc, (os.clock() - c) / reps)
  end
  return b * 1e3, bc * 1e3
end
local W, x, b, y = vela.rand(256, 784, 1), vela.rand(784, 128, 2), vela.rand(256, 1, 3), vela.zeros(256, 128)
local W2, b2, y2 = vela.rand(10, 256, 4), vela.rand(10, 1, 5), vela.zeros(10, 128)
local w1, c1 = best(function() vela.dense(W, x, b, y, "relu") end, 200, 15)
local w2, c2 = best(function() vela.dense(W2, y, b2, y2, "identity") end, 2000, 15)
print(("dense 256x784x128 relu: %.4f ms wall, %.4f cpu; dense 10x256x128: %.4f ms wall, %.4f cpu"):format(w1, c1, w2, c2))
if optim._epoch_stepper then
  local net = nn.sequential{nn.linear(784, 256, "relu", {seed = 1}), nn.linear(256, 10, nil, {seed = 2})}
  local params, opt = net:params(), optim.sgd{lr = 0.0, momentum = 0.9}
  opt:step(params)
  local st = optim._epoch_stepper(opt)
  st(params)
  local a, ac = best(function() opt:step(params) end, 500, 15)
  local u, uc = best(function() st(params) end, 500, 15)
  print(("optimizer step: opt:step %.4f ms, epoch stepper %.4f ms (wall); cpu %.4f vs %.4f"):format(a, u, ac, uc))
end

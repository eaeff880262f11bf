-- The MLP's (784-256-10, batch 128, Fashion-MNIST, optim.sgd lr 0.05 momentum
-- 0.9) training rate on the cpu as the median of epochs 2..N (the lower
-- middle when N − 1 is even), not the best: on a VM whose host halves a
-- core's speed in windows, the best epoch hides what a change does in the
-- slow ones. Prints "wall cpu e2,e3,..." (examples
-- per second, wall clock and per processor-second; then each epoch's wall).
--
--   build/vela scripts/bench/epoch_median.lua [epochs=6] [threads=N]
local vela = require "vela"
local nn, optim, data = require "vela.nn", require "vela.optim", require "vela.data"
local bench = dofile("scripts/bench/train_bench.lua")

local opts = bench.options{epochs = 6}
for k in pairs(opts) do
  if k ~= "epochs" and k ~= "threads" then error(("epoch_median.lua: unknown option '%s' (epochs, threads)"):format(k)) end
end
local E = math.tointeger(opts.epochs)
if not E or E < 2 then error("epoch_median.lua: epochs must be an integer ≥ 2") end
vela.device("cpu")
local sets = data.fashion_mnist()
local net = nn.sequential{nn.linear(784, 256, "relu", {seed = 1}), nn.linear(256, 10, nil, {seed = 2})}
local h = nn.fit(net, sets.train, {epochs = E, batch = 128, progress = false,
                                   optimizer = optim.sgd{lr = 0.05, momentum = 0.9}})
local w, c, each = {}, {}, {}
for e = 2, E do
  w[#w + 1], c[#c + 1] = h.examples_per_s[e], sets.train.n / h.cpu_seconds[e]
  each[#each + 1] = ("%.0f"):format(h.examples_per_s[e])
end
table.sort(w)
table.sort(c)
local mid = (#w + 1) // 2  -- the median (the lower middle for an even count)
print(("%.0f %.0f %s"):format(w[mid], c[mid], table.concat(each, ",")))

-- The MLP's results over several seeds, to compare two builds (issue 29 item 2:
-- a product cut differently must train as well): the 784-256-10 MLP of
-- examples/mnist.lua on Fashion-MNIST (or MNIST), optim.sgd{lr = 0.05,
-- momentum = 0.9}, batch 128, with the test set; per seed the epochs' losses
-- and test accuracies (17 digits for the last epoch's loss: the same thread
-- count must give the same bits on every run), then their means and ranges.
--
--   build/vela scripts/bench/fit_seeds.lua [seeds=4] [epochs=2] [set=fashion|mnist] [threads=N]
local vela = require "vela"
local nn, optim, data = require "vela.nn", require "vela.optim", require "vela.data"
local bench = dofile("scripts/bench/train_bench.lua")

local opts = bench.options{seeds = 4, epochs = 2, set = "fashion"}
for k in pairs(opts) do
  if not ({seeds = 1, epochs = 1, set = 1, threads = 1})[k] then
    error(("fit_seeds.lua: unknown option '%s' (seeds, epochs, set, threads)"):format(k))
  end
end
vela.device("cpu")
local sets = opts.set == "mnist" and data.mnist() or data.fashion_mnist()
local E = math.tointeger(opts.epochs)
local losses, accs = {}, {}
for s = 1, math.tointeger(opts.seeds) do
  local net = nn.sequential{nn.linear(784, 256, "relu", {seed = s}), nn.linear(256, 10, nil, {seed = s + 1})}
  local h = nn.fit(net, sets.train, {epochs = E, batch = 128, seed = s, progress = false, test = sets.test,
                                    optimizer = optim.sgd{lr = 0.05, momentum = 0.9}})
  local line = ("seed %d (%d threads):"):format(s, vela.threads())
  for e = 1, E do line = line .. (" epoch %d loss %.6f test %.2f%%;"):format(e, h.loss[e], 100 * h.test_accuracy[e]) end
  print(line .. (" last loss %.17g"):format(h.loss[E]))
  losses[s], accs[s] = h.loss[E], h.test_accuracy[E]
end
local function stats(t)
  local sum, lo, hi = 0, math.huge, -math.huge
  for _, v in ipairs(t) do sum, lo, hi = sum + v, math.min(lo, v), math.max(hi, v) end
  return sum / #t, lo, hi
end
local ml, ll, hl = stats(losses)
local ma, la, ha = stats(accs)
print(("%s, %d epochs, %d seeds: last loss mean %.5f (%.5f–%.5f), test accuracy mean %.2f%% (%.2f–%.2f)"):format(
  opts.set, E, #losses, ml, ll, hl, 100 * ma, 100 * la, 100 * ha))

-- examples/s of one nn.fit epoch on 6,000 MNIST samples (784-128-10, relu, sgd momentum, batch 128).
local nn, optim, data = require "vela.nn", require "vela.optim", require "vela.data"
device(os.getenv("DEV") or "cpu")
local sets = data.mnist()
local train = data.subset(sets.train, 1, 6000)
local rates = {}
for r = 1, 5 do
  local net = nn.sequential{nn.linear(784, 128, "relu", {seed = 1}), nn.linear(128, 10, nil, {seed = 2})}
  local h = nn.fit(net, train, {epochs = 1, batch = 128, optimizer = optim.sgd{lr = 0.05, momentum = 0.9}, progress = false})
  rates[r] = h.examples_per_s[1]
end
table.sort(rates)
print(string.format("%s: median %.0f examples/s (5 runs: %s)", os.getenv("DEV") or "cpu", rates[3],
  table.concat((function() local t = {} for i, v in ipairs(rates) do t[i] = string.format("%.0f", v) end return t end)(), " ")))

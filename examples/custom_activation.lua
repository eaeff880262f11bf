-- custom_activation.lua — an activation vela does not have, written here as
-- GLSL and compiled in-process at start-up: swish (SiLU), f(z) = z·σ(z), and
-- its derivative f′(z) = σ(z)·(1 + z·(1 − σ(z))). A 784-256-10 MLP with swish
-- trains on MNIST on the current device (SGD, momentum 0.9, lr 0.05, batch 128).
--
--   build/vela examples/custom_activation.lua [device=cpu|vulkan:0] [epochs=20] [seed=1] [init=he|xavier] [cosine]
local vela = require "vela"

local swish = vela.map("x / (1.0 + exp(-x))", {name = "swish", doc = "swish(z) = z·σ(z), elementwise"})
local swish_prime = vela.map([[
  sigmoid(x) * (1.0 + x * (1.0 - sigmoid(x)))
]], {name = "swish_prime", doc = "the derivative of swish: σ(z)·(1 + z·(1 − σ(z)))"})

local nn, optim, data = require "vela.nn", require "vela.optim", require "vela.data"

local opts = {device = nil, epochs = 20, seed = 1}
for _, a in ipairs(arg or {}) do
  local k, v = a:match("^%-*([%w_]+)=(.*)$")
  if k then opts[k] = tonumber(v) or v end
end
if opts.device then vela.device(opts.device) end

local sets = data.mnist()
print(("MNIST on %s: %d training and %d test images"):format(tostring(vela.device()), sets.train.n, sets.test.n))

local net = nn.sequential{
  nn.linear(784, 256, {f = swish, df = swish_prime, seed = opts.seed, init = opts.init}),
  nn.linear(256, 10, "identity", {seed = opts.seed + 1}),
}
print(net)

local hist = nn.fit(net, sets.train, {
  epochs = opts.epochs, batch = 128, seed = opts.seed,
  optimizer = optim.sgd{lr = 0.05, momentum = 0.9},
  schedule = opts.cosine and optim.cosine(0.05, opts.epochs, 0.001) or nil,
  loss = nn.softmax_xent(), test = sets.test,
})
local acc = hist.test_accuracy[opts.epochs]  -- nn.fit's evaluation after the last epoch: no second pass
local total = 0
for _, s in ipairs(hist.seconds) do total = total + s end
print(("final test accuracy %.2f%% with swish after %d epochs (%.1f s training)"):format(100 * acc, opts.epochs, total))

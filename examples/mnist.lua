-- mnist.lua — the main job: a 784-256-10 MLP (ReLU, softmax cross-entropy)
-- trained on MNIST with SGD (momentum 0.9, lr 0.05, batch 128) on the
-- current device, with a progress bar, the test accuracy after every epoch,
-- a loss curve, a confusion table and the final test accuracy.
--
--   build/vela examples/mnist.lua [device=cpu|vulkan:0] [epochs=10] [fashion] [seed=1] [threads=N] [save=net.vela]
--                                 [act=relu|gelu|elu|leaky_relu|softplus|tanh|sigmoid]
--
-- `fashion` trains on Fashion-MNIST (data/fashion-mnist) instead, with the
-- learning rate decaying from 0.05 along a cosine (`cosine` does that on MNIST).
local vela = require "vela"
local nn, optim, data, plot = require "vela.nn", require "vela.optim", require "vela.data", require "vela.plot"

local opts = {device = nil, epochs = 10, seed = 1, act = "relu"}
for _, a in ipairs(arg or {}) do
  local k, v = a:match("^%-*([%w_]+)=(.*)$")
  if k then opts[k] = tonumber(v) or v else opts[a:match("^%-*(.*)$")] = true end
end
if opts.device then vela.device(opts.device) end
if opts.threads then vela.threads(opts.threads) end

local sets = opts.fashion and data.fashion_mnist() or data.mnist()
print(("%s on %s: %d training and %d test images"):format(opts.fashion and "Fashion-MNIST" or "MNIST",
  tostring(vela.device()), sets.train.n, sets.test.n))
data.show(sets.train, 1)

local net = nn.sequential{
  nn.linear(784, 256, opts.act, {seed = opts.seed}),
  nn.linear(256, 10, "identity", {seed = opts.seed + 1}),
}
print(net)

local hist = nn.fit(net, sets.train, {
  epochs = opts.epochs, batch = 128, seed = opts.seed,
  optimizer = optim.sgd{lr = 0.05, momentum = 0.9},
  -- Fashion-MNIST is harder: the rate decays from 0.05 along a cosine.
  schedule = (opts.fashion or opts.cosine) and optim.cosine(0.05, opts.epochs, 0.001) or nil,
  loss = nn.softmax_xent(), test = sets.test,
})

plot(hist.batch_loss, {title = "training loss, every 20 batches", height = 8})
nn.confusion(net, sets.test)
local acc = nn.evaluate(net, sets.test)
local total = 0
for _, s in ipairs(hist.seconds) do total = total + s end
print(("final test accuracy %.2f%% after %d epochs (%.1f s training, %.0f examples/s)"):format(
  100 * acc, opts.epochs, total, sets.train.n * opts.epochs / total))
if opts.save then print("saved to " .. net:save(opts.save)) end

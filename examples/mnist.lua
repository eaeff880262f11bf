-- mnist.lua — the main job: a 784-256-10 MLP (ReLU, softmax cross-entropy)
-- trained on MNIST with SGD (momentum 0.9, lr 0.05, batch 128) on the
-- current device, with a progress bar, the test accuracy after every epoch,
-- a loss curve, a confusion table and the final test accuracy.
--
--   build/vela examples/mnist.lua [device=cpu|vulkan:0] [epochs=10] [fashion] [seed=1] [threads=N] [dist] [save=net.npz]
--                                 [act=relu|gelu|elu|leaky_relu|softplus|tanh|sigmoid]
--
-- `fashion` trains on Fashion-MNIST (data/fashion-mnist) instead, with the
-- learning rate decaying from 0.05 along a cosine (`cosine` does that on MNIST).
local vela = require "vela"
local nn, optim, data, plot = require "vela.nn", require "vela.optim", require "vela.data", require "vela.plot"

local opts = require("vela.options").parse(arg,
  "build/vela examples/mnist.lua [device=cpu|vulkan:0] [epochs=10] [fashion] [cosine] [seed=1] [threads=N] [dist] [save=net.npz] [act=relu]", {
  {"device", nil, "the device to train on (default: the first GPU, else the cpu)"},
  {"epochs", 10, "epochs to train", min = 1},
  {"fashion", false, "Fashion-MNIST instead of MNIST (with a cosine schedule)"},
  {"cosine", false, "the learning rate decays from 0.05 along a cosine"},
  {"seed", 1, "seed of the weights and the shuffle"},
  {"threads", nil, "OpenBLAS threads on the cpu"},
  {"dist", false, "data parallel across the processes of mpirun -np N (vela.dist): output and checkpoint from rank 0"},
  {"save", nil, "save a checkpoint (nn.save) there at the end"},
  {"act", "relu", "the hidden layer's activation (relu, gelu, elu, leaky_relu, softplus, tanh, sigmoid)"},
})

local dist = opts.dist and require "vela.dist"
if dist then dist.quiet() end  -- output from rank 0 only
local sets = opts.fashion and data.fashion_mnist() or data.mnist()
print(("%s on %s: %d training and %d test images"):format(opts.fashion and "Fashion-MNIST" or "MNIST",
  tostring(vela.device()), sets.train.n, sets.test.n))
data.show(sets.train, 1)

local net = nn.sequential{
  nn.linear(784, 256, opts.act, {seed = opts.seed}),
  nn.linear(256, 10, "identity", {seed = opts.seed + 1}),
}
print(net)

local opt = optim.sgd{lr = 0.05, momentum = 0.9}
local hist = nn.fit(net, sets.train, {
  epochs = opts.epochs, batch = 128, seed = opts.seed, dist = opts.dist,
  optimizer = opt,
  -- Fashion-MNIST is harder: the rate decays from 0.05 along a cosine.
  schedule = (opts.fashion or opts.cosine) and optim.cosine(0.05, opts.epochs, 0.001) or nil,
  loss = nn.softmax_xent(), test = sets.test,
})

plot(hist.batch_loss, {title = "training loss, every 20 batches", height = 8})
-- nn.fit evaluated the test set after the last epoch: that one pass gives the final accuracy and
-- the predictions the confusion table counts (no second pass over the test set).
print(nn.confusion(hist.test_predictions, sets.test))
local acc = hist.test_accuracy[opts.epochs]
local total = 0
for _, s in ipairs(hist.seconds) do total = total + s end
print(("final test accuracy %.2f%% after %d epochs (%.1f s training, %.0f examples/s)"):format(
  100 * acc, opts.epochs, total, sets.train.n * opts.epochs / total))
if dist and dist.active() then print(dist.summary()) end
if opts.save and not (dist and dist.rank() > 0) then print("saved to " .. nn.save(opts.save, net, opt, {epoch = opts.epochs, seed = opts.seed})) end

-- cnn.lua — a LeNet-style convolutional network on MNIST (or, with `fashion`,
-- Fashion-MNIST): two conv + max-pool blocks, then a hidden linear layer and
-- the output, trained with SGD (momentum 0.9) by nn.fit on the
-- current device, with the same progress bar, loss curve and confusion table
-- as examples/mnist.lua.
--
--   build/vela examples/cnn.lua [device=cpu|vulkan:0] [epochs=10] [fashion] [seed=1] [batch=N] [shift=N] [dropout=p] [threads=N]
--                               [save=net.npz] [train=N] (the first N training images only: a shorter run)
--
-- MNIST's 7,996 training digits are few for 184k parameters: batches of 32
-- (250 steps an epoch), each image moved by up to ±2 pixels on the device
-- (nn.fit's shift, Philox-seeded: the same on every device); Fashion-MNIST's
-- 60,000 images train unshifted in batches of 128, with dropout (0.3) before
-- the output layer.
--
--   1×28×28 ─conv 5×5, 32, relu→ 32×24×24 ─max 2×2→ 32×12×12 ─conv 5×5, 64, relu→ 64×8×8 ─max 2×2→ 64×4×4
--          ─flatten→ 1024 ─linear, relu→ 128 [─dropout→] ─linear→ 10
--
-- The images stay in vela's layout throughout: C·H·W rows, one column per
-- image (see ?layout); nn.sequential hands each layer the image shape of the
-- one before it, so only the first conv is told the image size.
local vela = require "vela"
local nn, optim, data, plot = require "vela.nn", require "vela.optim", require "vela.data", require "vela.plot"

local opts = require("vela.options").parse(arg,
  "build/vela examples/cnn.lua [device=cpu|vulkan:0] [epochs=10] [fashion] [seed=1] [batch=N] [shift=N] [dropout=p] [threads=N] [dist] [save=net.npz] [train=N]", {
  {"device", nil, "the device to train on (default: the first GPU, else the cpu)"},
  {"epochs", 10, "epochs to train", min = 1},
  {"fashion", false, "Fashion-MNIST instead of MNIST"},
  {"seed", 1, "seed of the weights and the shuffle"},
  {"batch", nil, "batch size (default 32 on MNIST, 128 on Fashion-MNIST)"},
  {"dropout", nil, "dropout before the output layer (default 0 on MNIST, 0.3 on Fashion-MNIST)"},
  {"shift", nil, "augmentation: shift each image by up to ±N pixels (default 2 on MNIST, 0 on Fashion-MNIST)"},
  {"threads", nil, "OpenBLAS threads on the cpu"},
  {"dist", false, "data parallel across the processes of mpirun -np N (vela.dist): output and checkpoint from rank 0"},
  {"save", nil, "save a checkpoint (nn.save) there at the end"},
  {"train", nil, "train on the first N training images only"},
})

local dist = opts.dist and require "vela.dist"
if dist then dist.quiet() end  -- output from rank 0 only
local sets = opts.fashion and data.fashion_mnist() or data.mnist()
local ntrain = opts.train and math.tointeger(tonumber(opts.train))
if opts.train and not (ntrain and ntrain > 0) then error("cnn.lua: train must be a positive integer, got " .. tostring(opts.train), 0) end
local train = ntrain and data.subset(sets.train, 1, math.min(ntrain, sets.train.n)) or sets.train
print(("%s on %s: %d training and %d test images"):format(opts.fashion and "Fashion-MNIST" or "MNIST",
  tostring(vela.device()), train.n, sets.test.n))

local s = opts.seed
local p_drop = opts.dropout and tonumber(opts.dropout) or (opts.fashion and 0.3 or 0)
local layers = {
  nn.conv2d(1, 32, 5, {activation = "relu", input = {h = 28, w = 28}, seed = s}),
  nn.maxpool2d(2),
  nn.conv2d(32, 64, 5, {activation = "relu", seed = s + 1}),
  nn.maxpool2d(2),
  nn.flatten(),
  nn.linear(64 * 4 * 4, 128, "relu", {seed = s + 2}),
}
if p_drop > 0 then layers[#layers + 1] = nn.dropout(p_drop, {seed = s + 4}) end
layers[#layers + 1] = nn.linear(128, 10, "identity", {seed = s + 3})
local net = nn.sequential(layers)
print(net)
print(("%d parameters"):format(net:nparams()))

local opt = optim.sgd{lr = 0.05, momentum = 0.9}
local hist = nn.fit(net, train, {
  epochs = opts.epochs, batch = opts.batch and math.tointeger(tonumber(opts.batch)) or (opts.fashion and 128 or 32),
  seed = opts.seed, dist = opts.dist,
  shift = opts.shift and math.tointeger(tonumber(opts.shift)) or (opts.fashion and 0 or 2),
  optimizer = opt,
  -- the rate decays from 0.05 along a cosine to 0.001 at the last epoch
  schedule = optim.cosine(0.05, opts.epochs, 0.001),
  loss = nn.softmax_xent(), test = sets.test,
})

plot(hist.batch_loss, {title = "training loss, every 20 batches", height = 8})
-- nn.fit evaluated the test set after the last epoch: that one pass gives the final accuracy and
-- the predictions the confusion table counts (no second pass over the test set).
print(nn.confusion(hist.test_predictions, sets.test))
local acc = hist.test_accuracy[opts.epochs]
local total = 0
for _, sec in ipairs(hist.seconds) do total = total + sec end
print(("final test accuracy %.2f%% after %d epochs (%.1f s training, %.0f examples/s)"):format(
  100 * acc, opts.epochs, total, train.n * opts.epochs / total))
if dist and dist.active() then print(dist.summary()) end
if opts.save and not (dist and dist.rank() > 0) then print("saved to " .. nn.save(opts.save, net, opt, {epoch = opts.epochs, seed = opts.seed})) end

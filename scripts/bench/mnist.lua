-- Training throughput of the MNIST MLP (784-256-10, ReLU, softmax
-- cross-entropy, SGD momentum 0.9, lr 0.05, batch 128) on each device, in
-- examples per second (the best of `epochs` epochs, the first one included
-- for warm-up), and the same model in PyTorch side by side when python3 can
-- import torch (scripts/bench/mnist_torch.py). On Vulkan devices it also
-- counts host waits in one training step started on an idle device (0: the
-- step only records work). Beside the wall-clock rate it prints examples per
-- second of processor time (all threads of this process), which a machine
-- shared with other work does not distort.
--
-- set=fashion trains on Fashion-MNIST (60,000 training images) instead; torch_threads=N
-- gives PyTorch N threads (it starts with one here).
--
--   build/vela scripts/bench/mnist.lua [epochs=5] [devices=cpu,vulkan:0] [torch=yes|no] [threads=N]
--                                      [batch=128] [set=mnist|fashion] [torch_threads=N]
local vela = require "vela"
local nn, data = require "vela.nn", require "vela.data"
local bench = dofile("scripts/bench/train_bench.lua")

local opts = bench.options{epochs = 5, devices = "cpu,vulkan:0", torch = "yes", batch = 128, set = "mnist"}
bench.run(opts, {
  title = ("MLP 784-256-10, batch %d, %d epochs of %s, %d cpu threads"):format(opts.batch, opts.epochs,
    opts.set == "fashion" and "Fashion-MNIST (60,000 training images)" or "MNIST (7,996 training images)", vela.threads()),
  sets = function() return opts.set == "fashion" and data.fashion_mnist() or data.mnist() end,
  net = function() return nn.sequential{nn.linear(784, 256, "relu", {seed = 1}), nn.linear(256, 10, nil, {seed = 2})} end,
  torch = function(py)
    return ("%s scripts/bench/mnist_torch.py --epochs %d --batch %d --dir %s --threads %d"):format(py, opts.epochs,
      opts.batch, opts.set == "fashion" and "data/fashion-mnist" or "data/mnist", tonumber(opts.torch_threads) or 0)
  end,
})

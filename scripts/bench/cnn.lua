-- Training throughput of the CNN of examples/cnn.lua (1×28×28 → conv 5×5 32
-- relu → max 2 → conv 5×5 64 relu → max 2 → 1024 → 128 relu → 10, softmax
-- cross-entropy, SGD momentum 0.9, lr 0.05, batch 128) on each device, in
-- examples per second (the best of `epochs` epochs, the first one included
-- for warm-up), and the same model in PyTorch side by side when python3 can
-- import torch (scripts/bench/cnn_torch.py). On Vulkan devices it also
-- counts host waits in one training step started on an idle device (0: the
-- step only records work). Beside the wall-clock rate it prints examples per
-- second of processor time (all threads of this process), which a machine
-- shared with other work does not distort, and the process's peak resident
-- memory (VmHWM: with devices=cpu, the cpu's alone; the PyTorch line gives
-- its own ru_maxrss).
--
--   build/vela scripts/bench/cnn.lua [epochs=3] [devices=cpu,vulkan:0] [torch=yes|no] [threads=N] [train=N]
--
-- train=N trains on the first N images only (a shorter run on slow devices);
-- the PyTorch twin gets the same N.
local vela = require "vela"
local nn, data = require "vela.nn", require "vela.data"
local bench = dofile("scripts/bench/train_bench.lua")

local opts = bench.options{epochs = 3, devices = "cpu,vulkan:0", torch = "yes", batch = 128}
bench.run(opts, {
  title = ("CNN conv32-pool-conv64-pool-128-10, batch %d, %d epochs of MNIST (%s training images), %d cpu threads"):format(
    opts.batch, opts.epochs, opts.train or "7,996", vela.threads()),
  sets = function()
    local sets = data.mnist()
    if opts.train then sets.train = data.subset(sets.train, 1, math.min(math.tointeger(opts.train), sets.train.n)) end
    return sets
  end,
  net = function()
    return nn.sequential{
      nn.conv2d(1, 32, 5, {activation = "relu", input = {h = 28, w = 28}, seed = 1}),
      nn.maxpool2d(2),
      nn.conv2d(32, 64, 5, {activation = "relu", seed = 2}),
      nn.maxpool2d(2),
      nn.flatten(),
      nn.linear(1024, 128, "relu", {seed = 3}),
      nn.linear(128, 10, nil, {seed = 4}),
    }
  end,
  torch = function(py)
    return ("%s scripts/bench/cnn_torch.py --epochs %d --batch %d --threads %d%s"):format(py, opts.epochs, opts.batch,
      vela.threads(), opts.train and (" --train %d"):format(math.tointeger(opts.train)) or "")
  end,
})

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
local nn, optim, data = require "vela.nn", require "vela.optim", require "vela.data"

local opts = {epochs = 5, devices = "cpu,vulkan:0", torch = "yes", batch = 128, set = "mnist"}
for _, a in ipairs(arg or {}) do
  local k, v = a:match("^%-*([%w_]+)=(.*)$")
  if k then opts[k] = tonumber(v) or v end
end

if opts.threads then vela.threads(opts.threads) end

local rows = {}
for id in tostring(opts.devices):gmatch("[^,]+") do
  if not pcall(vela.device, id) then
    rows[#rows + 1] = {id, "not available"}
  else
    local sets = opts.set == "fashion" and data.fashion_mnist() or data.mnist()
    local net = nn.sequential{nn.linear(784, 256, "relu", {seed = 1}), nn.linear(256, 10, nil, {seed = 2})}
    local h = nn.fit(net, sets.train, {epochs = opts.epochs, batch = opts.batch, test = sets.test, progress = false,
                                      optimizer = optim.sgd{lr = 0.05, momentum = 0.9}})
    local best, best_cpu = 0, 0
    for e, r in ipairs(h.examples_per_s) do
      best = math.max(best, r)
      best_cpu = math.max(best_cpu, sets.train.n / h.cpu_seconds[e])
    end
    -- One more step from an idle device, counting host waits.
    local lossfn, opt = nn.softmax_xent(), net.optimizer
    local x, y = data.loader(sets.train, opts.batch, {seed = 9}):epoch(1)()
    vela.sync()
    local w0 = vela.stats().host_waits
    lossfn:forward(net:forward(x), y); net:backward(lossfn:backward()); opt:step(net)
    local waits = vela.stats().host_waits - w0
    vela.sync()
    rows[#rows + 1] = {id, ("%8.0f ex/s (%6.0f per cpu-second)   test %.2f%% after %d epochs   host waits in a step: %d"):format(
      best, best_cpu, 100 * h.test_accuracy[opts.epochs], opts.epochs, waits)}
  end
end

print(("MLP 784-256-10, batch %d, %d epochs of %s, %d cpu threads"):format(opts.batch, opts.epochs,
  opts.set == "fashion" and "Fashion-MNIST (60,000 training images)" or "MNIST (7,996 training images)", vela.threads()))
for _, r in ipairs(rows) do print(("%-12s %s"):format(r[1], r[2])) end

if opts.torch ~= "no" then
  -- The first python that imports torch (a pyenv shim may hide Debian's python3-torch).
  local py
  for _, cand in ipairs{"python3", "/usr/bin/python3"} do
    if os.execute(cand .. " -c 'import torch' 2>/dev/null") then py = cand break end
  end
  if py then
    local dir = opts.set == "fashion" and "data/fashion-mnist" or "data/mnist"
    local p = io.popen(("%s scripts/bench/mnist_torch.py --epochs %d --batch %d --dir %s --threads %d 2>&1"):format(
      py, opts.epochs, opts.batch, dir, tonumber(opts.torch_threads) or 0))
    local last
    for line in p:lines() do last = line end
    p:close()
    print(("%-12s %s"):format("pytorch", last or "no output"))
  else
    print(("%-12s %s"):format("pytorch", "not installed (apt-get install python3-torch to compare)"))
  end
end

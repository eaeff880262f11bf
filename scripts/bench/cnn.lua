-- Training throughput of the CNN of examples/cnn.lua (1×28×28 → conv 5×5 32
-- relu → max 2 → conv 5×5 64 relu → max 2 → 1024 → 128 relu → 10, softmax
-- cross-entropy, SGD momentum 0.9, lr 0.05, batch 128) on each device, in
-- examples per second (the best of `epochs` epochs, the first one included
-- for warm-up), and the same model in PyTorch side by side when python3 can
-- import torch (scripts/bench/cnn_torch.py). On Vulkan devices it also
-- counts host waits in one training step started on an idle device (0: the
-- step only records work). Beside the wall-clock rate it prints examples per
-- second of processor time (all threads of this process), which a machine
-- shared with other work does not distort.
--
--   build/vela scripts/bench/cnn.lua [epochs=3] [devices=cpu,vulkan:0] [torch=yes|no] [threads=N] [train=N]
--
-- train=N trains on the first N images only (a shorter run on slow devices).
local vela = require "vela"
local nn, optim, data = require "vela.nn", require "vela.optim", require "vela.data"

local opts = {epochs = 3, devices = "cpu,vulkan:0", torch = "yes", batch = 128}
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
    local sets = data.mnist()
    if opts.train then sets.train = data.subset(sets.train, 1, math.min(math.tointeger(opts.train), sets.train.n)) end
    local net = nn.sequential{
      nn.conv2d(1, 32, 5, {activation = "relu", input = {h = 28, w = 28}, seed = 1}),
      nn.maxpool2d(2),
      nn.conv2d(32, 64, 5, {activation = "relu", seed = 2}),
      nn.maxpool2d(2),
      nn.flatten(),
      nn.linear(1024, 128, "relu", {seed = 3}),
      nn.linear(128, 10, nil, {seed = 4}),
    }
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
    -- (a first step on this batch: the loss reads a new label matrix once, to check the labels)
    lossfn:forward(net:forward(x), y); net:backward(lossfn:backward()); opt:step(net)
    vela.sync()
    local w0 = vela.stats().host_waits
    lossfn:forward(net:forward(x), y); net:backward(lossfn:backward()); opt:step(net)
    local waits = vela.stats().host_waits - w0
    vela.sync()
    rows[#rows + 1] = {id, ("%8.0f ex/s (%6.0f per cpu-second)   test %.2f%% after %d epochs   host waits in a step: %d"):format(
      best, best_cpu, 100 * h.test_accuracy[opts.epochs], opts.epochs, waits)}
  end
end

print(("CNN conv32-pool-conv64-pool-128-10, batch %d, %d epochs of MNIST (%s training images), %d cpu threads"):format(
  opts.batch, opts.epochs, opts.train or "7,996", vela.threads()))
for _, r in ipairs(rows) do print(("%-12s %s"):format(r[1], r[2])) end

if opts.torch ~= "no" then
  -- The first python that imports torch (a pyenv shim may hide Debian's python3-torch).
  local py
  for _, cand in ipairs{"python3", "/usr/bin/python3"} do
    if os.execute(cand .. " -c 'import torch' 2>/dev/null") then py = cand break end
  end
  if py then
    local p = io.popen(("%s scripts/bench/cnn_torch.py --epochs %d --batch %d --threads %d 2>&1"):format(py, opts.epochs, opts.batch,
      vela.threads()))
    local last
    for line in p:lines() do last = line end
    p:close()
    print(("%-12s %s"):format("pytorch", last or "no output"))
  else
    print(("%-12s %s"):format("pytorch", "not installed (apt-get install python3-torch to compare)"))
  end
end

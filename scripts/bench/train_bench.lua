-- The common part of scripts/bench/mnist.lua and cnn.lua: options of the
-- form key=value, one row per device (the best epoch's examples per second,
-- wall clock and per second of processor time, the test accuracy, and the
-- host waits of one training step started on an idle device, and the
-- process's peak resident memory so far, VmHWM of /proc/self/status: run one
-- device for its own figure), then the PyTorch twin's last line when a python3
-- can import torch.
--
--   local bench = dofile("scripts/bench/train_bench.lua")
--   local opts = bench.options{epochs = 3, ...}
--   bench.run(opts, {title =, sets = function() end, net = function() end, torch = function(py) end})
local vela = require "vela"
local nn, optim, data = require "vela.nn", require "vela.optim", require "vela.data"

local bench = {}

-- key=value arguments over the defaults (numbers where they read as one);
-- threads=N sets vela's threads.
function bench.options(defaults)
  local opts = {}
  for k, v in pairs(defaults) do opts[k] = v end
  for _, a in ipairs(arg or {}) do
    local k, v = a:match("^%-*([%w_]+)=(.*)$")
    if k then opts[k] = tonumber(v) or v end
  end
  if opts.threads then vela.threads(opts.threads) end
  return opts
end

-- The process's peak resident set in MB (VmHWM), or nil where /proc has none.
function bench.peak_mb()
  local f = io.open("/proc/self/status")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  local kb = s:match("VmHWM:%s*(%d+)%s*kB")
  return kb and tonumber(kb) / 1024
end

-- One device's row: nn.fit for opts.epochs (SGD lr 0.05, momentum 0.9), then
-- the host waits of one step. The step runs once first on its batch, so the
-- loss's one-time check of a new label matrix is not counted as a wait.
local function device_row(opts, spec)
  local sets, net = spec.sets(), spec.net()
  local h = nn.fit(net, sets.train, {epochs = opts.epochs, batch = opts.batch, test = sets.test, progress = false,
                                    optimizer = optim.sgd{lr = 0.05, momentum = 0.9}})
  local best, best_cpu = 0, 0
  for e, r in ipairs(h.examples_per_s) do
    best = math.max(best, r)
    best_cpu = math.max(best_cpu, sets.train.n / h.cpu_seconds[e])
  end
  local lossfn, opt = nn.softmax_xent(), net.optimizer
  local x, y = data.loader(sets.train, opts.batch, {seed = 9}):epoch(1)()
  local function step() lossfn:forward(net:forward(x), y); net:backward(lossfn:backward()); opt:step(net) end
  step()
  vela.sync()
  local w0 = vela.stats().host_waits
  step()
  local waits = vela.stats().host_waits - w0
  vela.sync()
  local peak = bench.peak_mb()
  return ("%8.0f ex/s (%6.0f per cpu-second)   test %.2f%% after %d epochs   host waits in a step: %d   peak %s MB"):format(
    best, best_cpu, 100 * h.test_accuracy[opts.epochs], opts.epochs, waits, peak and ("%.0f"):format(peak) or "?")
end

-- spec.title: the first line; spec.sets(), spec.net(): the data and a fresh
-- network (made on the current device); spec.torch(py): the twin's command.
function bench.run(opts, spec)
  local rows = {}
  for id in tostring(opts.devices):gmatch("[^,]+") do
    rows[#rows + 1] = {id, pcall(vela.device, id) and device_row(opts, spec) or "not available"}
  end
  print(spec.title)
  print("cpu BLAS core: " .. require("vela").device("cpu"):info().limits["blas core"])
  for _, r in ipairs(rows) do print(("%-12s %s"):format(r[1], r[2])) end
  if opts.torch == "no" then return end
  -- The first python that imports torch (a pyenv shim may hide Debian's python3-torch).
  local py
  for _, cand in ipairs{"python3", "/usr/bin/python3"} do
    if os.execute(cand .. " -c 'import torch' 2>/dev/null") then py = cand break end
  end
  if not py then
    print(("%-12s %s"):format("pytorch", "not installed (apt-get install python3-torch to compare)"))
    return
  end
  local p = io.popen(spec.torch(py) .. " 2>&1")
  local last
  for line in p:lines() do last = line end
  p:close()
  print(("%-12s %s"):format("pytorch", last or "no output"))
end

return bench

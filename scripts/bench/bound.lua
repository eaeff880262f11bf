-- Training on the cpu against its bounds, in one command (issue 29 item 2):
--   the MLP (784-256-10, batch 128) against its GEMM-only bound: the same
--   products one training step makes (forward W·x per layer; backward δ·xᵀ,
--   and Wᵀ·δ but for the first layer), timed alone with vela's threads, as
--   examples per second; the fraction is the training rate over it;
--   the CNN of examples/cnn.lua against the FMA peak: its multiply-adds per
--   example (convolutions and linear layers, forward and backward) times the
--   training rate, over the float32 FMA peak this process measures
--   (native.fma_peak: independent FMA chains on every thread, in the widest
--   vectors the CPU offers).
-- Rates are the best epoch of `epochs` (the first included: warm-up), wall
-- clock; the per-cpu-second figures beside them are steadier on a shared
-- machine. The MLP's bound is timed after every epoch, so each epoch has its
-- own fraction from figures taken seconds apart (a shared machine's load
-- changes over minutes); the fraction printed is the median of the epochs'
-- after the first (the first alone when epochs = 1), with their range. The CNN's
-- fraction is its best epoch over the peak measured at the start.
--
--   build/vela scripts/bench/bound.lua [net=mlp|cnn|both] [epochs=3] [set=mnist|fashion] [threads=N] [batch=128]
local vela = require "vela"
local nn, optim, data = require "vela.nn", require "vela.optim", require "vela.data"
local native = require "vela.bench_native"
local bench = dofile("scripts/bench/train_bench.lua")

local opts = bench.options{net = "both", epochs = 3, set = "mnist", batch = 128}
for k in pairs(opts) do
  if not ({net = 1, epochs = 1, set = 1, batch = 1, threads = 1})[k] then
    error(("bound.lua: unknown option '%s' (net, epochs, set, threads, batch)"):format(k))
  end
end
local B = math.tointeger(opts.batch) or error("bound.lua: batch must be an integer")
vela.device("cpu")  -- the current device (a GPU machine starts on its GPU)

local function fmt_int(x)  -- 230502 -> 230,502
  local s = ("%.0f"):format(x)
  return (s:reverse():gsub("(%d%d%d)", "%1,"):reverse():gsub("^,", ""))
end

-- Best epoch's examples per second, wall and per processor second.
local function train_rate(net, sets)
  local h = nn.fit(net, sets.train, {epochs = opts.epochs, batch = B, progress = false,
                                    optimizer = optim.sgd{lr = 0.05, momentum = 0.9}})
  local best, best_cpu = 0, 0
  for e, r in ipairs(h.examples_per_s) do
    best, best_cpu = math.max(best, r), math.max(best_cpu, sets.train.n / h.cpu_seconds[e])
  end
  return best, best_cpu
end

-- Median seconds (wall, processor) of f over 5 timings of enough calls for ~0.2 s each.
local function time_of(f)
  f()
  local t0 = native.now()
  f()
  local reps = math.max(1, math.floor(0.2 / math.max(native.now() - t0, 1e-6)))
  local walls, cpus = {}, {}
  for i = 1, 5 do
    local w, c = native.now(), os.clock()
    for _ = 1, reps do f() end
    walls[i], cpus[i] = (native.now() - w) / reps, (os.clock() - c) / reps
  end
  table.sort(walls); table.sort(cpus)
  return walls[3], cpus[3]
end

-- The products of one training step of a net of nn.linear layers, alone.
local function gemm_step(net)
  local calls = {}
  for i, l in ipairs(net.layers) do
    local n_in, n_out = l.inputs, l.outputs
    local W, x, a = vela.rand(n_out, n_in), vela.rand(n_in, B), vela.zeros(n_out, B)
    local delta, dW, dx = vela.rand(n_out, B), vela.zeros(n_out, n_in), vela.zeros(n_in, B)
    local xt, Wt = x:t(), W:t()
    calls[#calls + 1] = function() vela.mm(1, W, x, 0, a) end          -- forward (dense's product)
    calls[#calls + 1] = function() vela.mm(1, delta, xt, 0, dW) end    -- dW = δ·xᵀ
    if i > 1 then calls[#calls + 1] = function() vela.mm(1, Wt, delta, 0, dx) end end  -- dx = Wᵀ·δ
  end
  return function() for _, c in ipairs(calls) do c() end end
end

-- Multiply-adds per example of one training step (forward, dW, dx but for the first layer).
local function macs_per_example(net)
  local total = 0
  for i, l in ipairs(net.layers) do
    local per
    if getmetatable(l) == nn.Linear then per = l.inputs * l.outputs
    elseif getmetatable(l) == nn.Conv2d then per = l.outputs * l.channels_in * l.kh * l.kw end
    if per then total = total + per * (i > 1 and 3 or 2) end
  end
  return total
end

local info = vela.device("cpu"):info()
local peak, isa, peak_cpu = native.fma_peak()
local loadavg = io.open("/proc/loadavg")
print(("cpu: %s; BLAS core %s; %d threads; FMA peak %.1f GFLOP/s, %.1f per cpu-second (%s, measured; load average %s)"):format(
  info.name, info.limits["blas core"], vela.threads(), peak, peak_cpu, isa, loadavg and loadavg:read("l"):match("^(%S+)") or "?"))
if loadavg then loadavg:close() end
if isa == "AVX-512 FMA" then  -- issue 29 holds the software Vulkan drivers to the 256-bit peak
  local p256, _, p256_cpu = native.fma_peak(nil, nil, 256)
  print(("256-bit FMA peak (AVX2 FMA, for the software Vulkan drivers' mm): %.1f GFLOP/s, %.1f per cpu-second"):format(
    p256, p256_cpu))
end

if opts.net == "mlp" or opts.net == "both" then
  local sets = opts.set == "fashion" and data.fashion_mnist() or data.mnist()
  local net = nn.sequential{nn.linear(784, 256, "relu", {seed = 1}), nn.linear(256, 10, nil, {seed = 2})}
  local opt, gemm = optim.sgd{lr = 0.05, momentum = 0.9}, gemm_step(net)
  local rate, rate_cpu, bound, bound_cpu, fr, fr_cpu = 0, 0, 0, 0, {}, {}
  for e = 1, opts.epochs do
    -- epoch e alone (start = e: the same shuffle as one call of all epochs), then the bound
    local h = nn.fit(net, sets.train, {epochs = e, start = e, batch = B, progress = false, optimizer = opt})
    local r, rc = h.examples_per_s[e], sets.train.n / h.cpu_seconds[e]
    local wall, proc = time_of(gemm)
    rate, rate_cpu, bound, bound_cpu = math.max(rate, r), math.max(rate_cpu, rc), math.max(bound, B / wall),
      math.max(bound_cpu, B / proc)
    if e > 1 or opts.epochs == 1 then fr[#fr + 1], fr_cpu[#fr_cpu + 1] = r * wall / B, rc * proc / B end
  end
  local function median(t)
    table.sort(t)
    local n = #t
    return n % 2 == 1 and t[(n + 1) // 2] or (t[n // 2] + t[n // 2 + 1]) / 2, t[1], t[n]
  end
  local f, f_lo, f_hi = median(fr)
  local fc, fc_lo, fc_hi = median(fr_cpu)
  print(("MLP 784-256-10, batch %d, %s: %s ex/s (%s per cpu-second); GEMM-only bound %s ex/s (%s per cpu-second): %.2f of the bound (%.2f per cpu-second; median of %d epochs' fractions, %.2f–%.2f and %.2f–%.2f)"):format(
    B, opts.set, fmt_int(rate), fmt_int(rate_cpu), fmt_int(bound), fmt_int(bound_cpu), f, fc, #fr, f_lo, f_hi, fc_lo, fc_hi))
end

if opts.net == "cnn" or opts.net == "both" then
  local sets = data.mnist()
  local net = nn.sequential{
    nn.conv2d(1, 32, 5, {activation = "relu", input = {h = 28, w = 28}, seed = 1}), nn.maxpool2d(2),
    nn.conv2d(32, 64, 5, {activation = "relu", seed = 2}), nn.maxpool2d(2), nn.flatten(),
    nn.linear(1024, 128, "relu", {seed = 3}), nn.linear(128, 10, nil, {seed = 4})}
  local rate, rate_cpu = train_rate(net, sets)
  local flops = 2 * macs_per_example(net)
  print(("CNN of examples/cnn.lua, batch %d: %s ex/s (%s per cpu-second) × %.1f MFLOP/example = %.1f GFLOP/s: %.2f of the FMA peak (%.2f per cpu-second)"):format(
    B, fmt_int(rate), fmt_int(rate_cpu), flops / 1e6, rate * flops / 1e9, rate * flops / 1e9 / peak,
    rate_cpu * flops / 1e9 / peak_cpu))
end

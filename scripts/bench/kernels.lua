-- Kernel throughput on every usable device, beside the same operations through
-- OpenBLAS called directly from C (the module vela.bench_native) in the same run:
--   mm GFLOP/s at n = 256, 512, 1024, 2048 and at the MNIST shape 256×784 · 784×128,
--   GB/s of axpy and tanh over 16M elements (bytes the kernel must move),
--   µs per call of a one-element axpy made from Lua.
-- Every figure is the median of --reps runs, each ending with the device synchronised.
--
--   build/vela scripts/bench/kernels.lua [--reps N] [--sizes 256,512,...] [--elems N]
--                                        [--calls N] [--devices cpu,vulkan:0] [--threads N] [--quick]
local vela = require "vela"
local native = require "vela.bench_native"

local opts = {reps = 5, sizes = {256, 512, 1024, 2048}, elems = 16 * 1024 * 1024, calls = 200000}
local i = 1
while i <= #arg do
  local a, v = arg[i], arg[i + 1]
  local function list(s)
    local t = {}
    for w in s:gmatch("[^,]+") do t[#t + 1] = tonumber(w) or w end
    return t
  end
  if a == "--reps" then opts.reps = assert(tonumber(v), "--reps needs a number"); i = i + 1
  elseif a == "--sizes" then opts.sizes = list(assert(v, "--sizes needs a list")); i = i + 1
  elseif a == "--elems" then opts.elems = assert(tonumber(v), "--elems needs a number"); i = i + 1
  elseif a == "--calls" then opts.calls = assert(tonumber(v), "--calls needs a number"); i = i + 1
  elseif a == "--devices" then opts.devices = list(assert(v, "--devices needs a list")); i = i + 1
  elseif a == "--threads" then vela.threads((assert(tonumber(v), "--threads needs a number"))); i = i + 1
  elseif a == "--quick" then opts.reps, opts.sizes, opts.elems, opts.calls = 3, {256, 512}, 1 << 20, 20000
  else error("kernels.lua: unknown option '" .. a .. "' (see the header of the script)") end
  i = i + 1
end

local devices = opts.devices or native.devices()

-- Median seconds of fn() with the device synchronised after each run (after a warm-up).
local function median(dev, fn)
  local b = vela.bench(fn, {n = opts.reps, warmup = 1})
  return b.median
end

local rows = {}  -- {label, unit, per-device values..., direct value}
local function row(label, unit, per_device, direct)
  local r = {label = label, unit = unit, values = {}}
  for k, dev in ipairs(devices) do
    local ok, v = pcall(per_device, dev)
    r.values[k] = ok and v or ("error: " .. tostring(v))
  end
  r.direct = direct()
  rows[#rows + 1] = r
  io.stderr:write(".")
end

local function mm_row(m, n, k)
  local flop = 2 * m * n * k
  row(string.format("mm %d×%d · %d×%d", m, k, k, n), "GFLOP/s", function(dev)
    local a, b, c = vela.rand(m, k, 1, dev), vela.rand(k, n, 2, dev), vela.zeros(m, n, dev)
    local t = median(dev, function() vela.mm(a, b, c) end)
    a:release(); b:release(); c:release()
    return flop / t / 1e9
  end, function() return flop / native.sgemm(m, n, k, opts.reps) / 1e9 end)
end

for _, n in ipairs(opts.sizes) do mm_row(n, n, n) end
mm_row(256, 128, 784)

local N = opts.elems
row(string.format("axpy %s elements", N >= 1 << 20 and (N >> 20) .. "M" or N), "GB/s", function(dev)
  local x, y = vela.rand(N, 1, 3, dev), vela.rand(N, 1, 4, dev)
  local t = median(dev, function() vela.axpy(0.5, x, y) end)
  x:release(); y:release()
  return 12 * N / t / 1e9  -- read x, read y, write y
end, function() return 12 * N / native.saxpy(N, opts.reps) / 1e9 end)

row(string.format("tanh %s elements", N >= 1 << 20 and (N >> 20) .. "M" or N), "GB/s", function(dev)
  local x, y = vela.rand(N, 1, 5, dev), vela.zeros(N, 1, dev)
  local t = median(dev, function() vela.tanh(x, y) end)
  x:release(); y:release()
  return 8 * N / t / 1e9  -- read x, write y
end, function() return 8 * N / native.tanh(N, opts.reps) / 1e9 end)

local calls = opts.calls
row("axpy of 1 element, per call", "µs", function(dev)
  local x, y = vela.rand(1, 1, 6, dev), vela.zeros(1, 1, dev)
  local axpy = vela.axpy
  local t = median(dev, function()
    for _ = 1, calls do axpy(1e-9, x, y) end
  end)
  return t / calls * 1e6
end, function() return native.axpy1(calls, opts.reps) * 1e6 end)
io.stderr:write("\n")

-- The table: one column per device, then the direct call.
local header = {"kernel", "unit"}
for _, d in ipairs(devices) do header[#header + 1] = d end
header[#header + 1] = "OpenBLAS/C direct"
local lines = {header}
for _, r in ipairs(rows) do
  local l = {r.label, r.unit}
  local fmt = r.unit == "µs" and "%.3f" or "%.1f"
  for k = 1, #devices do
    local v = r.values[k]
    l[#l + 1] = type(v) == "number" and string.format(fmt, v) or v
  end
  l[#l + 1] = string.format(fmt, r.direct)
  lines[#lines + 1] = l
end
local width = {}
for _, l in ipairs(lines) do
  for c, s in ipairs(l) do width[c] = math.max(width[c] or 0, utf8.len(s) or #s) end
end
print(string.format("vela kernels, %d cpu threads, median of %d runs", vela.threads(), opts.reps))
print("cpu BLAS core: " .. vela.device("cpu"):info().limits["blas core"])
for n, l in ipairs(lines) do
  local out = {}
  for c, s in ipairs(l) do
    local pad = string.rep(" ", width[c] - (utf8.len(s) or #s))
    out[c] = c <= 2 and s .. pad or pad .. s
  end
  print(table.concat(out, "  "))
  if n == 1 then
    local rule = {}
    for c = 1, #l do rule[c] = string.rep("-", width[c]) end
    print(table.concat(rule, "  "))
  end
end

-- Kernels written at the prompt against the built-in ones, on every usable device:
--   map("tanh(x)") against the built-in tanh at 16M elements (--reps interleaved runs,
--   the device synchronised after each; the ratio is built-in time / map time),
--   and the time of map(...) for a small kernel: the first of a fresh process
--   (at once and after 0.3 s: glslang starts on a background thread with vela),
--   a new one later in a process, a hit of the in-memory cache, and a hit of
--   the on-disk cache in a second process.
--
--   build/vela scripts/bench/user_kernels.lua [--reps N] [--elems N] [--devices cpu,vulkan:0]
local vela = require "vela"
local native = require "vela.bench_native"

local opts = {reps = 5, elems = 16 * 1024 * 1024}
local i = 1
while i <= #arg do
  local a, v = arg[i], arg[i + 1]
  if a == "--reps" then opts.reps = assert(tonumber(v), "--reps needs a number"); i = i + 1
  elseif a == "--elems" then opts.elems = assert(tonumber(v), "--elems needs a number"); i = i + 1
  elseif a == "--devices" then
    opts.devices = {}
    for w in assert(v, "--devices needs a list"):gmatch("[^,]+") do opts.devices[#opts.devices + 1] = w end
    i = i + 1
  else error("user_kernels.lua: unknown option '" .. a .. "' (see the header of the script)") end
  i = i + 1
end

-- Compile times. A fresh process per sample: the first kernel of a process
-- pays glslang's one-time start-up (its built-in function tables), which vela
-- begins on a background thread when it starts; "at once" defines the kernel
-- as the script's first line, "after 0.3 s" as a session does after loading
-- data or at the prompt. The time is the whole map() call, wall clock.
local stamp = tostring(os.time()) .. tostring(math.random(1 << 30))
local function fresh(k) return ("tanh(x) * %s.%d + 1.0"):format(stamp, k) end
local function median(ts)
  table.sort(ts)
  return ts[(#ts + 1) // 2]
end
local function child(code)
  local p = assert(io.popen(("%q -e %q 2>&1"):format(arg[-1], code)))
  local out = p:read("a")
  p:close()
  return out
end
local probe = 'local now = require("vela.bench_native").now; %s local t = now(); local f = map(%q); '
  .. 'local ms = (now() - t) * 1e3; io.write(kernel_info(f).compiled, " ", ms)'
local procs = 5
local at_once, later, from = {}, {}, {}
for k = 1, procs do
  local out = child(probe:format("", fresh(100 + k)))
  from[#from + 1] = out:match("^(%S+)")
  at_once[#at_once + 1] = tonumber(out:match("^%S+ (%S+)")) or 0 / 0
  out = child(probe:format("os.execute('sleep 0.3')", fresh(200 + k)))
  later[#later + 1] = tonumber(out:match("^%S+ (%S+)")) or 0 / 0
end
local t0 = native.now()
vela.map(fresh(1))
local warm = {}  -- glslang ready: the compile itself
for k = 2, 6 do
  t0 = native.now()
  vela.map(fresh(k))
  warm[#warm + 1] = (native.now() - t0) * 1e3
end
local cached = {}
for _ = 1, 5 do
  t0 = native.now()
  vela.map(fresh(2))
  cached[#cached + 1] = (native.now() - t0) * 1e3
end
local disk = child(probe:format("", fresh(3)))
print("time of map(...) for a small kernel, compiled in-process by libshaderc (wall clock):")
print(("  first kernel of a fresh process, at once     %8.2f ms  (median of %d processes: %s)"):format(
  median(at_once), procs, table.concat(from, ",")))
print(("  first kernel of a fresh process, after 0.3 s %8.2f ms  (median of %d processes)"):format(median(later), procs))
print(("  a new kernel later in a process              %8.2f ms  (median of 5)"):format(median(warm)))
print(("  in-memory cache hit                          %8.4f ms  (median of 5)"):format(median(cached)))
print(("  on-disk cache hit in a second process        %8.4f ms  (%s)"):format(
  tonumber(disk:match("^%S+ (%S+)")) or 0 / 0, disk:match("^(%S+)") or disk))

local mtanh = vela.map("tanh(x)", {name = "map_tanh"})
-- Interleaved runs (built-in, map, built-in, ...), each ending with the device
-- synchronised, so both see the same machine load; median and best of each.
local function stats(ts)
  table.sort(ts)
  return ts[(#ts + 1) // 2], ts[1]
end
print(("\nmap(\"tanh(x)\") against the built-in tanh, %d elements, %d interleaved runs each:"):format(opts.elems, opts.reps))
print(("  %-10s %14s %14s %14s %14s"):format("device", "tanh median", "map median", "ratio (median)", "ratio (best)"))
for _, id in ipairs(opts.devices or native.devices()) do
  local dev = vela.device(id)
  local x = vela.rand(opts.elems, 1)
  local y = vela.zeros(opts.elems, 1)
  vela.tanh(x, y); mtanh(x, y); vela.sync()  -- warm-up: pipelines made, memory touched
  local bt, mt = {}, {}
  for _ = 1, opts.reps do
    local t0 = native.now(); vela.tanh(x, y); vela.sync(); bt[#bt + 1] = native.now() - t0
    t0 = native.now(); mtanh(x, y); vela.sync(); mt[#mt + 1] = native.now() - t0
  end
  local bm, bb = stats(bt)
  local mm, mb = stats(mt)
  print(("  %-10s %11.1f ms %11.1f ms %13.0f%% %13.0f%%"):format(id, bm * 1e3, mm * 1e3, 100 * bm / mm, 100 * bb / mb))
  x:release()
  y:release()
  vela.device(dev)
end

-- Kernels written at the prompt against the built-in ones, on every usable device:
--   map("tanh(x)") against the built-in tanh at 16M elements (--reps interleaved runs,
--   the device synchronised after each; the ratio is built-in time / map time),
--   and the time to get a small kernel's SPIR-V: the first compile of the process
--   (glslang's one-time start-up included), a cold compile after it, a hit of
--   the in-memory cache, and a hit of the on-disk cache in a second process.
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

-- Compile times first, before anything has started glslang in this process.
local stamp = tostring(os.time()) .. tostring(math.random(1 << 30))
local function fresh(k) return ("tanh(x) * %s.%d + 1.0"):format(stamp, k) end
local first = vela.kernel_info(vela.map(fresh(1))).compile_ms
local cold = {}
for k = 2, 6 do cold[#cold + 1] = vela.kernel_info(vela.map(fresh(k))).compile_ms end
table.sort(cold)
local cached = {}
for _ = 1, 5 do cached[#cached + 1] = vela.kernel_info(vela.map(fresh(2))).compile_ms end
table.sort(cached)
local p = assert(io.popen(("%q -e %q 2>&1"):format(arg[-1],
  ("local i = kernel_info(map(%q)); io.write(i.compiled, ' ', i.compile_ms)"):format(fresh(3)))))
local disk = p:read("a")
p:close()
print("compile time of a small map kernel (libshaderc in-process):")
print(("  first compile of the process  %8.2f ms  (glslang's start-up included)"):format(first))
print(("  cold compile (median of 5)    %8.2f ms"):format(cold[3]))
print(("  in-memory cache (median of 5) %8.4f ms"):format(cached[3]))
print(("  on-disk cache, second process %8s ms  (%s)"):format(disk:match("%S+ (%S+)") or "?", disk:match("^(%S+)") or disk))

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

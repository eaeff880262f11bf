-- Elementwise kernels over 16M floats on the cpu beside NumPy and PyTorch, in
-- one command: add (c ← a + b), relu, tanh, exp, sigmoid and gelu (tanh form),
-- x in [-4, 4). vela on 1 and 2 threads (vela.threads), then the peers from
-- scripts/bench/elementwise_peers.py (NumPy on its one thread, PyTorch 1.13 on
-- 1 and 2), interleaved over --rounds rounds. Each figure is GB moved (bytes
-- read and written: 12 per element for add, 8 for the others) per second of
-- wall clock and per second of processor time (os.clock / process_time: every
-- thread of the process), the median over rounds of each round's figure: by
-- the wall clock the median of --reps calls; per processor second, calls back
-- to back for --burst seconds (0.25) after them, over the processor time of
-- the whole burst. (Linux adds the time of a thread that is running on
-- another core to the process's clock only at a scheduler tick or when it
-- stops, so one call of a few milliseconds on 2 threads often saw only the
-- calling thread's time: per call, PyTorch's relu on 2 threads read 65-80 GB
-- per cpu-second where its 1-thread rate was 37-42.) Two ratios: per cpu-second, vela on 1 thread over the best peer
-- on any thread count; on 2 threads (wall), vela on 2 over the best peer on at
-- most 2. It prints first the loops' instruction-set path (VELA_CPU_ISA
-- forces one: docs/cpu.md), the BLAS core, the CPU and the load average.
--
--   build/vela scripts/bench/elementwise.lua [--rounds 3] [--reps 7] [--burst 0.25] [--kernels add,tanh] [--no-peers]
local vela = require "vela"
local N = 16 * 1024 * 1024
local rounds, reps, burst, peers = 3, 7, 0.25, true
local kernels = {"add", "relu", "tanh", "exp", "sigmoid", "gelu"}
local i = 1
while i <= #arg do
  local a = arg[i]
  if a == "--rounds" then rounds = assert(math.tointeger(tonumber(arg[i + 1])), "--rounds needs a count"); i = i + 1
  elseif a == "--reps" then reps = assert(math.tointeger(tonumber(arg[i + 1])), "--reps needs a count"); i = i + 1
  elseif a == "--burst" then burst = assert(tonumber(arg[i + 1]), "--burst needs seconds"); i = i + 1
  elseif a == "--kernels" then
    kernels = {}
    for k in assert(arg[i + 1], "--kernels needs a list"):gmatch("[^,]+") do kernels[#kernels + 1] = k end
    i = i + 1
  elseif a == "--no-peers" then peers = false
  else error("elementwise.lua: unknown argument " .. a .. " (--rounds n, --reps n, --burst s, --kernels a,b, --no-peers)") end
  i = i + 1
end

local function first_line(cmd_or_file, pattern)
  local f = io.open(cmd_or_file)
  if not f then return "?" end
  for line in f:lines() do
    local m = line:match(pattern)
    if m then f:close() return m end
  end
  f:close()
  return "?"
end
local limits = vela.device("cpu"):info().limits
print("loops: " .. (limits.loops or "(not reported by this build)"))
print("blas core: " .. limits["blas core"])
print("cpu: " .. first_line("/proc/cpuinfo", "^model name%s*:%s*(.*)") .. ", " .. limits.threads .. " cores")

local x, b, y = vela.rand(N, 1, 5, "cpu"), vela.rand(N, 1, 6, "cpu"), vela.zeros(N, 1, "cpu")
vela.scal(8, x)
x:add(-4)  -- uniform in [-4, 4)
local run = {
  add = function() vela.add(x, b, y) end,
  relu = function() vela.relu(x, y) end,
}
for _, f in ipairs{"tanh", "exp", "sigmoid", "gelu"} do run[f] = function() vela[f](x, y) end end
for _, k in ipairs(kernels) do assert(run[k], "elementwise.lua: no kernel " .. k) end
local function bytes(k) return (k == "add" and 12 or 8) * N end

local function median(v)
  local s = {table.unpack(v)}
  table.sort(s)
  return s[(#s + 1) // 2]
end

-- figures[config][kernel] = {wall = {per round}, cpu = {per round}}
local figures, order = {}, {}
local function record(config, k, wall, cpu)
  if not figures[config] then figures[config] = {}; order[#order + 1] = config end
  local f = figures[config][k] or {wall = {}, cpu = {}}
  figures[config][k] = f
  table.insert(f.wall, wall)
  table.insert(f.cpu, cpu)
end

local function vela_round(threads)
  vela.threads(threads)
  for _, k in ipairs(kernels) do
    local f = run[k]
    f()
    local walls = {}
    for r = 1, reps do
      local w = vela.clock()
      f()
      walls[r] = vela.clock() - w
    end
    -- The burst starts and ends with every thread at work, so what the
    -- process's clock has not yet added at either end is about the same.
    local calls, w0, c0 = 0, vela.clock(), os.clock()
    repeat
      f()
      calls = calls + 1
    until vela.clock() - w0 >= burst
    local cpu = os.clock() - c0
    record("vela " .. threads, k, bytes(k) / median(walls) / 1e9, bytes(k) * calls / math.max(cpu, 1e-9) / 1e9)
  end
end

local function peers_round()
  local cmd = "/usr/bin/python3 scripts/bench/elementwise_peers.py --reps " .. reps .. " --burst " .. burst .. " --kernels " ..
              table.concat(kernels, ",") .. " 2>&1"
  local p = assert(io.popen(cmd))
  local text = p:read("a")
  local ok = p:close()
  if not ok then
    print("peers failed (skipped): " .. text:gsub("\n+$", ""))
    peers = false
    return
  end
  for peer, threads, k, w, c in text:gmatch("(%a+) (%d+) (%a+) ([%d.]+) ([%d.]+)") do
    record((peer == "numpy" and "NumPy " or "torch ") .. threads, k, tonumber(w), tonumber(c))
  end
end

local load0 = first_line("/proc/loadavg", "^(%S+ %S+ %S+)")
local threads0 = vela.threads()
for _ = 1, rounds do
  vela_round(1)
  vela_round(2)
  if peers then peers_round() end
end
vela.threads(threads0)
print(string.format("load average %s before, %s after; %d rounds of %d calls, 16M floats",
                    load0, first_line("/proc/loadavg", "^(%S+ %S+ %S+)"), rounds, reps))

local function best_peer(k, what, max_threads)
  local best, who = 0, "-"
  for _, config in ipairs(order) do
    local t = tonumber(config:match("%d+$"))
    if not config:match("^vela") and t <= max_threads and figures[config][k] then
      local v = median(figures[config][k][what])
      if v > best then best, who = v, config end
    end
  end
  return best, who
end

for _, what in ipairs{"cpu", "wall"} do
  print()
  print(what == "cpu" and "GB per cpu-second (bytes read + written per second of processor time)"
                      or "GB/s by the wall clock")
  local head = string.format("%-8s", "kernel")
  for _, config in ipairs(order) do head = head .. string.format(" %9s", config) end
  print(head .. (what == "cpu" and "  vela 1 / best peer" or "  vela 2 / best peer ≤ 2 threads"))
  for _, k in ipairs(kernels) do
    local line = string.format("%-8s", k)
    for _, config in ipairs(order) do line = line .. string.format(" %9.2f", median(figures[config][k][what])) end
    if peers then
      local mine = median(figures[what == "cpu" and "vela 1" or "vela 2"][k][what])
      local best, who = best_peer(k, what, what == "cpu" and math.huge or 2)
      line = line .. string.format("  %.2f (%s)", mine / best, who)
    end
    print(line)
  end
end

-- A kernel that the cpu's pool cuts across its threads, called after an idle
-- gap of the calling thread (a busy wait in Lua, so the gap is exact), on 1
-- and 2 threads: medians of --calls calls per gap, wall µs. The pool's worker
-- spins 50 µs after its last job, then sleeps (src/cpu/pool.cpp); after a
-- longer gap the caller wakes it, and what that costs is the host's: on this
-- project's 2-vCPU VMs the waking system call alone took the caller 6 µs
-- after a 100 µs gap and 32 µs after 1 ms (the other vCPU had halted).
--
--   build/vela scripts/bench/wake_gap.lua [--n 262144] [--calls 300]
local vela = require "vela"
local native = require "vela.bench_native"
local n, calls = 262144, 300
local i = 1
while i <= #arg do
  local a = arg[i]
  if a == "--n" then n = assert(math.tointeger(tonumber(arg[i + 1])), "--n needs a count"); i = i + 1
  elseif a == "--calls" then calls = assert(math.tointeger(tonumber(arg[i + 1])), "--calls needs a count"); i = i + 1
  else error("wake_gap.lua: unknown argument " .. a .. " (--n floats, --calls n)") end
  i = i + 1
end
vela.device("cpu")
local now = native.now
local x, b, y = vela.rand(n, 1, 1), vela.rand(n, 1, 2), vela.zeros(n, 1)
local gaps = {0, 20e-6, 60e-6, 200e-6, 1e-3}
local function median(v)
  table.sort(v)
  return v[(#v + 1) // 2]
end
print(("add of %d floats (%.1f MB read and written) after an idle gap, wall µs, medians of %d calls"):format(
  n, 12 * n / 1e6, calls))
print(("%-10s %10s %10s"):format("gap µs", "1 thread", "2 threads"))
local threads0 = vela.threads()
local rows = {}
for _, t in ipairs{1, 2} do
  vela.threads(t)
  vela.add(x, b, y)
  for gi, gap in ipairs(gaps) do
    local q = {}
    for c = 1, calls do
      local g0 = now()
      while now() - g0 < gap do end
      local t0 = now()
      vela.add(x, b, y)
      q[c] = now() - t0
    end
    rows[gi] = rows[gi] or {}
    rows[gi][t] = median(q) * 1e6
  end
end
vela.threads(threads0)
for gi, gap in ipairs(gaps) do
  print(("%-10.0f %10.1f %10.1f"):format(gap * 1e6, rows[gi][1], rows[gi][2]))
end

-- The first mm on a device in a new process, step by step: opening the
-- device, the first ones (its pipeline), zeros, making the mm pipeline, the
-- first value read back (where lavapipe compiles mm with LLVM), a second mm.
-- Each step's wall time and processor time (os.clock: every thread of the
-- process), so a shared machine's load shows as the gap between the two.
-- scripts/bench/first_use.sh runs it with empty and warm caches.
--
--   build/vela scripts/bench/first_use.lua [vulkan:0]
local vela = require "vela"
local id = arg[1] or "vulkan:0"
local t, c0 = vela.clock(), os.clock()
local total_w, total_c = 0, 0
local function lap(what)
  local n, cn = vela.clock(), os.clock()
  print(string.format("  %-10s %7.3f s wall %7.3f s cpu", what, n - t, cn - c0))
  total_w, total_c = total_w + (n - t), total_c + (cn - c0)
  t, c0 = n, cn
end
local d = vela.device(id) lap("device")
local a = vela.ones(64, 64, d) lap("ones")
local c = vela.zeros(64, 64, d) lap("zeros")
vela.mm(1, a, a, 0, c) lap("mm")
local v = c:get(1, 1) lap("get")
assert(v == 64, "mm gave " .. tostring(v))
local w, cp = total_w, total_c
vela.mm(1, a, a, 0, c) v = c:get(1, 1) lap("mm again")
print(string.format("%s first mm: %.3f s wall, %.3f s cpu", id, w, cp))

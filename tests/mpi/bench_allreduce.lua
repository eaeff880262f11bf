-- The figures of docs/results.md's vela.dist section (not a test):
--   mpirun --oversubscribe -np 2 build/vela tests/mpi/bench_allreduce.lua [device]
-- the median time of dist.allreduce (staging included) for 4 KiB .. 4 MiB on the
-- device (default cpu), and the time per MiB at the largest size. Rank 0 prints.
local vela = require "vela"
local dist = require "vela.dist"
dist.quiet()
local dev = arg[1] or "cpu"
print(("dist.allreduce on %s, %d ranks (median of 15, after 3 warm-ups)"):format(dev, dist.size()))
print(("%10s %12s %12s"):format("bytes", "median ms", "ms per MiB"))
for _, kib in ipairs{4, 64, 256, 1024, 4096} do
  local n = kib * 256
  local m = vela.ones(n, 1, "float32", dev)
  local times = {}
  for k = 1, 18 do
    dist.barrier()
    local t0 = vela.clock()
    dist.allreduce(m, "mean")
    if k > 3 then times[#times + 1] = vela.clock() - t0 end
  end
  table.sort(times)
  local med = times[(#times + 1) // 2]
  print(("%10d %12.3f %12.3f"):format(n * 4, med * 1e3, med * 1e3 / (kib / 1024)))
end

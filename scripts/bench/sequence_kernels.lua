-- The sequence kernels on one device: layer norm forward + backward (the
-- pair, one token per column) and the strided batched product of attention
-- (heads × batch = 4 × 16 = 64 blocks), each timed over `runs` runs of `reps`
-- calls in this one process; prints the median, min and max per call (wall
-- clock, after a sync; the first call, which builds the pipelines, untimed).
--
--   build/vela scripts/bench/sequence_kernels.lua [device=vulkan:0] [runs=7] [reps=5]
--
-- Pick the Vulkan driver with VK_ICD_FILENAMES (docs/results.md has the
-- commands and the figures).
local vela = require "vela"
local dev = arg[1] or "vulkan:0"
local runs = math.tointeger(tonumber(arg[2] or 7))
local reps = math.tointeger(tonumber(arg[3] or 5))
vela.device(dev)

local function median(t)
  table.sort(t)
  local n = #t
  return n % 2 == 1 and t[(n + 1) // 2] or (t[n // 2] + t[n // 2 + 1]) / 2
end

local function time(name, call)
  call()  -- pipelines built here
  vela.sync()
  local ts = {}
  for r = 1, runs do
    local t0 = vela.clock()
    for _ = 1, reps do call() end
    vela.sync()
    ts[r] = (vela.clock() - t0) * 1000 / reps
  end
  local med = median(ts)
  print(("%-36s %-9s median %9.3f ms  (min %.3f, max %.3f; %d runs of %d)"):format(name, dev, med, ts[1],
    ts[#ts], runs, reps))
end

for _, s in ipairs{{128, 4096}, {768, 8192}} do
  local m, n = s[1], s[2]
  local x, dy = vela.rand(m, n, 1), vela.rand(m, n, 2)
  local g, b = vela.rand(m, 1, 3), vela.rand(m, 1, 4)
  local mean, rstd, y = vela.zeros(n, 1), vela.zeros(n, 1), vela.zeros(m, n)
  local dg, db, dx = vela.zeros(m, 1), vela.zeros(m, 1), vela.zeros(m, n)
  time(("layernorm fwd+bwd %dx%d"):format(m, n), function()
    vela.layernorm(x, g, b, mean, rstd, y)
    vela.layernorm_backward(dy, x, mean, rstd, g, dg, db, dx)
  end)
end

local count = 4 * 16  -- heads × batch
for _, s in ipairs{{64, 64, 64}, {32, 64, 64}} do
  local m, k, n = s[1], s[2], s[3]
  local a, at, bm = vela.rand(m, k * count, 5), vela.rand(k, m * count, 6), vela.rand(k, n * count, 7)
  local c = vela.zeros(m, n * count)
  time(("bmm %d blocks %dx%d * %dx%d"):format(count, m, k, k, n), function() vela.bmm(1, a, bm, 0, c, count) end)
  time(("bmm %d blocks %dx%dT * %dx%d"):format(count, m, k, k, n),
    function() vela.bmm(1, at, bm, 0, c, count, {ta = true}) end)
end

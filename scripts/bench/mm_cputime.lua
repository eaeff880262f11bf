-- GFLOP/s of one mm shape on one device, from wall time and from the
-- process's CPU time (os.clock, all threads), which a machine shared with
-- other work distorts much less: `calls` products after 3 warm-up calls,
-- then a sync. On lavapipe, LP_NUM_THREADS=1 makes the CPU-time figure
-- steadier still. Run several builds alternately and compare medians
-- (docs/gemm.md, "mm_regblock_i64: 64-bit arithmetic throughout").
--
--   LP_NUM_THREADS=1 build/vela scripts/bench/mm_cputime.lua [shape=sq256] [calls=200] [device=vulkan:0]
--   shapes: sq256, sq512, sq1024 (sq1024ta, sq1024tb: a or b transposed), fwd (256×784 · 784×128), dW (256×128 · (784×128)ᵀ),
--           dx ((10×256)ᵀ · 10×128), out (10×256 · 256×128)
local vela = require "vela"
local opts = {shape = "sq256", calls = 200, device = "vulkan:0"}
for _, a in ipairs(arg) do
  local k, v = a:match("^(%w+)=(.*)$")
  if not k or opts[k] == nil then error("mm_cputime.lua: unknown option '" .. a .. "' (see the header of the script)") end
  opts[k] = tonumber(v) or v
end
-- {rows of c, cols of c, k, a transposed, b transposed}
local shapes = {
  sq256 = {256, 256, 256}, sq512 = {512, 512, 512}, sq1024 = {1024, 1024, 1024},
  sq1024ta = {1024, 1024, 1024, true, false}, sq1024tb = {1024, 1024, 1024, false, true},
  fwd = {256, 128, 784}, dW = {256, 784, 128, false, true},
  dx = {256, 128, 10, true, false}, out = {10, 128, 256},
}
local s = shapes[opts.shape] or error("mm_cputime.lua: unknown shape '" .. tostring(opts.shape) .. "'")
local m, n, k, ta, tb = table.unpack(s)
local dev = opts.device
local a = ta and vela.rand(k, m, 1, dev):t() or vela.rand(m, k, 1, dev)
local b = tb and vela.rand(n, k, 2, dev):t() or vela.rand(k, n, 2, dev)
local c = vela.zeros(m, n, dev)
for _ = 1, 3 do vela.mm(a, b, c) end
vela.sync(dev)
local t0, c0 = vela.clock(), os.clock()
for _ = 1, opts.calls do vela.mm(a, b, c) end
vela.sync(dev)
local flop = 2 * m * n * k * opts.calls
print(string.format("mm %s on %s: %.2f GFLOP/s wall, %.2f GFLOP per cpu-second", opts.shape, dev,
  flop / (vela.clock() - t0) / 1e9, flop / (os.clock() - c0) / 1e9))

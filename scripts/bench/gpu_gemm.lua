-- mm on a GPU: GFLOP/s of square products and the MNIST MLP's three shapes
-- (forward w·x, dW = dz·xᵀ, dx = wᵀ·dz) on one device, each checked against
-- the cpu device's product (OpenBLAS) by the relative Frobenius error. The
-- block of mm_tiled is the one record_gemm chooses, or the one VELA_MM_TILE
-- names (128, 64, 32): scripts/bench/gpu_gemm.sh runs this once per block.
--   build/vela scripts/bench/gpu_gemm.lua [device=vulkan:0] [sizes=1024,2048,4096,8192] [reps=10]
local vela = require "vela"
local opts = require("vela.options").parse(arg, "build/vela scripts/bench/gpu_gemm.lua [options]", {
  {"device", "vulkan:0", "the device to measure"},
  {"sizes", "1024,2048,4096,8192", "square sizes, comma-separated"},
  {"reps", 10, "timed runs per product (the median is printed)"},
})
local dev = vela.device(opts.device)
local cpu = vela.device("cpu")
vela.device(dev)

local shapes = {}
for s in tostring(opts.sizes):gmatch("%d+") do
  local n = tonumber(s)
  shapes[#shapes + 1] = {label = string.format("%d³", n), m = n, n = n, k = n}
end
-- The MLP 784-256-10 at batch 128: w 256×784, x 784×128.
shapes[#shapes + 1] = {label = "mlp w·x", m = 256, n = 128, k = 784}
shapes[#shapes + 1] = {label = "mlp dz·xᵀ", m = 256, n = 784, k = 128, tb = true}
shapes[#shapes + 1] = {label = "mlp wᵀ·dz", m = 784, n = 128, k = 256, ta = true}

local tile = os.getenv("VELA_MM_TILE") or "auto"
print(string.format("%s, mm_tiled block %s, median of %d runs", tostring(dev), tile, opts.reps))
print(string.format("%-12s %10s %12s", "product", "GFLOP/s", "rel. error"))
for _, s in ipairs(shapes) do
  -- Stored operands: a is m×k (k×m when transposed), b is k×n (n×k).
  local a = s.ta and vela.rand(s.k, s.m, 1):t() or vela.rand(s.m, s.k, 1)
  local b = s.tb and vela.rand(s.n, s.k, 2):t() or vela.rand(s.k, s.n, 2)
  local c = vela.zeros(s.m, s.n)
  local r = vela.bench(function() vela.mm(a, b, c) end, {n = opts.reps, warmup = 2})
  local gflops = 2 * s.m * s.n * s.k / r.median / 1e9
  -- The same product on the cpu, from the same stored values.
  local ac = s.ta and a:t():to(cpu):t() or a:to(cpu)
  local bc = s.tb and b:t():to(cpu):t() or b:to(cpu)
  local want = vela.zeros(s.m, s.n, cpu)
  vela.mm(ac, bc, want)
  local got = c:to(cpu)
  local diff = got - want
  local err = math.sqrt(vela.dot(diff, diff) / vela.dot(want, want))
  print(string.format("%-12s %10.1f %12.2e", s.label, gflops, err))
  for _, x in ipairs{a, b, c, ac, bc, want, got, diff} do x:release() end
end

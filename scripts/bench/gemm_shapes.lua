-- GFLOP/s of the products of the MLP benchmarks on the cpu, each with vela's
-- pool at 1 thread and at all threads, interleaved (thread count alternating
-- rep by rep, so a busy machine hurts both alike), medians of --reps runs of
-- enough calls to last about 20 ms each, after 10 ms of warm-up (a resized
-- pool's new worker must first be scheduled). Also the few-rows product stated both
-- ways round (c = a·b with 10 rows, and cᵀ = bᵀ·aᵀ with 10 columns).
--
--   build/vela scripts/bench/gemm_shapes.lua [--reps 15]
local vela = require "vela"
local reps = 15
for i = 1, #arg do if arg[i] == "--reps" then reps = assert(tonumber(arg[i + 1]), "--reps needs a number") end end

-- {label, rows of c, cols of c, k, a transposed, b transposed}
local shapes = {
  {"forward 256×784 · 784×128", 256, 128, 784},
  {"dW 256×128 · (784×128)ᵀ", 256, 784, 128, false, true},
  {"dx (10×256)ᵀ · 10×128", 256, 128, 10, true, false},
  {"forward 10×256 · 256×128", 10, 128, 256},
  {"dW 10×128 · (256×128)ᵀ", 10, 256, 128, false, true},
  {"few rows 10×784 · 784×256", 10, 256, 784},
  {"same, transposed 256×784 · 784×10", 256, 10, 784},
  {"batch 32: 256×784 · 784×32", 256, 32, 784},
  {"batch 32: 256×32 · (784×32)ᵀ", 256, 784, 32, false, true},
}

local all = vela.threads()
print("cpu BLAS core: " .. vela.device("cpu"):info().limits["blas core"])
print(string.format("products on the cpu, GFLOP/s, median of %d interleaved runs", reps))
print(string.format("%-36s %10s %10s %7s", "c = a·b", "1 thread", all .. " threads", "ratio"))
for _, s in ipairs(shapes) do
  local label, m, n, k, ta, tb = table.unpack(s)
  local a = ta and vela.rand(k, m, 1):t() or vela.rand(m, k, 1)
  local b = tb and vela.rand(n, k, 2):t() or vela.rand(k, n, 2)
  local c = vela.zeros(m, n)
  local flop = 2 * m * n * k
  local calls = math.max(1, math.floor(20e-3 * 100e9 / flop))
  local t = {[1] = {}, [all] = {}}
  for r = 1, 2 * reps do
    local th = r % 2 == 1 and 1 or all
    vela.threads(th)
    local w0 = vela.clock()
    repeat vela.mm(a, b, c) until vela.clock() - w0 > 10e-3
    local t0 = vela.clock()
    for _ = 1, calls do vela.mm(a, b, c) end
    local dt = (vela.clock() - t0) / calls
    table.insert(t[th], flop / dt / 1e9)
  end
  vela.threads(all)
  local function med(x) table.sort(x) return x[(#x + 1) // 2] end
  local one, many = med(t[1]), med(t[all])
  print(string.format("%-36s %10.1f %10.1f %7.2f", label, one, many, many / one))
end

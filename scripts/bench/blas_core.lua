-- sgemm through the cpu device at one thread, for comparing OpenBLAS cores
-- (run by scripts/bench/blas_core.sh with each core in turn). Prints the core
-- in use, then per shape the median GFLOP/s by the wall clock and per
-- processor-second (os.clock: the machine is shared, so the second figure is
-- the steadier one) over --reps runs of about 50 ms each.
--
--   build/vela scripts/bench/blas_core.lua [--reps 5]
local vela = require "vela"
local reps = 5
for i = 1, #arg do if arg[i] == "--reps" then reps = assert(tonumber(arg[i + 1]), "--reps needs a number") end end
vela.threads(1)
print("blas core: " .. vela.device("cpu"):info().limits["blas core"])
local shapes = {{"1024×1024 · 1024×1024", 1024, 1024, 1024}, {"forward 256×784 · 784×128", 256, 128, 784},
                {"dW 256×128 · (784×128)ᵀ", 256, 784, 128, true}}
local function med(x) table.sort(x) return x[(#x + 1) // 2] end
for _, s in ipairs(shapes) do
  local label, m, n, k, tb = table.unpack(s)
  local a, b, c = vela.rand(m, k, 1), tb and vela.rand(n, k, 2):t() or vela.rand(k, n, 2), vela.zeros(m, n)
  local flop = 2 * m * n * k
  local wall, cpu = {}, {}
  vela.mm(a, b, c)
  for _ = 1, reps do
    local w0, c0, calls = vela.clock(), os.clock(), 0
    repeat vela.mm(a, b, c); calls = calls + 1 until vela.clock() - w0 > 50e-3
    table.insert(wall, calls * flop / (vela.clock() - w0) / 1e9)
    table.insert(cpu, calls * flop / (os.clock() - c0) / 1e9)
  end
  print(string.format("%-28s %8.1f GFLOP/s %8.1f per cpu-s", label, med(wall), med(cpu)))
end

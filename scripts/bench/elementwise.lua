-- GB/s (bytes read and written) of tanh, exp, sigmoid and gelu over 16M
-- floats in [-4, 4) on the cpu, medians of 7 runs; for the NumPy figure in the
-- same session run scripts/bench/elementwise_numpy.py (tanh, exp) beside it.
--
--   build/vela scripts/bench/elementwise.lua
local vela = require "vela"
local N = 16 * 1024 * 1024
local x, y = vela.rand(N, 1, 5, "cpu"), vela.zeros(N, 1, "cpu")
vela.scal(8, x)
vela.add(vela.fill(vela.zeros(N, 1, "cpu"), -4), x)  -- x ← x − 4: uniform in [-4, 4)
local out = {}
for _, f in ipairs{"tanh", "exp", "sigmoid", "gelu"} do
  local b = vela.bench(function() vela[f](x, y) end, {n = 7, warmup = 1})
  out[#out + 1] = string.format("%s %.1f", f, 8 * N / b.median / 1e9)
end
print(table.concat(out, "  "))

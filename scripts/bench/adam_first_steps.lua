-- The relative error of optim.adam{lr = 0.001}'s first five steps (w0 = 0) against float64.
local optim = require "vela.optim"
local N = 7
local function grad(s, i) return math.sin(1.7 * i + 0.9 * s) + 0.05 * i - 0.3 end
for _, id in ipairs{arg[1] or "cpu"} do
  device(id)
  local opt = optim.adam{lr = 0.001}
  local w, g = zeros(N, 1), zeros(N, 1)
  local params = {{w, g, {}}}
  local m, v, ref = {}, {}, {}
  for i = 1, N do m[i], v[i], ref[i] = 0, 0, 0 end
  local worst = 0
  for s = 1, 5 do
    local gs = {}
    for i = 1, N do gs[i] = grad(s, i) end
    copy(matrix(N, 1, gs), g)
    opt:step(params)
    local scale = 0
    for i = 1, N do
      m[i] = 0.9 * m[i] + 0.1 * gs[i]; v[i] = 0.999 * v[i] + 0.001 * gs[i] ^ 2
      ref[i] = ref[i] - 0.001 * (m[i] / (1 - 0.9 ^ s)) / (math.sqrt(v[i] / (1 - 0.999 ^ s)) + 1e-8)
      scale = math.max(scale, math.abs(ref[i]))
    end
    local got = w:to("cpu"):totable()
    for i = 1, N do worst = math.max(worst, math.abs(got[i][1] - ref[i]) / scale) end
  end
  print(string.format("%s: adam's first five steps, largest error %.3g relative", id, worst))
end

-- The first conv of examples/cnn.lua (1 → 32 channels, 5×5 on 28×28, batch
-- 128) on the cpu two ways, processor time per call (best of 7 rounds of 10):
-- the direct kernels (conv with relu, conv_wgrad) against the path
-- nn.conv2d took before them (im2col + mm + to_images + relu forward,
-- im2col + from_images + mm + mv for dW and db, in parts of 36 images with
-- the windows stored row by row).
--
--   build/vela scripts/bench/conv_first.lua [threads=1]
local vela = require "vela"
vela.device("cpu")
vela.threads(tonumber((arg[1] or ""):match("threads=(%d+)") or 1))
local function best(f, reps, rounds)
  f()
  local bc = 1e9
  for r = 1, rounds do
    local c = os.clock()
    for i = 1, reps do f() end
    bc = math.min(bc, (os.clock() - c) / reps)
  end
  return bc * 1e3
end
local N, P = 128, 576
local g = {c = 1, h = 28, w = 28, k = 5}
local x = vela.rand(784, N, 1)
local W = vela.rand(32, 25, 2)
local b = vela.rand(32, 1, 3)
local z = vela.zeros(32 * P, N)
local da = vela.rand(32 * P, N, 4)
local dwt = vela.zeros(25, 32)
local db = vela.zeros(32, 1)
local tn = best(function() vela.conv(x, W, b, z, g, "relu") end, 10, 7)
local tw = best(function() vela.conv_wgrad(x, da, dwt:t(), db, g) end, 10, 7)
-- old path in parts of 36 (row_cols layout)
local m = 36
local colsT = vela.zeros(m * P, 25)
local u = vela.zeros(m * P, 32)
local ones = vela.zeros(m * P, 1); vela.fill(ones, 1)
local function parts(f) for j = 1, N, m do local k = math.min(m, N - j + 1); f(j, k) end end
local views = {}
local function V(mat, j, k) local key = tostring(mat) .. j .. ":" .. k; local v = views[key]; if not v then v = mat:columns(j, k); views[key] = v end; return v end
local function R(mat, k) local key = tostring(mat) .. "r" .. k; local v = views[key]; if not v then v = mat:view(1, 1, k * P, mat.cols); views[key] = v end; return v end
local to = best(function() parts(function(j, k)
  local c = R(colsT, k)
  vela.im2col(V(x, j, k), c:t(), g)
  vela.mm(c, W:t(), R(u, k))
  local zz = V(z, j, k)
  vela.to_images(R(u, k), zz, b)
  vela.relu(zz, zz)
end) end, 10, 7)
local tow = best(function() parts(function(j, k)
  local c = R(colsT, k)
  vela.im2col(V(x, j, k), c:t(), g)
  vela.from_images(V(da, j, k), R(u, k))
  vela.mm(1, R(u, k):t(), c, j == 1 and 0 or 1, dwt:t())
  vela.mv(1, R(u, k):t(), R(ones, k), j == 1 and 0 or 1, db)
end) end, 10, 7)
local fl = 2 * N * P * 25 * 32 / 1e9
print(("L1 forward: conv %.2f ms cpu (%.1f GFLOP/cpu-s), old im2col+mm+to_images+relu %.2f ms (%.1f)"):format(tn, fl / tn * 1e3, to, fl / to * 1e3))
print(("L1 wgrad:   conv_wgrad %.2f ms cpu (%.1f GFLOP/cpu-s), old im2col+from_images+mm+mv %.2f ms (%.1f)"):format(tw, fl / tw * 1e3, tow, fl / tow * 1e3))

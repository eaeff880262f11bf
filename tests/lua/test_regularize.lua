-- Regularization and augmentation on every device: the kernels dropout,
-- random_shift, batchnorm_stats, batchnorm, batchnorm_backward against
-- float64 references written here (Philox 4x32-10 in Lua integers, the
-- shift and the normalization by hand), sizes past the drivers' loop limits,
-- views; the layers nn.dropout and nn.batchnorm through nn.gradcheck within
-- 1e-3, their modes, nn.sequential, net:to, checkpoints and nn.fit; and
-- data.loader's shift, the same on every device for a seed.
local t = dofile("tests/lua/t.lua")
local nn, optim, data = require "vela.nn", require "vela.optim", require "vela.data"

local ids = t.devices()

-- ---- float64 / integer references ---------------------------------------

-- Philox 4x32-10 (Random123) in Lua's 64-bit integers: products wrap mod
-- 2^64, which keeps the low and high 32-bit halves exact.
local M32 = 0xffffffff
local function philox(c0, c1, c2, c3, k0, k1)
  for round = 0, 9 do
    if round > 0 then k0, k1 = (k0 + 0x9E3779B9) & M32, (k1 + 0xBB67AE85) & M32 end
    local p0, p1 = 0xD2511F53 * c0, 0xCD9E8D57 * c2
    c0, c1, c2, c3 = ((p1 >> 32) ~ c1 ~ k0) & M32, p1 & M32, ((p0 >> 32) ~ c3 ~ k1) & M32, p0 & M32
  end
  return c0, c1, c2, c3
end
-- The draw for element k at (seed, step): counter {k, 0, lo(step), hi(step)}.
local function draw(seed, step, k)
  return philox(k & M32, k >> 32, step & M32, step >> 32, seed & M32, seed >> 32)
end

local host = t.host

-- The known answer of Random123 for philox4x32-10 (counter 0, key 0).
t.test("the Lua Philox reference gives Random123's known answer", function()
  local a, b, c, d = philox(0, 0, 0, 0, 0, 0)
  assert(a == 0x6627e8d5 and b == 0xe169c58d and c == 0xbc57ac4c and d == 0x9b00dbd8,
    ("%08x %08x %08x %08x"):format(a, b, c, d))
end)

-- ---- dropout ----------------------------------------------------------------

for _, id in ipairs(ids) do
  device(id)
  t.test(id .. ": dropout's mask is Philox's, bit for bit, and y = x ∘ mask", function()
    for _, case in ipairs{{7, 5, 0.3, 11, 2}, {33, 9, 0.5, 123456789012, 7}, {1, 300, 0.9, 5, 0}, {4, 4, 0, 1, 1}} do
      local r, c, p, seed, step = table.unpack(case)
      local x = randn(r, c, 3)
      local mask, y = zeros(r, c), zeros(r, c)
      dropout(x, mask, y, p, seed, step)
      local M, Y, X = host(mask), host(y), host(x)
      -- the scale 1/(1 − p) in double from the double p, rounded once to float32 (issue 24 item 4:
      -- in float from float32(p), p = 0.9 gave 9.99999809)
      local function f32(v) return string.unpack("<f", string.pack("<f", v)) end
      local scale = f32(1 / (1 - p))
      for j = 1, c do
        for i = 1, r do
          local k = (j - 1) * r + (i - 1)
          local w = {draw(seed, step, k >> 2)}
          local u = (w[(k & 3) + 1] >> 8) * 2.0 ^ -24
          local want = u >= f32(p) and scale or 0
          assert(M[i][j] == want, ("mask(%d,%d) = %.9g, expected %.9g"):format(i, j, M[i][j], want))
          local prod = f32(X[i][j] * want)
          assert(Y[i][j] == prod, ("y(%d,%d)"):format(i, j))
        end
      end
    end
  end)

  t.test(id .. ": dropout on views, in place, and large (past 65,535 workgroups of 256)", function()
    local big = randn(40, 30, 5)
    local xv = big:view(3, 4, 20, 10):t()         -- a transposed view, 10×20
    local mask, y = zeros(10, 20), zeros(10, 20)
    dropout(xv, mask, y, 0.25, 9, 1)
    local xc = xv:copy()
    local mask2 = zeros(10, 20)
    dropout(xc, mask2, xc, 0.25, 9, 1)           -- in place, on a dense copy
    t.near(nrm2(mask - mask2), 0, 0, "the mask depends on (seed, step, logical index) only")
    t.near(nrm2(y - xc), 0, 0, "in place")
    local n = 4096 * 4100                         -- 16.8M elements: over 65,535 groups of 256
    local xl = fill(zeros(4096, 4100), 1)
    local ml = zeros(4096, 4100)
    dropout(xl, ml, xl, 0.2, 3, 5)
    local kept = sum(xl) / 1.25
    assert(math.abs(kept / n - 0.8) < 1e-3, "kept fraction " .. kept / n)
    -- the last element is the reference's
    local w = {draw(3, 5, (n - 1) >> 2)}
    local want = ((w[((n - 1) & 3) + 1] >> 8) * 2.0 ^ -24 >= string.unpack("<f", string.pack("<f", 0.2))) and 1.25 or 0
    t.near(ml:get(4096, 4100), want, 0, "the last element's mask")
    xl:release(); ml:release()
  end)

  t.test(id .. ": random_shift moves each image by Philox's (dr, dc), zero fill", function()
    for _, case in ipairs{{1, 28, 28, 2, 7}, {3, 5, 4, 1, 9}, {2, 6, 6, 3, 1}} do
      local C, H, W, s, seed = table.unpack(case)
      local n = 9
      local x = rand(C * H * W, n, 4)
      local y = fill(zeros(C * H * W, n), -1)
      random_shift(x, y, s, H, W, seed, 17)
      local X, Y = host(x), host(y)
      for j = 1, n do
        local w0, w1 = draw(seed, 17, j - 1)
        local dr, dc = w0 % (2 * s + 1) - s, w1 % (2 * s + 1) - s
        for c = 0, C - 1 do
          for r = 0, H - 1 do
            for q = 0, W - 1 do
              local sr, sq = r - dr, q - dc
              local want = 0
              if sr >= 0 and sr < H and sq >= 0 and sq < W then want = X[c * H * W + sr * W + sq + 1][j] end
              assert(Y[c * H * W + r * W + q + 1][j] == want, ("column %d pixel (%d,%d,%d)"):format(j, c, r, q))
            end
          end
        end
      end
    end
    -- a view as the input
    local big = rand(30, 10, 2)
    local v = big:view(3, 2, 16, 5)
    local y1, y2 = zeros(16, 5), zeros(16, 5)
    random_shift(v, y1, 1, 4, 4, 8)
    random_shift(v:copy(), y2, 1, 4, 4, 8)
    t.near(nrm2(y1 - y2), 0, 0, "a view shifts like its copy")
  end)
end

-- ---- batch normalization kernels ---------------------------------------------

-- float64 statistics of x (rows = F·G) per feature.
local function host_stats(X, G)
  local F, n = #X // G, #X[1]
  local mean, var = {}, {}
  for f = 1, F do
    local s, N = 0, G * n
    for i = (f - 1) * G + 1, f * G do for j = 1, n do s = s + X[i][j] end end
    mean[f] = s / N
    local q = 0
    for i = (f - 1) * G + 1, f * G do for j = 1, n do q = q + (X[i][j] - mean[f]) ^ 2 end end
    var[f] = q / N
  end
  return mean, var
end

local function col(m) local out = {} for i, r in ipairs(host(m)) do out[i] = r[1] end return out end

local function near_list(got, want, tol, what)
  local scale, diff = 0, 0
  for i = 1, #want do
    scale = math.max(scale, math.abs(want[i]))
    diff = math.max(diff, math.abs(got[i] - want[i]))
  end
  assert(diff <= tol * math.max(scale, 1e-30), ("%s: off by %.3g relative"):format(what, diff / math.max(scale, 1e-30)))
end

for _, id in ipairs(ids) do
  device(id)
  t.test(id .. ": batchnorm_stats, batchnorm and batchnorm_backward against float64", function()
    for _, case in ipairs{{5, 1, 7}, {12, 4, 3}, {6, 3, 1}, {8, 8, 2}} do
      local rows, G, n = table.unpack(case)
      local F = rows // G
      local x = vela.linear_frac(randn(rows, n, 21), 3, 2, 0, 1)  -- mean 2, sd 3
      local dy = randn(rows, n, 22)
      local gamma, beta = randn(F, 1, 23), randn(F, 1, 24)
      local mean, var = zeros(F, 1), zeros(F, 1)
      batchnorm_stats(x, mean, var, G)
      local X, DY, g, b = host(x), host(dy), col(gamma), col(beta)
      local hm, hv = host_stats(X, G)
      near_list(col(mean), hm, 1e-6, "mean")
      near_list(col(var), hv, 1e-5, "var")
      local y = zeros(rows, n)
      batchnorm(x, mean, var, gamma, beta, y, 1e-5, G)
      local dg, db, dx = zeros(F, 1), zeros(F, 1), zeros(rows, n)
      batchnorm_backward(dy, x, mean, var, gamma, dg, db, dx, 1e-5, G)
      -- float64: y, dβ, dγ, dx from the float64 statistics
      local Y, wantY, wdg, wdb, wantDX = host(y), {}, {}, {}, {}
      local gotY, gotDX, DX = {}, {}, host(dx)
      for f = 1, F do
        local inv, N = 1 / math.sqrt(hv[f] + 1e-5), G * n
        local sd, sdx = 0, 0
        for i = (f - 1) * G + 1, f * G do
          for j = 1, n do
            local xh = (X[i][j] - hm[f]) * inv
            wantY[#wantY + 1] = g[f] * xh + b[f]; gotY[#gotY + 1] = Y[i][j]
            sd, sdx = sd + DY[i][j], sdx + DY[i][j] * xh
          end
        end
        wdg[f], wdb[f] = sdx, sd
        for i = (f - 1) * G + 1, f * G do
          for j = 1, n do
            local xh = (X[i][j] - hm[f]) * inv
            wantDX[#wantDX + 1] = g[f] * inv / N * (N * DY[i][j] - sd - xh * sdx); gotDX[#gotDX + 1] = DX[i][j]
          end
        end
      end
      near_list(gotY, wantY, 1e-5, "y")
      near_list(col(dg), wdg, 1e-4, "dgamma")
      near_list(col(db), wdb, 1e-5, "dbeta")
      near_list(gotDX, wantDX, 1e-4, "dx")
      -- without dx: the same sums
      local dg2, db2 = zeros(F, 1), zeros(F, 1)
      batchnorm_backward(dy, x, mean, var, gamma, dg2, db2, nil, 1e-5, G)
      t.near(nrm2(dg2 - dg), 0, 0, "dgamma without dx")
      t.near(nrm2(db2 - db), 0, 0, "dbeta without dx")
    end
  end)

  t.test(id .. ": batchnorm on views and features past the loop limits (300,000 values each)", function()
    -- two features of 1×150,000 values × 2 columns... as rows = 2·150000, group 150000, n = 2
    local G, n = 150000, 2
    local x = vela.linear_frac(rand(2 * G, n, 31), 1, 100, 0, 1)  -- values 100..101: the mean matters
    local mean, var = zeros(2, 1), zeros(2, 1)
    batchnorm_stats(x, mean, var, G)
    -- float64 by sums on the host, from the same values
    local X = host(x)
    local hm, hv = host_stats(X, G)
    near_list(col(mean), hm, 1e-6, "mean of 300,000")
    near_list(col(var), hv, 1e-3, "var of 300,000")
    -- one feature of 1×300,000 columns: the statistics run along a row
    local xr = x:view(1, 1, 1, 2):t()              -- 2×1 is too small; use a long row instead:
    local long = vela.linear_frac(rand(1, 300000, 32), 2, -1, 0, 1)
    local m1, v1 = zeros(1, 1), zeros(1, 1)
    batchnorm_stats(long, m1, v1)
    local L = host(long)[1]
    local s = 0
    for _, v in ipairs(L) do s = s + v end
    local mu = s / #L
    local q = 0
    for _, v in ipairs(L) do q = q + (v - mu) ^ 2 end
    t.near(m1:get(1, 1), mu, 1e-4, "mean along a row")   -- mean ≈ 0: absolute
    t.near(v1:get(1, 1), q / #L, 1e-4, "var along a row")
    assert(xr.rows == 2)
    -- transposed input and row-vector statistics
    local xt = randn(6, 4, 33)                     -- its transpose is 4×6: 4 features, 6 samples
    local mrow, vrow = zeros(1, 4), zeros(1, 4)    -- row vectors (inc = ld)
    batchnorm_stats(xt:t(), mrow, vrow)
    local hm2, hv2 = host_stats(host(xt:t()), 1)
    near_list(host(mrow)[1], hm2, 1e-5, "mean of a transposed view")
    near_list(host(vrow)[1], hv2, 1e-5, "var of a transposed view")
  end)
end

t.test("the kernels' errors name the function and the argument", function()
  device("cpu")
  local x = zeros(6, 4)
  t.raises(function() dropout(x, zeros(6, 4), x, 1) end, "dropout: p is 1 but must be in [0, 1)")
  t.raises(function() dropout(x, zeros(6, 3), x, 0.5) end, "dropout: mask is 6×3 but must be 6×4")
  t.raises(function() dropout(x, x, zeros(6, 4), 0.5) end, "dropout: mask aliases x")
  t.raises(function() batchnorm_stats(x, zeros(4, 1), zeros(4, 1), 4) end,
    "batchnorm_stats: x has 6 rows, not a multiple of group 4")
  t.raises(function() batchnorm_stats(x, zeros(5, 1), zeros(6, 1)) end,
    "batchnorm_stats: mean is 5×1 but must be a vector of 6 elements (one per feature)")
  t.raises(function() batchnorm_stats(zeros(6, 0), zeros(6, 1), zeros(6, 1)) end, "an empty batch")
  t.raises(function() batchnorm(x, zeros(6, 1), zeros(6, 1), ones(6, 1), zeros(6, 1), zeros(6, 4), 0) end,
    "batchnorm: eps is 0 but must be a positive number")
  t.raises(function() batchnorm(x, zeros(6, 1), zeros(6, 1), ones(3, 1), zeros(6, 1), zeros(6, 4)) end,
    "batchnorm: gamma is 3×1 but must be a vector of 6 elements")
  t.raises(function() batchnorm_backward(x, x, zeros(6, 1), zeros(6, 1), ones(6, 1), zeros(6, 1), zeros(6, 1), x) end,
    "batchnorm_backward: dx aliases dy")
  t.raises(function() random_shift(x, zeros(6, 4), 1, 4, 4) end, "random_shift: x has 6 rows, not a multiple of height·width")
  t.raises(function() random_shift(x, x, 1, 3, 2) end, "random_shift: y aliases x")
  t.raises(function() random_shift(x, zeros(6, 4), 300, 3, 2) end, "random_shift: shift is 300 but must be in 0..255")
  if #ids > 1 then
    t.raises(function() dropout(x, zeros(6, 4, ids[2]), x, 0.5) end, "dropout: x is on cpu but mask is on " .. ids[2])
  end
end)

-- ---- the layers --------------------------------------------------------------

for _, id in ipairs(ids) do
  device(id)
  t.test(id .. ": nn.gradcheck passes nn.dropout and nn.batchnorm (per feature, per channel; train and eval)", function()
    local net = nn.sequential{nn.linear(6, 5, "tanh", {seed = 1}), nn.dropout(0.3, {seed = 4}), nn.batchnorm(5),
                              nn.linear(5, 3, {seed = 2})}
    assert(net.layers[2].inputs == 5, "dropout bound to 5 rows")
    vela.randn(net.layers[3].gamma, 5); vela.randn(net.layers[3].beta, 6)
    local r = nn.gradcheck(net, randn(6, 7, 3), {entries = math.huge})
    assert(r.ok, tostring(r))
    assert(r.errors["3.gamma"] and r.errors["3.beta"], tostring(r))
    -- per channel: 3 channels of 2×2 pixels
    local bn = nn.batchnorm(12, {channels = 3})
    vela.randn(bn.gamma, 3); vela.randn(bn.beta, 4)
    local r2 = nn.gradcheck(bn, randn(12, 5, 3), {entries = math.huge})
    assert(r2.ok and r2[1].total == 3, tostring(r2))
    -- evaluation mode: the running statistics (made non-trivial by a few training forwards)
    for s = 1, 3 do bn:forward(randn(12, 5, 40 + s)) end
    bn:eval()
    local r3 = nn.gradcheck(bn, randn(12, 5, 7), {entries = math.huge})
    assert(r3.ok, tostring(r3))
    net:eval()
    local r4 = nn.gradcheck(net, randn(6, 4, 8), {entries = math.huge})
    assert(r4.ok, tostring(r4))
    -- the check can fail: batchnorm's dx computed as if the statistics were constants
    local wrong = nn.batchnorm(4)
    local fake = setmetatable({}, {__index = wrong})
    fake.forward = function(_, x) return wrong:forward(x) end
    fake.backward = function(_, d)
      wrong:backward(d, true)
      local dx = zeros(4, d.cols, wrong.dev)
      batchnorm(d, zeros(4, 1, wrong.dev), wrong.var, wrong.gamma, zeros(4, 1, wrong.dev), dx)
      return dx
    end
    fake.params = function() return wrong:params() end
    fake.host_forward = function(_, x, P, ctx) return wrong:host_forward(x, P, ctx) end
    local r5 = nn.gradcheck(fake, randn(4, 6, 9))
    assert(not r5.ok and r5.errors.input > 0.01, tostring(r5))
  end)

  t.test(id .. ": dropout: off in evaluation, the scale kept in training, steps advance, masks the cpu's", function()
    local d = nn.dropout(0.5, {seed = 77})
    local net = nn.sequential{nn.linear(4, 8, "relu", {seed = 1}), d, nn.linear(8, 2, {seed = 2})}
    local x = randn(4, 3, 5)
    net:eval()
    local h = net.layers[1]:forward(x)
    assert(rawequal(d:forward(h), h), "evaluation: the input itself")
    assert(d.step == 0, "no step in evaluation")
    net:train()
    d:forward(h)
    d:forward(h)
    assert(d.step == 2)
    -- the step-2 mask equals the cpu's for the same seed and step
    local ref = zeros(8, 3, "cpu")
    dropout(zeros(8, 3, "cpu"), ref, zeros(8, 3, "cpu"), 0.5, 77, 2)
    t.near(nrm2(d.used_mask:to("cpu") - ref), 0, 0, "the mask of (seed 77, step 2)")
  end)

  t.test(id .. ": batchnorm: running statistics by momentum, evaluation uses them", function()
    local bn = nn.batchnorm(3, {momentum = 0.25})
    local xs = {}
    local rm, rv = {0, 0, 0}, {1, 1, 1}
    for s = 1, 3 do
      xs[s] = vela.linear_frac(randn(3, 6, 50 + s), 2, 1, 0, 1)
      bn:forward(xs[s])
      local hm, hv = host_stats(host(xs[s]), 1)
      for f = 1, 3 do
        rm[f] = 0.75 * rm[f] + 0.25 * hm[f]
        rv[f] = 0.75 * rv[f] + 0.25 * hv[f] * 6 / 5
      end
    end
    near_list(col(bn.running_mean), rm, 1e-5, "running mean")
    near_list(col(bn.running_var), rv, 1e-5, "running var")
    bn:eval()
    local x = randn(3, 2, 60)
    local y, X = host(bn:forward(x)), host(x)
    for f = 1, 3 do
      for j = 1, 2 do
        t.near(y[f][j], (X[f][j] - rm[f]) / math.sqrt(rv[f] + 1e-5), 1e-5, "evaluation output")
      end
    end
  end)
end

-- A seeded run with dropout and batchnorm: the same losses on every device.
local function run(id, steps)
  device(id)
  local net = nn.sequential{nn.linear(20, 16, "relu", {seed = 1}), nn.batchnorm(16), nn.dropout(0.25, {seed = 9}),
                            nn.linear(16, 4, {seed = 2})}
  local x = randn(20, 32, 3)
  local labels = vela.matrix(1, 32, (function() local l = {} for j = 1, 32 do l[j] = (j % 4) + 1 end return l end)())
  local losses, opt = t.sgd_losses(net, x, labels, steps)
  return losses, net, opt
end

t.test("a seeded run with dropout and batchnorm: the loss after 50 steps within 1e-4 relative on every device", function()
  local ref = run("cpu", 50)
  assert(ref[50] < ref[1], "the loss falls")
  for _, id in ipairs(ids) do
    if id ~= "cpu" then
      local got = run(id, 50)
      t.near(got[1], ref[1], 1e-5, id .. ": first loss")
      t.near(got[50], ref[50], 1e-4, id .. ": loss after 50 steps")
    end
  end
end)

t.test("net:to, checkpoints and nn.fit with dropout and batchnorm", function()
  local dir = os.tmpname()
  os.remove(dir)
  local _, net, opt = run("cpu", 5)
  local path = dir .. ".npz"
  nn.save(path, net, opt, {step = 5})
  local net2, opt2 = nn.load(path, ids[#ids])
  os.remove(path)
  assert(tostring(net2.layers[2]) == "batchnorm(16)" and tostring(net2.layers[3]) == "dropout(0.25)", tostring(net2))
  t.near(nrm2(net2.layers[2].running_var:to("cpu") - net.layers[2].running_var), 0, 0, "running var restored")
  assert(net2.layers[3].step == 5 and net2.layers[3].seed == 9, "dropout's seed and step restored")
  -- the next step's loss equals the uninterrupted run's (on another device)
  local ref = run("cpu", 6)
  device(ids[#ids])
  local x = randn(20, 32, 3)
  local labels = vela.matrix(1, 32, (function() local l = {} for j = 1, 32 do l[j] = (j % 4) + 1 end return l end)())
  local lossfn = nn.softmax_xent()
  t.near(nn.mean(lossfn:forward(net2:forward(x), labels)), ref[6], 1e-4, "the resumed 6th loss")
  assert(opt2.steps == opt.steps)
  -- net:to and back
  net:to(ids[#ids])
  assert(net.layers[2].gamma:device():name() == ids[#ids] and net:device():name() == ids[#ids])
  net:to("cpu")
  -- nn.fit trains in training mode; nn.evaluate in evaluation mode, putting the mode back
  device("cpu")
  local imgs = rand(16, 64, 4)
  local lab = vela.matrix(1, 64, (function() local l = {} for j = 1, 64 do l[j] = (j % 2) + 1 end return l end)())
  local set = {images = imgs, labels = lab, n = 64}
  local fnet = nn.sequential{nn.linear(16, 8, "relu", {seed = 3}), nn.dropout(0.5, {seed = 2}), nn.batchnorm(8),
                             nn.linear(8, 2, {seed = 4})}
  fnet:eval()
  nn.fit(fnet, set, {epochs = 2, batch = 16, progress = false, test = set})
  assert(fnet.training == true, "fit leaves the net in training mode")
  assert(fnet.layers[2].step == 8, "8 training forwards of the dropout: " .. fnet.layers[2].step)
  local a1 = nn.evaluate(fnet, set)
  local a2 = nn.evaluate(fnet, set)
  assert(a1 == a2 and fnet.layers[2].step == 8 and fnet.training == true, "evaluate: no dropout, mode restored")
end)

t.test("profile, diverge and compare see the layers' kernels", function()
  local dev = ids[#ids]
  device(dev)
  local net = nn.sequential{nn.linear(20, 16, "relu", {seed = 1}), nn.batchnorm(16), nn.dropout(0.25, {seed = 9}),
                            nn.linear(16, 4, {seed = 2})}
  local x = randn(20, 32, 3)
  local labels = vela.matrix(1, 32, (function() local l = {} for j = 1, 32 do l[j] = (j % 4) + 1 end return l end)())
  local lossfn = nn.softmax_xent()
  local function step() lossfn:forward(net:forward(x), labels); net:backward(lossfn:backward()) end
  local rows = profile(step)
  local seen = {}
  for _, r in ipairs(rows) do seen[r.kernel] = true end
  for _, k in ipairs{"dropout", "batchnorm_stats", "batchnorm", "batchnorm_backward"} do
    assert(seen[k], "profile has no row " .. k)
  end
  if dev ~= "cpu" then
    local r = diverge(step)
    assert(not r.diverged, tostring(r.kernel))
  end
  local c = compare(function() net.layers[3].step = 0; return net:forward(x) end, {inputs = {net, x}})
  for _, row in ipairs(c) do assert((row.max_rel or 0) < 1e-5, row.device .. " " .. tostring(row.max_rel)) end
end)

t.test("data.loader{shift = 2}: the same batches on every device, each image moved by Philox's shift", function()
  local ref
  for _, id in ipairs(ids) do
    device(id)
    local imgs = rand(2 * 5 * 4, 11, 1)
    local set = {images = imgs, labels = ones(1, 11), n = 11}
    local L = data.loader(set, 4, {shift = 2, height = 5, width = 4, seed = 3})
    local got = {}
    for x in L:epoch(2) do got[#got + 1] = host(x) end
    if not ref then
      ref = got
      -- against the reference: batch 2 of epoch 2 (step (2 − 1)·3 + 2 = 5), column 1
      local order = host(L:order(2))[1]
      local X = host(imgs)
      local w0, w1 = draw(3, 5, 0)
      local dr, dc = w0 % 5 - 2, w1 % 5 - 2
      local src = order[5]
      for c = 0, 1 do
        for r = 0, 4 do
          for q = 0, 3 do
            local sr, sq = r - dr, q - dc
            local want = 0
            if sr >= 0 and sr < 5 and sq >= 0 and sq < 4 then want = X[c * 20 + sr * 4 + sq + 1][src] end
            t.near(got[2][c * 20 + r * 4 + q + 1][1], want, 1e-6, "shifted pixel")
          end
        end
      end
    else
      for b = 1, #ref do
        for i = 1, #ref[b] do
          for j = 1, #ref[b][i] do
            assert(got[b][i][j] == ref[b][i][j], ("%s: batch %d (%d,%d) differs from the cpu's"):format(id, b, i, j))
          end
        end
      end
    end
  end
  t.raises(function() data.loader({images = zeros(10, 4), labels = ones(1, 4), n = 4}, 2, {shift = 1}) end,
    "data.loader: shift needs images of height×width pixels")
  t.raises(function() data.loader({images = zeros(9, 4), labels = ones(1, 4), n = 4}, 2, {shift = -1}) end,
    "data.loader: shift must be an integer in 0..255")
end)

t.test("nn.dropout without a seed: the next of seed(n)'s sequence, so seed(n) makes a run repeat", function()
  device("cpu")
  for _ = 1, 20 do
    local d = nn.dropout(0.5)
    assert(math.type(d.seed) == "integer" and d.seed >= 0 and d.seed < 2 ^ 53, tostring(d.seed))
    d:bind(6)
    d:forward(ones(6, 2))  -- a seed dropout() takes
  end
  seed(42)
  local a = nn.dropout(0.5).seed
  seed(42)
  assert(nn.dropout(0.5).seed == a, "seed(42) repeats the default seed")
end)

t.test("layer errors name the layer and the argument", function()
  device("cpu")
  t.raises(function() nn.dropout(1) end, "nn.dropout: p must be a number in [0, 1)")
  t.raises(function() nn.batchnorm(0) end, "nn.batchnorm: features must be a positive integer")
  t.raises(function() nn.batchnorm(12, {channels = 5}) end, "nn.batchnorm: channels must be a positive integer dividing features (12)")
  t.raises(function() nn.batchnorm(4, {momentum = 2}) end, "nn.batchnorm: momentum must be a number in [0, 1]")
  local net = nn.sequential{nn.linear(3, 4), nn.batchnorm(4)}
  t.raises(function() net:forward(zeros(5, 2)) end, "layer 1", "input is 5×2 but the layer takes 3 rows")
  t.raises(function() nn.sequential{nn.linear(3, 4), nn.batchnorm(5)} end, "nn.sequential: layer 2 (batchnorm(5)) takes 5 inputs")
  local bn = nn.batchnorm(4)
  t.raises(function() bn:forward(zeros(4, 0)) end, "an empty batch")
  t.raises(function() nn.sequential{nn.linear(3, 4), nn.dropout(0.5)}:save(os.tmpname()) end,
    "net:save: layer 2 (dropout(0.5)) is not a linear layer", "nn.save(path, net) keeps every kind")
end)

t.done()

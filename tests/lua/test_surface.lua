-- The surface a Torch7/PyTorch/NumPy user reaches for, on every device:
-- size/numel/dim, operators with a number, sum/mean/max/min whole and per
-- dimension (checked against float64 sums and comparisons on the host, the
-- per-dimension results staying on the device), and Torch7's in-place methods.
local t = dofile("tests/lua/t.lua")

local ids = t.devices()
device("cpu")

local host = t.host

-- Reference reductions in float64 on the host.
local function ref(tab, rows, cols, what, dim)
  local function fold(vals)
    local s, lo, hi = 0, math.huge, -math.huge
    for _, v in ipairs(vals) do s = s + v; lo = math.min(lo, v); hi = math.max(hi, v) end
    return ({sum = s, mean = s / #vals, max = hi, min = lo})[what]
  end
  if not dim then
    local all = {}
    for i = 1, rows do for j = 1, cols do all[#all + 1] = tab[i][j] end end
    return fold(all)
  end
  local out = {}
  if dim == 1 then
    for j = 1, cols do local c = {} for i = 1, rows do c[i] = tab[i][j] end out[j] = fold(c) end
  else
    for i = 1, rows do out[i] = fold(tab[i]) end
  end
  return out
end

for _, id in ipairs(ids) do
  t.test(id .. ": size, numel, dim", function()
    local m = zeros(3, 7, "float32", id)
    local r, c = m:size()
    assert(r == 3 and c == 7 and m:size(1) == 3 and m:size(2) == 7)
    assert(m:numel() == 21 and m:dim() == 2)
    assert(m:t():size(1) == 7)
    t.raises(function() m:size(3) end, "size: dim must be 1 (rows) or 2 (columns), got 3")
    t.raises(function() return m[1] end, "matrix: m[1] is not how a 3×7 matrix is indexed", "m:get(i, j)", "m:row(i)")
    assert(m.rows == 3 and m.cols == 7 and m.t and m.nosuchfield == nil, "fields and methods as before")
  end)

  t.test(id .. ": m + s, s + m, m - s, s - m, m / s, s / m, m / b", function()
    local x = from({{1, -2, 4}, {8, 0.5, -0.25}}, "float32", id)
    local checks = {
      {x + 3, function(v) return v + 3 end}, {3 + x, function(v) return v + 3 end},
      {x - 3, function(v) return v - 3 end}, {3 - x, function(v) return 3 - v end},
      {x / 4, function(v) return v / 4 end}, {2 / x, function(v) return 2 / v end},
      {x / x, function() return 1 end}, {x * 2, function(v) return 2 * v end},
    }
    local xs = host(x)
    for k, c in ipairs(checks) do
      local got = host(c[1])
      for i = 1, 2 do for j = 1, 3 do t.near(got[i][j], c[2](xs[i][j]), 1e-6, "case " .. k) end end
      assert(tostring(c[1]:device()):find(id, 1, true))
    end
    t.raises(function() return x + "a" end, "matrix +", "string")
    t.raises(function() return {} / x end, "matrix /", "table")
  end)

  t.test(id .. ": sum, mean, max, min whole and per dimension, against float64 on the host", function()
    for _, shape in ipairs{{37, 23}, {1, 9}, {9, 1}, {5, 5}} do
      local rows, cols = shape[1], shape[2]
      local x = randn(rows, cols, 7, id)
      local tab = host(x)
      local views = {x, x:t()}
      for vi, m in ipairs(views) do
        local mt = host(m)
        local r, c = m.rows, m.cols
        for _, what in ipairs{"sum", "mean", "max", "min"} do
          local tol = (what == "sum" or what == "mean") and 1e-5 or 0
          t.near(_G[what](m), ref(mt, r, c, what), tol, what)
          t.near(m[what](m), ref(mt, r, c, what), tol, what .. " method")
          for dim = 1, 2 do
            local got = _G[what](m, dim)
            assert(tostring(got:device()):find(id, 1, true), "stays on the device")
            local want = ref(mt, r, c, what, dim)
            assert(got.rows == (dim == 1 and 1 or r) and got.cols == (dim == 1 and c or 1),
              ("%s(x, %d) of %d×%d is %d×%d"):format(what, dim, r, c, got.rows, got.cols))
            local g = host(got)
            for k = 1, #want do
              local v = dim == 1 and g[1][k] or g[k][1]
              t.near(v, want[k], tol, ("%s(x, %d)[%d] of view %d, %d×%d"):format(what, dim, k, vi, r, c))
            end
          end
        end
      end
      assert(tab)
    end
    t.raises(function() sum(zeros(2, 2, "float32", id), 0) end, "sum: dim must be 1")
    t.raises(function() max(zeros(0, 3, "float32", id)) end, "max: x is 0×3")
  end)

  t.test(id .. ": max and min per dimension are x at argmax's and argmin's row: NaN loses to any number, ties take the first", function()
    -- Columns long enough for the cpu's lanes (40 rows), short ones (3 rows),
    -- and their transposes (the maxima along rows); values by hand.
    local nan, inf = 0 / 0, math.huge
    local big = -(2.0 ^ 100)  -- a large magnitude, exact in float32
    local function column(len, at)  -- big everywhere, then the entries of `at`
      local c = {}
      for i = 1, len do c[i] = big end
      for i, v in pairs(at) do c[i] = v end
      return c
    end
    local cases = {  -- {column, its max, its argmax}
      {column(40, {[1] = nan, [17] = 2, [33] = 2, [40] = nan}), 2, 17},
      {column(40, {[5] = -inf, [9] = 7, [25] = 7.5}), 7.5, 25},
      {column(40, {[1] = nan}), big, 2},
      {column(3, {[1] = nan, [2] = 1, [3] = nan}), 1, 2},
      {column(3, {[1] = -inf, [2] = -inf, [3] = -inf}), -inf, 1},
      {column(40, {[3] = inf, [4] = -inf, [20] = inf}), inf, 3},
    }
    for _, len in ipairs{40, 3} do
      local cs = {}
      for _, c in ipairs(cases) do if #c[1] == len then cs[#cs + 1] = c end end
      local rows = {}
      for i = 1, len do rows[i] = {} for j, c in ipairs(cs) do rows[i][j] = c[1][i] end end
      local x = from(rows, "float32", id)
      local m1, m2 = host(max(x, 1)), host(max(x:t(), 2))
      local i1 = host(argmax(x, zeros(1, #cs, "float32", id)))
      local n1, n2 = host(min(-x, 1)), host(min((-x):t(), 2))
      local j1 = host(argmin(-x, zeros(1, #cs, "float32", id)))
      for j, c in ipairs(cs) do
        assert(m1[1][j] == c[2], ("max(x, 1)[%d] of %d rows is %s, expected %s"):format(j, len, m1[1][j], c[2]))
        assert(m2[j][1] == c[2], ("max(xᵀ, 2)[%d] of %d rows is %s, expected %s"):format(j, len, m2[j][1], c[2]))
        assert(i1[1][j] == c[3], ("argmax[%d] of %d rows is %s, expected %s"):format(j, len, i1[1][j], c[3]))
        assert(n1[1][j] == -c[2], ("min(-x, 1)[%d] of %d rows is %s, expected %s"):format(j, len, n1[1][j], -c[2]))
        assert(n2[j][1] == -c[2], ("min(-xᵀ, 2)[%d] of %d rows is %s, expected %s"):format(j, len, n2[j][1], -c[2]))
        assert(j1[1][j] == c[3], ("argmin(-x)[%d] of %d rows is %s, expected %s"):format(j, len, j1[1][j], c[3]))
      end
    end
    local all_nan = from({{nan, nan}, {nan, nan}}, "float32", id)
    local g = host(max(all_nan, 1))
    assert(g[1][1] ~= g[1][1] and g[1][2] ~= g[1][2], "a column of NaN gives NaN")
    local v = max(from({{1, nan}, {-inf, 3}}, "float32", id))
    assert(v == 3, "max of the whole matrix: NaN loses, -Inf does not leak into the sum")
    v = min(from({{1, nan}, {-inf, 3}}, "float32", id))
    assert(v == -inf, "min of the whole matrix: NaN loses, -Inf is the minimum, got " .. tostring(v))
    assert(min(from({{4, nan}, {2, 3}}, "float32", id)) == 2, "min of the whole matrix")
  end)

  t.test(id .. ": Torch7's in-place methods write into m and return it", function()
    local x = from({{1, -2}, {3, 0.5}}, "float32", id)
    local y = from({{2, 2}, {-1, 4}}, "float32", id)
    local m = x:copy()
    assert(rawequal(m:add(2, y), m))
    local g = host(m)
    t.near(g[1][1], 5, 0) t.near(g[2][1], 1, 0) t.near(g[2][2], 8.5, 0)
    m = x:copy():add(10) t.near(host(m)[1][2], 8, 0)
    m = x:copy():add(y) t.near(host(m)[2][2], 4.5, 0)
    m = x:copy():mul(3) t.near(host(m)[1][2], -6, 0)
    m = x:copy():div(4) t.near(host(m)[2][1], 0.75, 0)
    m = x:copy():cmul(y) t.near(host(m)[1][2], -4, 0)
    m = x:copy():cdiv(y) t.near(host(m)[2][2], 0.125, 0)
    m = x:copy():fill(7) t.near(sum(m), 28, 0)
    m = x:copy():zero() t.near(asum(m), 0, 0)
    m = x:copy():tanh() t.near(host(m)[1][2], math.tanh(-2), 1e-6)
    m = x:copy():sigmoid() t.near(host(m)[1][1], 1 / (1 + math.exp(-1)), 1e-6)
    m = x:copy():relu() t.near(host(m)[1][2], 0, 0)
    m = x:copy():abs() t.near(host(m)[1][2], 2, 0)
    m = x:copy():sqr() t.near(host(m)[2][1], 9, 0)
    m = y:copy():abs():sqrt() t.near(host(m)[2][2], 2, 1e-6)
    m = y:copy():abs():log() t.near(host(m)[2][2], math.log(4), 1e-6)
    m = y:copy():exp() t.near(host(m)[1][1], math.exp(2), 1e-5)
    t.raises(function() x:cmul(zeros(3, 3, "float32", id)) end, "mul")
  end)
end

t.done()

-- cumsum (the prefix sums down each column) on every device against float64
-- sums on the host: by hand, columns longer than 65,535 rows (a shader loop
-- that long is cut on lavapipe; the Vulkan kernel splits columns in chunks),
-- views, in place, and the argument errors.
local t = dofile("tests/lua/t.lua")

local host = t.host

-- x's flat column-major values f(i, j) (1-based), and their running sums per
-- column in float64 (Lua numbers): ref[j][i], abs[j][i] = Σ |x| up to i.
local function column_major(rows, cols, f)
  local v, ref, abs = {}, {}, {}
  for j = 1, cols do
    local s, a = 0.0, 0.0
    ref[j], abs[j] = {}, {}
    for i = 1, rows do
      local x = f(i, j)
      v[(j - 1) * rows + i] = x
      s, a = s + x, a + math.abs(x)
      ref[j][i], abs[j][i] = s, a
    end
  end
  return v, ref, abs
end

t.each_device(function(id)
  t.test(id .. ": cumsum by hand, into y and in place", function()
    local y = cumsum(from{{1, 2}, {3, 4}, {5, 6}}, zeros(3, 2))
    local Y = host(y)
    local want = {{1, 2}, {4, 6}, {9, 12}}
    for i = 1, 3 do for j = 1, 2 do assert(Y[i][j] == want[i][j], ("y(%d,%d) = %g"):format(i, j, Y[i][j])) end end
    local x = from{{1, -1}, {0.5, 2}}
    assert(rawequal(cumsum(x), x), "in place returns x")
    local X = host(x)
    assert(X[1][1] == 1 and X[2][1] == 1.5 and X[1][2] == -1 and X[2][2] == 1, "in place")
    local e = host(cumsum(zeros(0, 3), zeros(0, 3)))
    assert(#e == 0, "no rows")
  end)

  t.test(id .. ": cumsum of columns of 70,001 rows, exact on integers", function()
    -- Small integers: every partial sum is exact in float32, so y equals the float64 reference exactly;
    -- a chunk's offset missing or a loop cut after 65,535 iterations shows as a wrong value.
    local rows, cols = 70001, 3
    local v, ref = column_major(rows, cols, function(i, j) return (i * 7 + j * 3) % 5 - 2 + (i % 97 == 0 and 5 or 0) end)
    local y = cumsum(matrix(rows, cols, v), zeros(rows, cols))
    local Y = host(y)
    for j = 1, cols do
      for i = 1, rows do
        if Y[i][j] ~= ref[j][i] then error(("y(%d,%d) = %g, want %g"):format(i, j, Y[i][j], ref[j][i])) end
      end
    end
  end)

  t.test(id .. ": cumsum of random columns of 66,000 rows near the float64 sums", function()
    local rows, cols = 66000, 2
    local rng = 12345
    local function u() rng = (rng * 1103515245 + 12345) % 2147483648; return rng / 2147483648 - 0.5 end
    local v, ref, abs = column_major(rows, cols, function() return u() end)
    local x = matrix(rows, cols, v)
    -- the float32 values actually stored, summed in float64
    local xs = host(x)
    for j = 1, cols do
      local s = 0.0
      for i = 1, rows do s = s + xs[i][j]; ref[j][i] = s end
    end
    local Y = host(cumsum(x, zeros(rows, cols)))
    -- float32 sums in chunks: within 1e-5 of Σ |x| so far (a missing chunk offset is off by far more)
    for j = 1, cols do
      for i = 1, rows do
        local tol = 1e-5 * abs[j][i] + 1e-6
        if math.abs(Y[i][j] - ref[j][i]) > tol then
          error(("y(%d,%d) = %.9g, want %.9g within %g"):format(i, j, Y[i][j], ref[j][i], tol))
        end
      end
    end
  end)

  t.test(id .. ": cumsum of views: a transposed x, a column of a wider matrix", function()
    -- xᵀ: 2×3 → columns (1, 4), (2, 5), (3, 6)
    local x = from{{1, 2}, {3, 4}, {5, 6}}
    local Y = host(cumsum(x:t(), zeros(2, 3)))
    local want = {{1, 3, 5}, {3, 7, 11}}
    for i = 1, 2 do for j = 1, 3 do assert(Y[i][j] == want[i][j], ("y(%d,%d) = %g"):format(i, j, Y[i][j])) end end
    local m = from{{1, 10, 100}, {2, 20, 200}, {3, 30, 300}}
    local c = m:narrow(2, 2, 1)
    cumsum(c)  -- in place on column 2 only
    local M = host(m)
    assert(M[1][2] == 10 and M[2][2] == 30 and M[3][2] == 60, "column 2")
    assert(M[3][1] == 3 and M[3][3] == 300, "other columns untouched")
  end)

  t.test(id .. ": cumsum errors name the argument", function()
    t.raises(function() cumsum(zeros(3, 2), zeros(2, 3)) end, "cumsum: y is 2×3 but must be 3×2 (the shape of x)")
    t.raises(function() cumsum(zeros(3, 2, "uint8")) end, "cumsum: x")
    local m = zeros(4, 2)
    t.raises(function() cumsum(m:narrow(1, 1, 3), m:narrow(1, 2, 3)) end, "cumsum: y partially overlaps x")
    t.raises(function() cumsum("x") end, "bad argument #1 to 'cumsum'")
  end)
end)

t.done()

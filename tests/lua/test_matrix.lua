-- The matrix surface on every usable device: constructors, fields, views,
-- accessors, copies, transfers, release, operators. Expected values are
-- written out by hand.
local t = dofile("tests/lua/t.lua")

local ids = t.devices()

-- m's values (rows as on paper) equal `rows` exactly.
local function same(m, rows, what)
  local got = m:totable()
  local r, c = m:shape()
  assert(r == #rows, ("%s: %d rows, expected %d"):format(what or "same", r, #rows))
  assert(#got == #rows)
  for i = 1, #rows do
    assert(c == #rows[i], ("%s: %d columns, expected %d"):format(what or "same", c, #rows[i]))
    for j = 1, #rows[i] do
      assert(got[i][j] == rows[i][j],
        ("%s: (%d, %d) is %.9g, expected %.9g"):format(what or "same", i, j, got[i][j], rows[i][j]))
      assert(m:get(i, j) == rows[i][j])
    end
  end
end

for _, id in ipairs(ids) do
  local dev = device(id)
  local D = id .. ": "

  t.test(D .. "from: rows as on paper, fields, shape, length", function()
    local a = from{{1, 2, 3}, {4, 5, 6}}
    assert(a.rows == 2 and a.cols == 3)
    local r, c = a:shape()
    assert(r == 2 and c == 3)
    assert(#a == 6)
    assert(a:dtype() == "float32")
    assert(a:device() == dev and a:device() == device())
    assert(a:device():name() == id)
    same(a, {{1, 2, 3}, {4, 5, 6}})
    local v = from{1, 2, 3}
    assert(v.rows == 3 and v.cols == 1)
    same(v, {{1}, {2}, {3}})
    assert(v:get(3) == 3)
    local e = from{}
    assert(e.rows == 0 and e.cols == 0)
    same(from{{-1.5, 2.25}}, {{-1.5, 2.25}})
  end)

  t.test(D .. "matrix: flat column-major values, fill, zeros", function()
    same(matrix(2, 3, {1, 2, 3, 4, 5, 6}), {{1, 3, 5}, {2, 4, 6}})
    same(matrix(2, 2, 7), {{7, 7}, {7, 7}})
    same(matrix(2, 2), {{0, 0}, {0, 0}})
    same(zeros(1, 3), {{0, 0, 0}})
    same(ones(2, 1), {{1}, {1}})
    local e = zeros(0, 3)
    assert(e.rows == 0 and e.cols == 3 and #e == 0)
    assert(#e:totable() == 0)
    assert(zeros(3, 0).cols == 0)
    -- explicit device, as a spec string and as a device
    assert(zeros(1, 1, id):device() == dev)
    assert(ones(1, 1, dev):device() == dev)
    assert(matrix(1, 2, {1, 2}, dev):device() == dev)
    assert(from({{1}}, id):device() == dev)
  end)

  t.test(D .. "uint8 matrices", function()
    local u = matrix(2, 2, {0, 255, 3, 4}, "uint8")
    assert(u:dtype() == "uint8")
    same(u, {{0, 3}, {255, 4}})
    same(zeros(1, 2, "uint8"), {{0, 0}})
    same(ones(1, 2, "uint8"), {{1, 1}})
    same(from({{7, 8}}, "uint8"), {{7, 8}})
    same(matrix(1, 2, 9, "uint8"), {{9, 9}})
    -- converted to float32 by copy
    local f = zeros(2, 2)
    copy(u, f)
    same(f, {{0, 3}, {255, 4}})
  end)

  t.test(D .. "rand and randn: seeded, in range, constructor and kernel agree", function()
    local a, b = rand(4, 5, 42), rand(4, 5, 42)
    same(b, a:totable())
    for i = 1, 4 do
      for j = 1, 5 do
        local v = a:get(i, j)
        assert(v >= 0 and v < 1)
      end
    end
    local x = zeros(4, 5)
    assert(rawequal(rand(x, 42), x))
    same(x, a:totable())
    assert(rand(4, 5, 43):get(1, 1) ~= a:get(1, 1))
    -- no seed: the next of the sequence seed(n) starts, so reproducible
    seed(7)
    local p, q = rand(2, 2), rand(2, 2)
    seed(7)
    same(rand(2, 2), p:totable())
    same(rand(2, 2), q:totable())
    assert(p:get(1, 1) ~= q:get(1, 1))
    -- randn: mean ≈ 0, variance ≈ 1 over 20000 numbers
    local n = randn(100, 200, 3)
    local mean = sum(n) / #n
    local var = dot(n, n) / #n - mean * mean
    assert(math.abs(mean) < 0.05, mean)
    assert(math.abs(var - 1) < 0.05, var)
    local y = zeros(3, 3)
    assert(rawequal(randn(y, 3), y))
    same(y, randn(3, 3, 3):totable())
    local u = rand(100, 200, 9)
    t.near(sum(u) / #u, 0.5, 0.02, "uniform mean")
  end)

  t.test(D .. "views: t, view, row, col, columns share memory", function()
    local a = from{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}}
    same(a:t(), {{1, 4, 7}, {2, 5, 8}, {3, 6, 9}})
    same(a:t():t(), a:totable())
    same(a:view(2, 2, 2, 2), {{5, 6}, {8, 9}})
    same(a:view(1, 1, 3, 3), a:totable())
    same(a:view(3, 3, 0, 0), {})
    same(a:row(2), {{4, 5, 6}})
    same(a:col(3), {{3}, {6}, {9}})
    same(a:columns(2, 2), {{2, 3}, {5, 6}, {8, 9}})
    same(a:t():view(1, 2, 2, 2), {{4, 7}, {5, 8}})
    same(a:t():row(1), {{1, 4, 7}})
    same(a:view(2, 1, 2, 3):t(), {{4, 7}, {5, 8}, {6, 9}})
    assert(a:row(2):get(3) == 6 and a:col(2):get(3) == 8)
    a:view(2, 2, 2, 2):set(1, 1, 50)
    assert(a:get(2, 2) == 50)
    a:t():set(1, 3, 70)
    assert(a:get(3, 1) == 70)
    a:row(1):set(2, 20)
    assert(a:get(1, 2) == 20)
    a:col(1):set(1, 10)
    assert(a:get(1, 1) == 10)
    same(a, {{10, 20, 3}, {4, 50, 6}, {70, 8, 9}})
    -- kernels on views: a strided row, an offset block
    local b = from{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}}
    scal(2, b:row(2))
    axpy(1, ones(2, 2), b:view(2, 2, 2, 2))
    same(b, {{1, 2, 3}, {8, 11, 13}, {7, 9, 10}})
  end)

  t.test(D .. "get and set", function()
    local a = zeros(2, 3)
    assert(rawequal(a:set(2, 3, 5.5), a))
    assert(a:get(2, 3) == 5.5)
    local v = zeros(1, 4)
    v:set(4, -2)
    assert(v:get(4) == -2 and v:get(1, 4) == -2)
    local c = zeros(3, 1)
    c:set(2, 8)
    assert(c:get(2) == 8 and c:get(2, 1) == 8)
  end)

  t.test(D .. "copy, raw, to", function()
    local a = from{{1, 2}, {3, 4}}
    local c = a:copy()
    assert(not rawequal(c, a) and c:device() == dev)
    c:set(1, 1, 100)
    assert(a:get(1, 1) == 1)
    same(a:t():copy(), {{1, 3}, {2, 4}})
    local r = a:raw()
    assert(r.rows == 2 and r.cols == 2 and r:device() == dev and r:dtype() == "float32")
    assert(matrix(1, 2, {1, 2}, "uint8"):raw():dtype() == "uint8")
    for _, other in ipairs(ids) do
      local b = a:to(other)
      assert(b:device() == device(other) and not rawequal(b, a))
      same(b, {{1, 2}, {3, 4}}, "to " .. other)
      same(a:t():to(other), {{1, 3}, {2, 4}})
      same(b:to(id), {{1, 2}, {3, 4}}, "back from " .. other)
    end
    device(id)
  end)

  t.test(D .. "release and <close>", function()
    local a = from{{1, 2}}
    local v = a:t()
    a:release()
    t.raises(function() return a:get(1, 1) end, "released")
    t.raises(function() axpy(1, v, zeros(2, 1)) end, "released")
    assert(tostring(a):find("(released)", 1, true))
    a:release()  -- twice is harmless
    local kept
    do
      local m <close> = ones(2, 2)
      kept = m
      assert(kept:get(1, 1) == 1)
    end
    t.raises(function() return kept:get(1, 1) end, "released")
    assert(sum(ones(2, 2)) == 4)
  end)

  t.test(D .. "operators allocate their result", function()
    local a = from{{1, 2}, {3, 4}}
    local b = from{{10, 20}, {30, 40}}
    same(a + b, {{11, 22}, {33, 44}})
    same(b - a, {{9, 18}, {27, 36}})
    same(-a, {{-1, -2}, {-3, -4}})
    same(2 * a, {{2, 4}, {6, 8}})
    same(a * 0.5, {{0.5, 1}, {1.5, 2}})
    same(a * b, {{70, 100}, {150, 220}})
    same(a:t() * b, {{100, 140}, {140, 200}})
    same(from{{1, 2, 3}} * from{1, 1, 1}, {{6}})
    same(a, {{1, 2}, {3, 4}}, "a unchanged")
    same(b, {{10, 20}, {30, 40}}, "b unchanged")
    local s = a + b
    assert(not rawequal(s, a) and not rawequal(s, b) and s:device() == dev)
  end)
end

t.done()

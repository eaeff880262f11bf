-- The vocabulary a Torch7/PyTorch/NumPy user reaches for (issue 25 item 2), on
-- every device: clone, item, eye, linspace, arange, randperm, reshape/view,
-- transpose, narrow/select/sub, cat, the comparisons, pow and ^, max/min with
-- their indices, and broadcasting of a row, a column or a 1×1 in the
-- elementwise operators. Each against hand-computed values or float64 on the host.
local t = dofile("tests/lua/t.lua")

local ids = t.devices()
device("cpu")

local host = t.host

local function same(got, want, what, tol)
  tol = tol or 0
  assert(#got == #want, ("%s: %d rows, expected %d"):format(what, #got, #want))
  for i = 1, #want do
    assert(#got[i] == #want[i], ("%s: row %d has %d values, expected %d"):format(what, i, #got[i], #want[i]))
    for j = 1, #want[i] do
      local g, w = got[i][j], want[i][j]
      local ok = (g ~= g and w ~= w) or math.abs(g - w) <= tol * (1 + math.abs(w))
      assert(ok, ("%s: (%d, %d) is %s, expected %s"):format(what, i, j, tostring(g), tostring(w)))
    end
  end
end

local function col(list) local r = {} for i, v in ipairs(list) do r[i] = {v} end return r end

-- A rows×cols table of deterministic values (a small LCG; independent of vela's generators).
local function values(rows, cols, seed, lo, hi)
  local s, out = seed, {}
  for i = 1, rows do
    out[i] = {}
    for j = 1, cols do
      s = (s * 1103515245 + 12345) % 2147483648
      out[i][j] = lo + (hi - lo) * (s / 2147483648)
    end
  end
  return out
end

-- The float32 value of a float64 number (as from() stores it).
local function f32(v) return string.unpack("f", string.pack("f", v)) end
local function f32t(tab)
  local r = {}
  for i, row in ipairs(tab) do r[i] = {} for j, v in ipairs(row) do r[i][j] = f32(v) end end
  return r
end

local perm_cpu

for _, id in ipairs(ids) do
  t.test(id .. ": clone and item; x:abs() rewrites x, clone keeps it", function()
    local x = from({{-1, 2}, {3, -4}}, "float32", id)
    local y = clone(x)
    assert(y ~= x and y:device() == x:device())
    y:abs()
    same(host(x), {{-1, 2}, {3, -4}}, "x after clone(x):abs()")
    same(host(y), {{1, 2}, {3, 4}}, "clone(x):abs()")
    local z = x:clone():exp()
    same(host(x), {{-1, 2}, {3, -4}}, "x after x:clone():exp()")
    x:abs()
    same(host(x), {{1, 2}, {3, 4}}, "x:abs() rewrites x")
    assert(item(from({{2.5}}, "float32", id)) == 2.5 and from({{-3}}, "float32", id):item() == -3)
    t.raises(function() item(zeros(2, 1, "float32", id)) end, "item: x is 2×1 but must be 1×1")
    assert(z:shape() == 2)
  end)

  t.test(id .. ": eye, linspace, arange, randperm", function()
    same(host(eye(3, id)), {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, "eye(3)")
    same(host(eye(2, 3, id)), {{1, 0, 0}, {0, 1, 0}}, "eye(2, 3)")
    same(host(eye(3, 2, id)), {{1, 0}, {0, 1}, {0, 0}}, "eye(3, 2)")
    assert(eye(0, id):shape() == 0)
    same(host(linspace(0, 1, 5, id)), col{0, 0.25, 0.5, 0.75, 1}, "linspace(0, 1, 5)")
    same(host(linspace(-1, 2, 4, id)), col{-1, 0, 1, 2}, "linspace(-1, 2, 4)")
    same(host(linspace(3, 3, 1, id)), col{3}, "linspace(3, 3, 1)")
    local r, c = linspace(0, 1, 7, id):shape()
    assert(r == 7 and c == 1, "linspace is a column vector")
    same(host(arange(1, 4, id)), col{1, 2, 3}, "arange(1, 4)")
    same(host(arange(0, 1, 0.25, id)), col{0, 0.25, 0.5, 0.75}, "arange(0, 1, 0.25)")
    same(host(arange(5, 0, -2, id)), col{5, 3, 1}, "arange(5, 0, -2)")
    assert(arange(3, 1, id):shape() == 0, "an empty range")
    t.raises(function() arange(0, 1, 0, id) end, "arange:", "step")
    -- found by the fuzzer (seed 1101932287): the count was formatted with a flag lua_pushfstring lacks
    t.raises(function() arange(3.04, 9.007199254741e+15, id) end, "arange:", "at most 2^24")
    local p = host(randperm(50, 42, id))
    local seen = {}
    for i = 1, 50 do
      local v = p[i][1]
      assert(v >= 1 and v <= 50 and v == math.floor(v) and not seen[v], "randperm(50) is a permutation of 1..50")
      seen[v] = true
    end
    if id == "cpu" then perm_cpu = p else same(p, perm_cpu, "randperm(50, 42) on " .. id .. " as on the cpu") end
    local q = host(randperm(50, 43, id))
    local differ = false
    for i = 1, 50 do differ = differ or q[i][1] ~= p[i][1] end
    assert(differ, "another seed, another permutation")
  end)

  t.test(id .. ": reshape and view: a view where the layout allows, a copy where it demands", function()
    local x = from({1, 2, 3, 4, 5, 6}, "float32", id)
    local y = reshape(x, 2, 3)
    same(host(y), {{1, 3, 5}, {2, 4, 6}}, "reshape(x, 2, 3) (column-major)")
    y:set(1, 2, 30)
    assert(x:get(3) == 30, "reshape of a dense x is a view")
    same(host(x:reshape(3, -1)), {{1, 4}, {2, 5}, {30, 6}}, "x:reshape(3, -1)")
    local v = x:view(-1, 1):view(1, 6)
    v:set(1, 1, 10)
    assert(x:get(1) == 10, "x:view(r, c) is a view")
    local m = from({{1, 2, 3}, {4, 5, 6}}, "float32", id)
    local tr = m:t():reshape(2, 3)  -- mᵀ is 3×2 {{1,4},{2,5},{3,6}}: column-major 1 2 3 4 5 6
    same(host(tr), {{1, 3, 5}, {2, 4, 6}}, "reshape of a transposed view")
    tr:set(1, 1, 100)
    assert(m:get(1, 1) == 1, "reshape of a transposed view is a copy")
    t.raises(function() m:t():view(2, 3) end, "m:view:", "x:reshape(2, 3) copies")
    t.raises(function() reshape(m, 4, 2) end, "reshape: x is 2×3 (6 elements)")
    t.raises(function() reshape(m, 4, -1) end, "reshape: 6 elements do not make whole rows of 4")
    same(host(m:view(1, 2, 2, 2)), {{2, 3}, {5, 6}}, "the block view x:view(i, j, rows, cols) stays")
  end)

  t.test(id .. ": transpose, narrow, select, sub, cat", function()
    local m = from({{1, 2, 3}, {4, 5, 6}}, "float32", id)
    local tm = transpose(m)
    same(host(tm), {{1, 4}, {2, 5}, {3, 6}}, "transpose(m)")
    tm:set(1, 1, 9)
    assert(m:get(1, 1) == 1, "transpose materializes")
    same(host(m:transpose(1, 2)), {{1, 4}, {2, 5}, {3, 6}}, "m:transpose(1, 2)")
    same(host(narrow(m, 2, 2, 2)), {{2, 3}, {5, 6}}, "narrow(m, 2, 2, 2)")
    same(host(m:narrow(1, 2, 1)), {{4, 5, 6}}, "m:narrow(1, 2, 1)")
    t.raises(function() narrow(m, 2, 3, 2) end, "narrow: columns 3..4")
    same(host(m:select(1, 2)), {{4, 5, 6}}, "m:select(1, 2)")
    same(host(m:select(2, 3)), {{3}, {6}}, "m:select(2, 3)")
    same(host(m:sub(1, 2, 2, 3)), {{2, 3}, {5, 6}}, "m:sub(1, 2, 2, 3)")
    same(host(m:sub(-1, -1)), {{4, 5, 6}}, "m:sub(-1, -1)")
    same(host(m:sub(1, -1, -2, -1)), {{2, 3}, {5, 6}}, "m:sub(1, -1, -2, -1)")
    local s = m:sub(2, 2, 1, 1)
    s:set(1, 1, 40)
    assert(m:get(2, 1) == 40, "sub is a view")
    t.raises(function() m:sub(1, 3) end, "m:sub: rows 1..3")
    local a, b = from({{1}, {2}}, "float32", id), from({{3, 4}, {5, 6}}, "float32", id)
    same(host(cat(a, b)), {{1, 3, 4}, {2, 5, 6}}, "cat(a, b): side by side")
    same(host(cat(b, from({{7, 8}}, "float32", id), 1)), {{3, 4}, {5, 6}, {7, 8}}, "cat(b, r, 1): stacked")
    same(host(cat{a, a, b}), {{1, 1, 3, 4}, {2, 2, 5, 6}}, "cat{a, a, b}")
    same(host(cat(a, a, 1)), col{1, 2, 1, 2}, "cat of two columns along dim 1")
    t.raises(function() cat(a, from({{1, 2, 3}}, "float32", id)) end, "cat: matrix 2 is 1×3 but matrix 1 is 2×1")
  end)

  t.test(id .. ": comparisons and pow against float64, with numbers and broadcasts", function()
    local at, bt = values(5, 4, 7, -2, 2), values(5, 4, 11, -2, 2)
    at[2][3] = bt[2][3]  -- a tie
    at, bt = f32t(at), f32t(bt)
    local a, b = from(at, "float32", id), from(bt, "float32", id)
    local rows, cols = 5, 4
    local rel = {gt = function(p, q) return p > q end, lt = function(p, q) return p < q end,
                 ge = function(p, q) return p >= q end, le = function(p, q) return p <= q end,
                 eq = function(p, q) return p == q end, ne = function(p, q) return p ~= q end}
    for name, f in pairs(rel) do
      local want, wantn, wantr = {}, {}, {}
      for i = 1, rows do
        want[i], wantn[i], wantr[i] = {}, {}, {}
        for j = 1, cols do
          want[i][j] = f(at[i][j], bt[i][j]) and 1 or 0
          wantn[i][j] = f(at[i][j], f32(0.5)) and 1 or 0
          wantr[i][j] = f(at[i][j], bt[1][j]) and 1 or 0
        end
      end
      same(host(vela[name](a, b)), want, name .. "(a, b)")
      same(host(a[name](a, b)), want, "a:" .. name .. "(b)")
      same(host(vela[name](a, 0.5)), wantn, name .. "(a, 0.5)")
      same(host(vela[name](a, b:row(1))), wantr, name .. "(a, b:row(1)), a row broadcast")
      local c = zeros(rows, cols, "float32", id)
      assert(rawequal(vela[name](a, b, c), c), name .. "(a, b, c) returns c")
      same(host(c), want, name .. " into c")
    end
    assert(not (a == clone(a)) and a == a, "== is identity, not a comparison of values")
    local x = from({{1, -2}, {0.5, 3}}, "float32", id)
    same(host(x ^ 2), {{1, 4}, {0.25, 9}}, "x ^ 2")
    same(host(x ^ 3), {{1, -8}, {0.125, 27}}, "x ^ 3")
    same(host(2 ^ x), {{2, 0.25}, {2 ^ 0.5, 8}}, "2 ^ x", 1e-6)
    same(host(x ^ from({{2, 3}}, "float32", id)), {{1, -8}, {0.25, 27}}, "x ^ row")
    local p = from({{0.3, 1.7}, {2.2, 0.9}}, "float32", id)
    local ph = host(p)
    local want = {}
    for i = 1, 2 do want[i] = {} for j = 1, 2 do want[i][j] = ph[i][j] ^ f32(1.5) end end
    same(host(pow(p, 1.5, zeros(2, 2, "float32", id))), want, "pow(p, 1.5, y)", 1e-6)
    local q = clone(x)
    assert(rawequal(q:pow(2), q))
    same(host(q), {{1, 4}, {0.25, 9}}, "x:pow(2) in place")
    pow(q, 0.5)
    same(host(q), {{1, 2}, {0.5, 3}}, "pow(q, 0.5) into q", 1e-7)
    local neg = host(from({-8}, "float32", id) ^ (1 / 3))
    assert(neg[1][1] ~= neg[1][1], "a negative base with a fractional power is NaN")
  end)

  t.test(id .. ": max and min along a dimension give values and indices, as Torch", function()
    local xt = f32t(values(6, 5, 3, -5, 5))
    xt[4][2] = xt[1][2]  -- a tie in column 2 of the maximum is not guaranteed; put one in row 2 too
    local x = from(xt, "float32", id)
    for _, dim in ipairs{1, 2} do
      for _, what in ipairs{"max", "min"} do
        local v, i = vela[what](x, dim)
        local vh, ih = host(v), host(i)
        local n = dim == 1 and 5 or 6
        for k = 1, n do
          local best, at = nil, nil
          for l = 1, (dim == 1 and 6 or 5) do
            local e = dim == 1 and xt[l][k] or xt[k][l]
            if best == nil or (what == "max" and e > best) or (what == "min" and e < best) then best, at = e, l end
          end
          local gv = dim == 1 and vh[1][k] or vh[k][1]
          local gi = dim == 1 and ih[1][k] or ih[k][1]
          assert(gv == best, ("%s(x, %d) value %d is %s, expected %s"):format(what, dim, k, gv, best))
          assert(gi == at, ("%s(x, %d) index %d is %s, expected %s"):format(what, dim, k, gi, at))
        end
        local r, c = i:shape()
        assert(r == (dim == 1 and 1 or 6) and c == (dim == 1 and 5 or 1), "indices have the values' shape")
      end
    end
    local v, i = x:max(1)
    assert(v.cols == 5 and i.cols == 5, "x:max(1) gives both")
    assert(type(max(x)) == "number" and select("#", max(x)) == 1, "max(x) is one number")
    local small = from({{1, 5}, {3, 2}}, "float32", id)
    local sv, si = max(small, 1)
    same(host(sv), {{3, 5}}, "max values by hand")
    same(host(si), {{2, 1}}, "max indices by hand")
    sv, si = min(small, 2)
    same(host(sv), col{1, 2}, "min values along rows")
    same(host(si), col{1, 2}, "min indices along rows")
  end)

  t.test(id .. ": broadcasting a row, a column or a 1×1 in + - / and the kernels", function()
    local at = f32t(values(4, 3, 5, -3, 3))
    local a = from(at, "float32", id)
    local cv, rv = from({10, 20, 30, 40}, "float32", id), from({{1, 2, 3}}, "float32", id)
    local function want(f)
      local r = {}
      for i = 1, 4 do r[i] = {} for j = 1, 3 do r[i][j] = f(at[i][j], i, j) end end
      return r
    end
    local cvals, rvals = {10, 20, 30, 40}, {1, 2, 3}
    same(host(a + cv), want(function(e, i) return e + cvals[i] end), "a + column", 1e-7)
    same(host(cv + a), want(function(e, i) return cvals[i] + e end), "column + a", 1e-7)
    same(host(a - rv), want(function(e, _, j) return e - rvals[j] end), "a - row", 1e-7)
    same(host(a / rv), want(function(e, _, j) return e / rvals[j] end), "a / row", 1e-7)
    same(host(a + from({{2}}, "float32", id)), want(function(e) return e + 2 end), "a + 1×1", 1e-7)
    same(host(cv + rv), {{11, 12, 13}, {21, 22, 23}, {31, 32, 33}, {41, 42, 43}}, "column + row: the outer sum")
    local y = zeros(4, 3, "float32", id)
    mul(a, cv, y)
    same(host(y), want(function(e, i) return e * cvals[i] end), "mul(a, column, y)", 1e-7)
    sub(a, a:row(2), y)
    same(host(y), want(function(e, _, j) return e - at[2][j] end), "sub(a, a:row(2), y): a view, no copy", 1e-7)
    local tv = rv:t():t()  -- a transposed view of a transposed view: still 1×3
    same(host(a + tv), want(function(e, _, j) return e + rvals[j] end), "a + a row held transposed", 1e-7)
    t.raises(function() return a + from({1, 2, 3}, "float32", id) end, "a is 4×3 but b is 3×1", "broadcast")
    t.raises(function() add(a, cv) end, "add: c is 4×1 but a (4×3) with b (4×1) broadcasts to 4×3")
  end)
end

t.test("every new name has a ?name entry whose example runs", function()
  local names = {"clone", "Matrix:clone", "item", "Matrix:item", "eye", "linspace", "arange", "randperm", "reshape",
                 "Matrix:reshape", "Matrix:view", "transpose", "Matrix:transpose", "narrow", "Matrix:narrow",
                 "Matrix:select", "Matrix:sub", "cat", "gt", "lt", "ge", "le", "eq", "ne", "Matrix:gt", "Matrix:eq",
                 "pow", "Matrix:pow", "max", "min", "mul", "div", "add", "sub"}
  for _, name in ipairs(names) do
    local sig, text = vela.doc(name)
    assert(sig and text, "no help entry for " .. name)
    if not name:find(":") then
      local code = text:match("Example: (.-)%s*%-%-") or text:match("Example: (.-)%s*$")
      assert(code, name .. ": no example in " .. text)
      local chunk = load("return " .. code) or load(code)
      assert(chunk, name .. ": the example does not parse: " .. code)
      local ok, err = pcall(chunk)
      assert(ok, name .. ": the example fails: " .. code .. ": " .. tostring(err))
    end
  end
  local _, eq_text = vela.doc("eq")
  assert(eq_text:find("identity", 1, true), "?eq says == is identity")
  local _, abs_text = vela.doc("Matrix:abs")
  assert(abs_text:find("clone", 1, true), "?Matrix:abs names clone")
  local _, reshape_text = vela.doc("reshape")
  assert(reshape_text:find("VIEW", 1, true) and reshape_text:find("COPY", 1, true), "?reshape says view or copy")
end)

t.done()

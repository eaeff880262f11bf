-- Every kernel from Lua, in every argument form, on every usable device:
-- results against values computed by hand (or with Lua's own math in
-- float64), and each kernel returns the very userdata it wrote into.
local t = dofile("tests/lua/t.lua")

local ids = t.devices()

-- m's values (rows as on paper) are within tol (relative) of `rows`.
local function near(m, rows, tol, what)
  local got = m:totable()
  assert(#got == #rows, ("%s: %d rows, expected %d"):format(what or "near", #got, #rows))
  for i = 1, #rows do
    assert(#got[i] == #rows[i], ("%s: row %d has %d values, expected %d"):format(what or "near", i, #got[i], #rows[i]))
    for j = 1, #rows[i] do
      t.near(got[i][j], rows[i][j], tol or 1e-6, ("%s (%d, %d)"):format(what or "near", i, j))
    end
  end
end

-- Applies f to each element of a table of rows.
local function map(rows, f)
  local out = {}
  for i, r in ipairs(rows) do
    out[i] = {}
    for j, v in ipairs(r) do out[i][j] = f(v) end
  end
  return out
end

-- The float64 reference of an op: its row's own (vela.ops[name].ref, double math
-- beside the row in src/core/ops.def, sharing no code with the kernels).
local function ref64(name) return vela.ops[name].ref end

for _, id in ipairs(ids) do
  device(id)
  local D = id .. ": "

  t.test(D .. "mm in both forms, every transpose", function()
    local a, b = from{{1, 2}, {3, 4}}, from{{5, 6}, {7, 8}}
    local c = ones(2, 2)
    assert(rawequal(mm(2, a, b, 3, c), c))
    near(c, {{41, 47}, {89, 103}})
    assert(rawequal(mm(a, b, c), c))
    near(c, {{19, 22}, {43, 50}})
    near(mm(a:t(), b, zeros(2, 2)), {{26, 30}, {38, 44}})
    near(mm(a, b:t(), zeros(2, 2)), {{17, 23}, {39, 53}})
    near(mm(a:t(), b:t(), zeros(2, 2)), {{23, 31}, {34, 46}})
    near(mm(from{{1, 2, 3}}, from{1, 2, 3}, zeros(1, 1)), {{14}})
    near(mm(from{1, 2}, from{{3, 4, 5}}, zeros(2, 3)), {{3, 4, 5}, {6, 8, 10}})
    -- β = 0 never reads c, so an uninitialised (NaN) c is fine
    near(mm(1, a, b, 0, matrix(2, 2, 0 / 0)), {{19, 22}, {43, 50}})
    -- α = 0 leaves β·c
    near(mm(0, a, b, 2, ones(2, 2)), {{2, 2}, {2, 2}})
    -- into a view of a bigger matrix
    local big = zeros(3, 3)
    mm(a, b, big:view(2, 2, 2, 2))
    near(big, {{0, 0, 0}, {0, 19, 22}, {0, 43, 50}})
    -- empty inner dimension: c ← β·c
    near(mm(1, zeros(2, 0), zeros(0, 2), 0.5, ones(2, 2)), {{0.5, 0.5}, {0.5, 0.5}})
  end)

  t.test(D .. "mv and rk", function()
    local a = from{{1, 2}, {3, 4}}
    local y = from{1, 2}
    assert(rawequal(mv(2, a, ones(2, 1), 1, y), y))
    near(y, {{7}, {16}})
    near(mv(a, ones(2, 1), zeros(2, 1)), {{3}, {7}})
    near(mv(a:t(), ones(2, 1), zeros(2, 1)), {{4}, {6}})
    near(mv(a, from{{1, 1}}, zeros(1, 2)), {{3, 7}}, nil, "row vectors")
    local m = ones(2, 3)
    assert(rawequal(rk(2, from{1, 2}, from{3, 4, 5}, m), m))
    near(m, {{7, 9, 11}, {13, 17, 21}})
    near(rk(from{{1, 2}}, from{3, 4, 5}, zeros(2, 3)), {{3, 4, 5}, {6, 8, 10}})
    near(rk(from{1, 2}, from{3, 4}, zeros(2, 2):t()), {{3, 4}, {6, 8}}, nil, "transposed a")
  end)

  t.test(D .. "level 1: axpy axpby scal copy swap fill", function()
    local x, y = from{1, 2}, from{10, 20}
    assert(rawequal(axpy(2, x, y), y))
    near(y, {{12}, {24}})
    assert(rawequal(axpby(2, x, 3, y), y))
    near(y, {{38}, {76}})
    local m = from{{1, 2}, {3, 4}}
    near(axpy(-1, m, from{{1, 1}, {1, 1}}), {{0, -1}, {-2, -3}}, nil, "whole matrices")
    near(axpy(1, m:t(), zeros(2, 2)), {{1, 3}, {2, 4}}, nil, "transposed x")
    near(axpy(1, from{1, 2}, zeros(1, 2)), {{1, 2}}, nil, "column into row")
    assert(rawequal(scal(3, x), x))
    near(x, {{3}, {6}})
    local z = zeros(2, 1)
    assert(rawequal(copy(x, z), z))
    near(z, {{3}, {6}})
    local p, q = from{1, 2}, from{3, 4}
    assert(rawequal(swap(p, q), q))
    near(p, {{3}, {4}})
    near(q, {{1}, {2}})
    assert(rawequal(fill(p, 2.5), p))
    near(p, {{2.5}, {2.5}})
    near(fill(zeros(2, 3):row(2), 1), {{1, 1, 1}})
  end)

  t.test(D .. "reductions return numbers", function()
    assert(dot(from{1, 2, 3}, from{4, 5, 6}) == 32)
    assert(dot(from{1, 2, 3}, from{{4, 5, 6}}) == 32)
    t.near(nrm2(from{3, 4}), 5)
    t.near(nrm2(from{{1, 2}, {2, 4}}), 5)
    assert(asum(from{-1, 2, -3}) == 6)
    assert(sum(from{-1, 2, -3}) == -2)
    assert(sum(from{{1, 2}, {3, 4}}) == 10)
    assert(sum(zeros(0, 3)) == 0)
    assert(imax(from{1, -5, 3}) == 2)
    assert(imax(from{{1, 2}, {-7, 3}}) == 2, "column-major order")
    assert(imax(from{4, -4, 1}) == 1, "first on ties")
    assert(math.type(imax(from{1})) == "integer")
    local big = ones(1000, 10)
    assert(sum(big) == 10000)
  end)

  t.test(D .. "elementwise functions, into y or in place", function()
    local xs = {{-1, 0, 0.5, 2}}
    local pos = {{0.25, 1, 2, 9}}
    local cases = {
      {"tanh", xs}, {"sigmoid", xs}, {"relu", xs}, {"exp", xs}, {"log", pos}, {"sqrt", pos}, {"sqr", xs},
      {"inv", pos}, {"abs", xs},
    }
    for k, c in ipairs(cases) do
      local f, ref, input = vela[c[1]], ref64(c[1]), c[2]
      local x, y = from(input), zeros(1, 4)
      assert(rawequal(f(x, y), y))
      near(y, map(input, ref), 1e-6, "case " .. k)
      near(x, input, 0, "case " .. k .. " input unchanged")
      assert(rawequal(f(x), x))
      near(x, map(input, ref), 1e-6, "case " .. k .. " in place")
      near(f(from(input):t(), zeros(4, 1)), {{ref(input[1][1])}, {ref(input[1][2])}, {ref(input[1][3])},
        {ref(input[1][4])}}, 1e-6, "case " .. k .. " on a transposed view")
    end
    local x = from{{1, 2}, {3, 4}}
    near(linear_frac(x, 2, 1, 0, 1), {{3, 5}, {7, 9}})
    local y = zeros(2, 2)
    assert(rawequal(linear_frac(from{{1, 2}, {3, 4}}, y, 1, 0, 1, 2), y))
    near(y, {{1 / 3, 2 / 4}, {3 / 5, 4 / 6}})
  end)

  t.test(D .. "derivatives: tanh_prime and sigmoid_prime from the activation, relu_prime from z", function()
    local a = {{-0.5, 0, 0.25, 0.9}}
    near(tanh_prime(from(a), zeros(1, 4)), map(a, ref64("tanh_prime")))
    near(sigmoid_prime(from(a), zeros(1, 4)), map(a, ref64("sigmoid_prime")))
    local z = {{-2, 0, 0.5, 3}}
    near(relu_prime(from(z), zeros(1, 4)), {{0, 0, 1, 1}})
    local m = from(z)
    assert(rawequal(relu_prime(m), m))
    near(m, {{0, 0, 1, 1}})
    -- chain: tanh_prime(tanh(z)) is the derivative at z
    local zz = from{{0.3, -1.2}}
    local act = tanh(zz, zeros(1, 2))
    near(tanh_prime(act), {{vela.ops.tanh.dref(0.3), vela.ops.tanh.dref(-1.2)}}, 1e-5)
  end)

  t.test(D .. "every activation and its fused backward step against float64", function()
    local z = {{-4, -1, -0.01, 0, 0.01, 1, 4}}
    -- f′(z) by central differences of the float64 f: independent of the table's derivative
    -- column; at 0 (relu's and leaky_relu's kink) the table's choice, the left value
    local function d64(g, v) local h = 1e-6 return (g(v + h) - g(v - h)) / (2 * h) end
    local da = {{0.5, -2, 3, 1, -1, 0.25, 2}}
    for k = 2, #vela.activations do
      local name = vela.activations[k]
      local op = vela.ops[name]
      near(vela[name](from(z), zeros(1, 7)), map(z, op.ref), 1e-6, name)
      local x = op.from == "z" and from(z) or vela[name](from(z), zeros(1, 7))
      local want = {{}}
      for j, v in ipairs(z[1]) do want[1][j] = da[1][j] * (v == 0 and op.dref(v) or d64(op.ref, v)) end
      local delta = zeros(1, 7)
      assert(rawequal(vela[name .. "_backward"](from(da), x, delta), delta))
      near(delta, want, 1e-4, name .. "_backward")
    end
  end)

  t.test(D .. "mul div add sub, into c or into b", function()
    local a, b = from{1, 2, 3}, from{4, 5, 8}
    local c = zeros(3, 1)
    assert(rawequal(mul(a, b, c), c))
    near(c, {{4}, {10}, {24}})
    near(div(a, b, zeros(3, 1)), {{0.25}, {0.4}, {0.375}})
    near(add(a, b, zeros(3, 1)), {{5}, {7}, {11}})
    near(sub(a, b, zeros(3, 1)), {{-3}, {-3}, {-5}})
    assert(rawequal(add(a, b), b))
    near(b, {{5}, {7}, {11}})
    near(mul(from{{1, 2}, {3, 4}}, from{{1, 2}, {3, 4}}:t()), {{1, 6}, {6, 16}}, nil, "matrices, transposed b")
  end)

  t.test(D .. "softmax per column, stable", function()
    local x = from{{1, 0, 1000}, {2, 0, 1001}, {3, 0, 1000}}
    local y = zeros(3, 3)
    assert(rawequal(softmax(x, y), y))
    local s = math.exp(1) + math.exp(2) + math.exp(3)
    local s2 = 2 + math.exp(1)
    near(y, {{math.exp(1) / s, 1 / 3, 1 / s2}, {math.exp(2) / s, 1 / 3, math.exp(1) / s2},
      {math.exp(3) / s, 1 / 3, 1 / s2}}, 1e-6)
    assert(rawequal(softmax(x), x))
    near(x, y:totable(), 1e-6)
  end)

  t.test(D .. "softmax_xent: gradient and loss", function()
    local z = from{{1, 0}, {2, 0}, {3, 0}}
    local labels = from{{3, 1}}
    local dz, loss = zeros(3, 2), zeros(2, 1)
    assert(rawequal(softmax_xent(z, labels, dz, loss), dz))
    local s = math.exp(1) + math.exp(2) + math.exp(3)
    local p = {math.exp(1) / s, math.exp(2) / s, math.exp(3) / s}
    near(dz, {{p[1] / 2, (1 / 3 - 1) / 2}, {p[2] / 2, 1 / 6}, {(p[3] - 1) / 2, 1 / 6}}, 1e-6)
    near(loss, {{-math.log(p[3])}, {math.log(3)}}, 1e-6)
    -- explicit scale, no loss; uint8 labels
    softmax_xent(z, matrix(1, 2, {3, 1}, "uint8"), dz, nil, 1)
    near(dz, {{p[1], 1 / 3 - 1}, {p[2], 1 / 3}, {p[3] - 1, 1 / 3}}, 1e-6)
  end)

  t.test(D .. "argmax, argmin, gather_cols, add_bias", function()
    local idx = zeros(1, 2)
    assert(rawequal(argmax(from{{1, 5}, {3, 2}, {2, 4}}, idx), idx))
    near(idx, {{2, 1}}, 0)
    assert(rawequal(argmin(from{{1, 5}, {3, 2}, {2, 4}}, idx), idx))
    near(idx, {{1, 2}}, 0)
    local src = from{{1, 2, 3}, {4, 5, 6}}
    local dst = zeros(2, 2)
    assert(rawequal(gather_cols(src, from{3, 1}, dst), dst))
    near(dst, {{3, 1}, {6, 4}}, 0)
    gather_cols(matrix(2, 3, {2, 4, 6, 8, 10, 12}, "uint8"), from{{2, 2}}, dst, 0.5)
    near(dst, {{3, 3}, {4, 4}}, 0)
    local y = zeros(2, 3)
    assert(rawequal(add_bias(from{1, 2}, y), y))
    near(y, {{1, 1, 1}, {2, 2, 2}}, 0)
  end)

  t.test(D .. "dense: act(w·x + b) for every activation", function()
    local w, x, b = from{{1, -1}, {2, 0}}, from{{1, 2}, {3, 4}}, from{1, -3}
    local lin = {{-1, -1}, {-1, 1}}
    local y = zeros(2, 2)
    assert(rawequal(dense(w, x, b, y), y))
    near(y, lin)
    near(dense(w, x, b, y, "identity"), lin)
    near(dense(w, x, b, y, "relu"), {{0, 0}, {0, 1}})
    near(dense(w, x, b, y, "tanh"), map(lin, ref64("tanh")))
    near(dense(w, x, b, y, "sigmoid"), map(lin, ref64("sigmoid")))
    near(dense(w:t(), x, b, y), {{8, 11}, {-4, -5}}, nil, "transposed w")
  end)
end

t.done()

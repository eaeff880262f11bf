-- The float64 references of the op tables (vela.ops[name].ref and .dref, the
-- VELA_REF / VELA_BIN_REF rows of src/core/ops.def and binary.def): complete
-- (every op has one, every activation a derivative), equal to values computed
-- by hand (Python's math module in double, written out here), each derivative
-- row agreeing with central differences of its forward row, and the errors of
-- a bad call. No device: the references are host math.
local t = dofile("tests/lua/t.lua")

local ops = vela.ops

t.test("every op of both tables has a float64 reference, every activation its derivative", function()
  local n = 0
  for name, op in pairs(ops) do
    n = n + 1
    assert(type(op.ref) == "function", name .. " has no ref")
    assert(op.operands == 1 or op.operands == 2, name)
    local args = {0.5}
    if op.operands == 2 then args[2] = 2 end
    for k = 1, op.params do args[#args + 1] = ({1, 0, 0, 1})[k] end
    assert(math.type(op.ref(table.unpack(args))) == "float", name .. ".ref gives no number")
  end
  assert(n >= 14 + 7 + 11, "vela.ops has " .. n .. " entries")
  assert(vela.activations[1] == "identity")
  for k = 2, #vela.activations do
    local name = vela.activations[k]
    local op = ops[name]
    assert(op and op.activation and type(op.dref) == "function", name .. ": no derivative reference")
    assert(ops[name .. "_prime"] and ops[name .. "_prime"].ref, name .. "_prime: no reference")
    assert(op.from == "a" or op.from == "z", name)
  end
  for _, name in ipairs{"mul", "div", "add", "sub", "gt", "lt", "ge", "le", "eq", "ne", "pow"} do
    assert(ops[name] and ops[name].operands == 2, name)
  end
end)

t.test("the references equal values computed by hand", function()
  local cases = {
    {"tanh", {0.5}, 0.46211715726000974}, {"sigmoid", {1}, 0.7310585786300049},
    {"sigmoid", {-800}, 0}, {"relu", {-3}, 0}, {"relu", {2}, 2},
    {"elu", {-1}, -0.6321205588285577}, {"elu", {3}, 3}, {"gelu", {1}, 0.8411919906082768},
    {"gelu", {0}, 0}, {"leaky_relu", {-2}, -0.02}, {"softplus", {0}, 0.6931471805599453},
    {"softplus", {100}, 100}, {"exp", {1}, math.exp(1)}, {"log", {math.exp(1)}, 1},
    {"sqrt", {2}, 1.4142135623730951}, {"sqr", {3}, 9}, {"inv", {4}, 0.25}, {"abs", {-2.5}, 2.5},
    {"linear_frac", {1, 2, 1, 0, 1}, 3}, {"linear_frac", {2, 1, 1, 1, 1}, 1},
    -- derivatives, from what the row's `from` says (a: the activation)
    {"tanh_prime", {0.5}, 0.75}, {"sigmoid_prime", {0.25}, 0.1875}, {"relu_prime", {0}, 0},
    {"elu_prime", {-0.5}, 0.5}, {"leaky_relu_prime", {-1}, 0.01}, {"gelu_prime", {0}, 0.5},
    {"softplus_prime", {0}, 0.5},
    {"mul", {3, 4}, 12}, {"div", {1, 4}, 0.25}, {"add", {1, 2}, 3}, {"sub", {1, 2}, -1},
    {"gt", {2, 1}, 1}, {"lt", {2, 1}, 0}, {"ge", {1, 1}, 1}, {"le", {2, 1}, 0}, {"eq", {1, 1}, 1},
    {"eq", {0 / 0, 0 / 0}, 0}, {"ne", {0 / 0, 0 / 0}, 1}, {"pow", {2, 10}, 1024},
  }
  for _, c in ipairs(cases) do
    local got = ops[c[1]].ref(table.unpack(c[2]))
    t.near(got, c[3], 1e-15, c[1] .. "(" .. table.concat(c[2], ", ") .. ")")
  end
  local nan = ops.pow.ref(-8, 1 / 3)
  assert(nan ~= nan, "pow(−8, 1/3) is NaN")
  -- derivatives at the pre-activation z
  t.near(ops.tanh.dref(0.5), 0.7864477329659274, 1e-15, "tanh′(0.5)")
  t.near(ops.elu.dref(-1), 0.36787944117144233, 1e-15, "elu′(−1) = e⁻¹")
  t.near(ops.sigmoid.dref(0), 0.25, 1e-15, "sigmoid′(0)")
  t.near(ops.gelu.dref(0), 0.5, 1e-15, "gelu′(0)")
  t.near(ops.relu.dref(-1), 0, 0, "relu′(−1)")
  t.near(ops.relu.dref(1), 1, 0, "relu′(1)")
end)

t.test("each activation's derivative row agrees with central differences of its forward row", function()
  for k = 2, #vela.activations do
    local op = ops[vela.activations[k]]
    for _, z in ipairs{-3, -0.7, -0.1, 0.3, 1.1, 2.5} do
      local h = 1e-6
      local numeric = (op.ref(z + h) - op.ref(z - h)) / (2 * h)
      t.near(op.dref(z), numeric, 1e-7, vela.activations[k] .. "′(" .. z .. ")")
    end
  end
end)

t.test("a bad call names the function, the argument, expected and got", function()
  t.raises(function() ops.tanh.ref("x") end, "vela.ops.tanh.ref", "x (argument 1) must be a number", "got string")
  t.raises(function() ops.tanh.ref() end, "vela.ops.tanh.ref", "expected 1 argument, got 0")
  t.raises(function() ops.tanh.ref(1, 2) end, "expected 1 argument, got 2")
  t.raises(function() ops.linear_frac.ref(1, 2, 3) end, "vela.ops.linear_frac.ref", "expected 5 arguments, got 3")
  t.raises(function() ops.linear_frac.ref(1, 2, nil, 0, 1) end, "b (argument 3) must be a number", "got nil")
  t.raises(function() ops.pow.ref(2) end, "vela.ops.pow.ref", "expected 2 arguments, got 1")
  t.raises(function() ops.gelu.dref({}) end, "vela.ops.gelu.dref", "got table")
end)

t.done()

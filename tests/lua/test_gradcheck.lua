-- Gradient checks: the analytic gradients of nn (float32, on each device)
-- against numeric gradients of an independent float64 forward pass written
-- here on the host (central differences; the activations' float64 forms are
-- the op table's references, vela.ops[name].ref). Every layer type (linear), every
-- activation and every loss, for W, b and the layer's input; within 1e-3
-- relative to the gradient's scale. The loss values are checked too.
local t = dofile("tests/lua/t.lua")
local nn = require "vela.nn"

local ids = t.devices()

-- ---- the float64 reference ------------------------------------------------

-- The float64 activations nn.gradcheck uses too (the op table's refs, identity z).
local act64 = require("vela.gradcheck").activation
-- Every activation of the op table has a reference (discovered, not listed).
local act_f = {}
for _, name in ipairs(vela.activations) do
  act_f[name] = act64(name)
  assert(act_f[name], "test_gradcheck: no float64 reference for activation " .. name)
end

-- a = act(W·x + b) for a host W (rows of a table), b (a list), x (k×n table).
local function host_layer(W, b, x, act)
  local out, n, m = {}, #x[1], #W
  for i = 1, m do
    out[i] = {}
    for j = 1, n do
      local s = b[i]
      for k = 1, #x do s = s + W[i][k] * x[k][j] end
      out[i][j] = act_f[act](s)
    end
  end
  return out
end

-- Per-sample losses of outputs a (k×n) against 1-based labels.
local function host_losses(a, labels, loss)
  local k, n, out = #a, #a[1], {}
  for j = 1, n do
    if loss == "softmax_xent" then
      local mx = -math.huge
      for i = 1, k do mx = math.max(mx, a[i][j]) end
      local s = 0
      for i = 1, k do s = s + math.exp(a[i][j] - mx) end
      out[j] = -(a[labels[j]][j] - mx - math.log(s))
    else
      local s = 0
      for i = 1, k do
        local y = (i == labels[j]) and 1 or 0
        s = s + (a[i][j] - y) ^ 2
      end
      out[j] = 0.5 * s
    end
  end
  return out
end

local function host_mean_loss(P, x, labels, spec)
  local h = host_layer(P.W1, P.b1, x, spec.act1)
  local a = host_layer(P.W2, P.b2, h, spec.act2)
  local l, s = host_losses(a, labels, spec.loss), 0
  for _, v in ipairs(l) do s = s + v end
  return s / #l, l
end

local function col_list(m)  -- a k×1 matrix as a list
  local out = {}
  for i, r in ipairs(m:to("cpu"):totable()) do out[i] = r[1] end
  return out
end

-- Numeric gradient of the mean loss by central differences over every entry
-- of P[name] (a 2-D table, or a list when `list` is true).
local function numeric(P, name, x, labels, spec, target)
  local h = 1e-6
  local g = {}
  local tbl = target or P[name]
  local function perturb(get, set)
    local v = get()
    set(v + h)
    local lp = host_mean_loss(P, x, labels, spec)
    set(v - h)
    local lm = host_mean_loss(P, x, labels, spec)
    set(v)
    return (lp - lm) / (2 * h)
  end
  for i = 1, #tbl do
    if type(tbl[i]) == "table" then
      g[i] = {}
      for j = 1, #tbl[i] do
        g[i][j] = perturb(function() return tbl[i][j] end, function(v) tbl[i][j] = v end)
      end
    else
      g[i] = perturb(function() return tbl[i] end, function(v) tbl[i] = v end)
    end
  end
  return g
end

-- max |analytic − numeric| relative to max |numeric|.
local function compare(what, analytic, num)
  local flat_a, flat_n = {}, {}
  local function flatten(src, dst)
    for i = 1, #src do
      if type(src[i]) == "table" then
        for j = 1, #src[i] do dst[#dst + 1] = src[i][j] end
      else
        dst[#dst + 1] = src[i]
      end
    end
  end
  flatten(analytic, flat_a)
  flatten(num, flat_n)
  assert(#flat_a == #flat_n, what .. ": sizes differ")
  local diff, scale = 0, 0
  for i = 1, #flat_a do
    diff = math.max(diff, math.abs(flat_a[i] - flat_n[i]))
    scale = math.max(scale, math.abs(flat_n[i]))
  end
  assert(scale > 1e-6, what .. ": the numeric gradient vanishes, the check would prove nothing")
  local rel = diff / scale
  assert(rel <= 1e-3, ("%s: analytic and numeric gradients differ by %.3g relative"):format(what, rel))
end

-- ---- the checks -----------------------------------------------------------

local specs = {}
for _, act in ipairs(vela.activations) do
  specs[#specs + 1] = {act1 = act, act2 = "identity", loss = "softmax_xent"}
  specs[#specs + 1] = {act1 = act, act2 = act, loss = "quadratic"}
end

for _, id in ipairs(ids) do
  device(id)
  for si, spec in ipairs(specs) do
    t.test(("%s: linear(5→4, %s) → linear(4→3, %s) with %s"):format(id, spec.act1, spec.act2, spec.loss), function()
      local l1 = nn.linear(5, 4, spec.act1, {seed = 10 + si})
      local l2 = nn.linear(4, 3, spec.act2, {seed = 20 + si})
      -- Non-zero biases, so that their gradients are exercised from a generic point.
      vela.randn(l1.b, 30 + si); vela.scal(0.3, l1.b)
      vela.randn(l2.b, 40 + si); vela.scal(0.3, l2.b)
      local net = nn.sequential{l1, l2}
      local x = randn(5, 6, 50 + si)
      local labels = from{{1, 3, 2, 3, 1, 2}}
      local lossfn = nn[spec.loss]()

      local z = net:forward(x)
      local lvec = lossfn:forward(z, labels)
      local dout = lossfn:backward()
      local d2 = l2:backward(dout, true)
      local dx = l1:backward(d2, true)

      local P = {W1 = l1.w:to("cpu"):totable(), b1 = col_list(l1.b), W2 = l2.w:to("cpu"):totable(), b2 = col_list(l2.b)}
      local xh = x:to("cpu"):totable()
      local lh = {1, 3, 2, 3, 1, 2}

      -- The loss values themselves.
      local _, host_l = host_mean_loss(P, xh, lh, spec)
      local got = lvec:to("cpu"):totable()[1]
      for j = 1, 6 do t.near(got[j], host_l[j], 1e-4, "loss of sample " .. j) end

      compare("dW2", l2.dw:to("cpu"):totable(), numeric(P, "W2", xh, lh, spec))
      compare("db2", col_list(l2.db), numeric(P, "b2", xh, lh, spec))
      compare("dW1", l1.dw:to("cpu"):totable(), numeric(P, "W1", xh, lh, spec))
      compare("db1", col_list(l1.db), numeric(P, "b1", xh, lh, spec))
      compare("dx", dx:to("cpu"):totable(), numeric(P, nil, xh, lh, spec, xh))
    end)
  end

  t.test(id .. ": net:backward fills the same gradients as the layers one by one", function()
    local net = nn.sequential{nn.linear(5, 4, "tanh", {seed = 1}), nn.linear(4, 3, "identity", {seed = 2})}
    local x, labels = randn(5, 6, 3), from{{1, 2, 3, 1, 2, 3}}
    local lossfn = nn.softmax_xent()
    lossfn:forward(net:forward(x), labels)
    net:backward(lossfn:backward())
    local params = net:params()
    t.near(#params, 4, 0, "four parameters")
    local names = {}
    for i, p in ipairs(params) do names[i] = p.name end
    assert(table.concat(names, " ") == "1.w 1.b 2.w 2.b", table.concat(names, " "))
    -- dW1 from the net equals the layer-by-layer result.
    local dw1 = net.layers[1].dw:copy()
    local d2 = net.layers[2]:backward(lossfn:backward(), true)
    net.layers[1]:backward(d2, false)
    t.near(nrm2(dw1 - net.layers[1].dw), 0, 1e-7, "dW1")
  end)
end

-- ---- nn.gradcheck, the user's check --------------------------------------

for _, id in ipairs(ids) do
  device(id)
  t.test(id .. ": nn.gradcheck passes every activation of nn.linear, a layer and a net", function()
    for k, act in ipairs(vela.activations) do
      local l = nn.linear(5, 4, act, {seed = 60 + k})
      vela.randn(l.b, 70 + k); vela.scal(0.3, l.b)
      local r = nn.gradcheck(l, randn(5, 3, 80 + k), {entries = math.huge})
      assert(r.ok, tostring(r))
      assert(#r == 3 and r[1].name == "w" and r[2].name == "b" and r[3].name == "input", tostring(r))
      assert(r[1].checked == 20 and r[2].checked == 4 and r[3].checked == 15, tostring(r))
      assert(r.worst <= 1e-3 and r.errors.w == r[1].error, tostring(r))
    end
    local net = nn.sequential{nn.linear(6, 5, "tanh", {seed = 1}), nn.linear(5, 4, "relu", {seed = 2}),
                              nn.linear(4, 3, {seed = 3})}
    local r = nn.gradcheck(net, randn(6, 4, 9))
    assert(r.ok, tostring(r))
    local names = {}
    for i, row in ipairs(r) do names[i] = row.name end
    assert(table.concat(names, " ") == "1.w 1.b 2.w 2.b 3.w 3.b input", table.concat(names, " "))
    assert(tostring(r):find("backward agrees", 1, true), tostring(r))
  end)

  t.test(id .. ": nn.gradcheck finds a wrong backward (1% off in dW, dx missing a term)", function()
    -- A layer whose backward scales dW by 1.01: the check must see a 1e-2 error in w and none in b.
    local l = nn.linear(4, 3, "sigmoid", {seed = 5})
    local wrong = setmetatable({}, {__index = l})
    wrong.forward = function(_, x) return l:forward(x) end
    wrong.backward = function(_, d, need) local dx = l:backward(d, need); vela.scal(1.01, l.dw); return dx end
    wrong.params = function() return l:params() end
    wrong.host_forward = function(_, x, P, ctx) return l:host_forward(x, P, ctx) end
    local r = nn.gradcheck(wrong, randn(4, 5, 6), {entries = math.huge})
    assert(not r.ok, tostring(r))
    t.near(r.errors.w, 0.01, 0.15, "the error in w is the 1% we put there")
    assert(r.errors.b <= 1e-3 and r.errors.input <= 1e-3, tostring(r))
    assert(tostring(r):find("DISAGREES", 1, true), tostring(r))
    -- A backward giving dx without the activation's derivative: the input's error is large.
    local l2 = nn.linear(4, 3, "tanh", {seed = 7})
    local bad = setmetatable({}, {__index = l2})
    bad.forward = function(_, x) return l2:forward(x) end
    bad.backward = function(_, d, need)
      l2:backward(d, need)
      return vela.mm(1, l2.w:t(), d, 0, zeros(4, d.cols, l2.dev))  -- Wᵀ·da, not Wᵀ·δ
    end
    bad.params = function() return l2:params() end
    bad.host_forward = function(_, x, P, ctx) return l2:host_forward(x, P, ctx) end
    local r2 = nn.gradcheck(bad, vela.scal(2, randn(4, 5, 8)))
    assert(r2.errors.input > 0.05, tostring(r2))
  end)

  t.test(id .. ": nn.gradcheck samples `entries` entries of a large parameter", function()
    local l = nn.linear(50, 40, "relu", {seed = 3})
    local r = nn.gradcheck(l, randn(50, 2, 4), {entries = 10})
    assert(r.ok, tostring(r))
    assert(r[1].checked == 10 and r[1].total == 2000, tostring(r))
    assert(r[2].checked == 10 and r[2].total == 40, tostring(r))
  end)
end

t.test("nn.gradcheck: errors name the argument", function()
  device("cpu")
  t.raises(function() nn.gradcheck(42, randn(2, 2)) end, "nn.gradcheck: layer_or_net must be a layer or a net", "number")
  t.raises(function() nn.gradcheck(nn.linear(2, 2), {1, 2}) end, "nn.gradcheck: input must be a matrix", "table")
  t.raises(function() nn.gradcheck(nn.linear(2, 2), randn(2, 2), 5) end, "nn.gradcheck: opts must be a table")
  t.raises(function() nn.gradcheck(nn.linear(2, 2), randn(2, 2), {h = -1}) end, "nn.gradcheck: h must be a positive number")
  t.raises(function() nn.gradcheck(nn.linear(2, 2), randn(2, 2), {entries = 0}) end, "nn.gradcheck: entries must be a positive integer")
  t.raises(function() nn.gradcheck(nn.linear(3, 2), randn(2, 2)) end, "input is 2×2 but the layer takes 3 rows")
  local odd = {forward = function(_, x) return x end, backward = function(_, d) return d end, params = function() return {} end}
  t.raises(function() nn.gradcheck(odd, randn(2, 2)) end, "nn.gradcheck: layer 1", "has no host_forward")
  local sw = map("x / (1.0 + exp(-x))")
  local swp = map("1.0 / (1.0 + exp(-x)) * (1.0 + x * (1.0 - 1.0 / (1.0 + exp(-x))))")
  t.raises(function() nn.gradcheck(nn.linear(2, 2, {f = sw, df = swp}), randn(2, 2)) end,
    "nn.gradcheck:", "has no float64 reference")
end)

t.done()

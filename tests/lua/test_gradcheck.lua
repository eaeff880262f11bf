-- Gradient checks: the analytic gradients of nn (float32, on each device)
-- against numeric gradients of an independent float64 forward pass written
-- here on the host (central differences). Every layer type (linear), every
-- activation and every loss, for W, b and the layer's input; within 1e-3
-- relative to the gradient's scale. The loss values are checked too.
local t = dofile("tests/lua/t.lua")
local nn = require "vela.nn"

local ids = {}
for _, d in ipairs(devices()) do
  if d.usable then ids[#ids + 1] = d.id end
end

-- ---- the float64 reference ------------------------------------------------

local act_f = {
  identity = function(z) return z end,
  relu = function(z) return z > 0 and z or 0 end,
  sigmoid = function(z) return 1 / (1 + math.exp(-z)) end,
  tanh = function(z) return math.tanh(z) end,
  elu = function(z) return z > 0 and z or math.exp(z) - 1 end,
  gelu = function(z) return 0.5 * z * (1 + math.tanh(math.sqrt(2 / math.pi) * (z + 0.044715 * z ^ 3))) end,
  leaky_relu = function(z) return z > 0 and z or 0.01 * z end,
  softplus = function(z) return math.log(1 + math.exp(z)) end,
}
-- Every activation of the op table has a reference here (discovered, not listed).
for _, name in ipairs(vela.activations) do
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

t.done()

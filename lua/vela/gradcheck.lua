-- vela.gradcheck: nn.gradcheck(layer_or_net, input [, opts]), the check of a
-- layer's backward against central differences of a float64 forward pass on
-- the host.
--
-- The scalar checked is L = Σᵢⱼ rᵢⱼ·outᵢⱼ for a fixed pseudo-random r (values
-- in [−1, 1), from rand with opts.seed, the same on every device), so every
-- output element takes part and ∂L/∂out = r is what backward receives.
--
--   analytic: out = net:forward(x) on the device (float32); the layers'
--             backward from r, last to first, each asked for dx; every
--             parameter's gradient (p[2] of params()) and dx read back.
--   numeric:  each checked entry θ of a parameter (or of x) moved by ±h in a
--             float64 copy on the host; L(θ + h) and L(θ − h) from the layers'
--             host_forward, all in float64; g = (L(θ+h) − L(θ−h)) / 2h.
--   error:    max |analytic − numeric| over the checked entries, divided by
--             max |numeric| (the gradient's scale): per parameter and for
--             the input.
--
-- A layer takes part through layer:host_forward(x, P, ctx): x the input as a
-- Lua table of rows (float64), P the layer's parameters by short name ("w",
-- "b", ...) as tables of rows, ctx a table kept for the layer during one
-- check (a layer may cache there what it reads from the device once, such as
-- a dropout mask); it returns the output as a table of rows. nn.linear's is
-- here; other layers define their own beside their forward.
local vela = require "vela"

local gradcheck = {}
local fmt = string.format

-- The float64 activation of nn.linear: the op table's reference (vela.ops[name].ref,
-- double math written beside the op's row), or nil when the table has none.
local function act64(name)
  if name == "identity" then return function(z) return z end end
  local op = vela.ops[name]
  return op and op.activation and op.ref or nil
end
gradcheck.activation = act64

-- Rows of a matrix as a Lua table (one read of the device).
local function host(m) return m:to("cpu"):totable() end
gradcheck.host = host

-- nn.linear in float64: a = act(W·x + b).
local function linear_host_forward(self, x, P)
  local f = act64(self.activation)
  if not f then
    error(fmt("nn.gradcheck: %s has the activation '%s', which has no float64 reference " ..
      "(only the op table's activations: a kernel written at the prompt cannot be checked)",
      tostring(self), tostring(self.activation)), 0)
  end
  local W, b, n, out = P.w, P.b, #x[1], {}
  for i = 1, #W do
    local Wi, row = W[i], {}
    for j = 1, n do
      local s = b[i][1]
      for k = 1, #x do s = s + Wi[k] * x[k][j] end
      row[j] = f(s)
    end
    out[i] = row
  end
  return out
end

local function short(name) return name:match("[^.]*$") end

local function copy2(t)
  local c = {}
  for i, r in ipairs(t) do
    local cr = {}
    for j, v in ipairs(r) do cr[j] = v end
    c[i] = cr
  end
  return c
end

-- Up to `limit` (i, j) positions of a rows×cols table, spread over it by a
-- seeded stride (all of them when there are no more than `limit`).
local function positions(rows, cols, limit, seed)
  local total, out = rows * cols, {}
  if total <= limit then
    for k = 0, total - 1 do out[#out + 1] = {k % rows + 1, k // rows + 1} end
    return out
  end
  local step = total / limit
  local offset = (seed * 2654435761) % 1000 / 1000 * step
  for t = 0, limit - 1 do
    local k = math.min(total - 1, math.floor(t * step + offset))
    out[#out + 1] = {k % rows + 1, k // rows + 1}
  end
  return out
end

local Report = {}
Report.__index = Report
Report.__tostring = function(r)
  local lines = {fmt("gradcheck of %s on %s: float32 backward vs float64 central differences (h = %g)",
    r.what, r.device, r.h)}
  lines[#lines + 1] = fmt("  %-10s %10s %9s %12s", "parameter", "checked", "of", "worst error")
  for _, row in ipairs(r) do
    lines[#lines + 1] = fmt("  %-10s %10d %9d %12.3g  %s%s", row.name, row.checked, row.total, row.error,
      row.error <= r.tol and "ok" or fmt("> %g", r.tol), row.vanishes and " (the gradient is ~0: absolute error)" or "")
  end
  lines[#lines + 1] = fmt("worst %.3g %s %g: %s", r.worst, r.ok and "≤" or ">", r.tol,
    r.ok and "backward agrees" or "backward DISAGREES")
  return table.concat(lines, "\n")
end

-- nn.gradcheck(layer_or_net, input [, {h = 1e-6, entries = 64, seed = 1, tol = 1e-3, input = true}])
function gradcheck.check(net, x, opts)
  local nn = gradcheck.nn
  if type(net) ~= "table" or type(net.forward) ~= "function" or type(net.params) ~= "function" then
    error(fmt("nn.gradcheck: layer_or_net must be a layer or a net (nn.linear(...), nn.sequential{...}), got %s",
      type(net) == "table" and tostring(net) or type(net)), 2)
  end
  if getmetatable(x) ~= getmetatable(vela.zeros(0, 0, "float32", "cpu")) then
    error(fmt("nn.gradcheck: input must be a matrix (rows × samples), got %s", type(x)), 2)
  end
  opts = require("vela.options").check("nn.gradcheck", opts, {"h", "entries", "seed", "tol", "input"})
  local h, limit, seed, tol = opts.h or 1e-6, opts.entries or 64, opts.seed or 1, opts.tol or 1e-3
  if type(h) ~= "number" or not (h > 0) then error(fmt("nn.gradcheck: h must be a positive number, got %s", tostring(h)), 2) end
  if limit ~= math.huge and (math.type(limit) ~= "integer" or limit < 1) then
    error(fmt("nn.gradcheck: entries must be a positive integer or math.huge (every entry), got %s", tostring(limit)), 2)
  end
  if math.type(seed) ~= "integer" then error(fmt("nn.gradcheck: seed must be an integer, got %s", tostring(seed)), 2) end
  if type(tol) ~= "number" or not (tol > 0) then error(fmt("nn.gradcheck: tol must be a positive number, got %s", tostring(tol)), 2) end

  local layers = getmetatable(net) == nn.Sequential and net.layers or {net}
  for i, l in ipairs(layers) do
    if type(l.host_forward) ~= "function" then
      error(fmt("nn.gradcheck: layer %d (%s) has no host_forward (the float64 reference forward gradcheck " ..
        "differentiates; see ?nn.gradcheck)", i, tostring(l)), 2)
    end
  end
  local dev = x:device()

  -- analytic: forward, then backward from r layer by layer, asking each for dx.
  local out = net:forward(x)
  local r = vela.rand(out.rows, out.cols, seed, "cpu")
  vela.linear_frac(r, 2, -1, 0, 1)  -- r ← 2r − 1, in [−1, 1)
  local rd = r:to(dev)
  local d = rd
  for i = #layers, 1, -1 do
    d = layers[i]:backward(d, true)
    if d == nil then error(fmt("nn.gradcheck: layer %d (%s) returned no input gradient", i, tostring(layers[i])), 2) end
  end
  local dx = host(d)
  if not rawequal(rd, r) then rd:release() end
  local R = host(r)
  r:release()

  -- the float64 state: every parameter and the input, as tables of rows.
  local plist, P = {}, {}
  for i, l in ipairs(layers) do
    P[i] = {}
    for _, p in ipairs(l:params()) do
      local s = short(p.name)
      P[i][s] = host(p[1])
      plist[#plist + 1] = {name = (#layers > 1 or getmetatable(net) == nn.Sequential) and fmt("%d.%s", i, s) or s,
                           layer = i, key = s, analytic = host(p[2])}
    end
  end
  local X = copy2(host(x))
  local ctx = {}
  for i = 1, #layers do ctx[i] = {} end

  local function loss()
    local a = X
    for i, l in ipairs(layers) do a = l:host_forward(a, P[i], ctx[i]) end
    local s = 0
    for i, row in ipairs(a) do
      local Ri = R[i]
      for j, v in ipairs(row) do s = s + Ri[j] * v end
    end
    return s
  end

  local report = setmetatable({what = (tostring(net):gsub(" on %S+$", "")), device = dev:name(), h = h, tol = tol, errors = {}}, Report)
  local function check(name, tbl, analytic, k)
    local rows, cols = #tbl, #tbl[1]
    local diff, scale = 0, 0
    local pos = positions(rows, cols, limit, seed + k)
    for _, ij in ipairs(pos) do
      local i, j = ij[1], ij[2]
      local v = tbl[i][j]
      tbl[i][j] = v + h
      local lp = loss()
      tbl[i][j] = v - h
      local lm = loss()
      tbl[i][j] = v
      local g = (lp - lm) / (2 * h)
      diff = math.max(diff, math.abs(analytic[i][j] - g))
      scale = math.max(scale, math.abs(g))
    end
    local vanishes = scale < 1e-7
    local e = vanishes and diff or diff / scale
    report[#report + 1] = {name = name, error = e, checked = #pos, total = rows * cols, scale = scale, vanishes = vanishes}
    report.errors[name] = e
  end
  for k, p in ipairs(plist) do check(p.name, P[p.layer][p.key], p.analytic, k) end
  if opts.input ~= false then check("input", X, dx, 0) end
  local worst = 0
  for _, row in ipairs(report) do worst = math.max(worst, row.error) end
  report.worst, report.ok = worst, worst <= tol
  return report
end

-- gradcheck.attach(nn): nn.gradcheck and nn.linear's host_forward.
function gradcheck.attach(nn)
  gradcheck.nn = nn
  nn.gradcheck = gradcheck.check
  nn.Linear.host_forward = linear_host_forward
  if vela.doc then
    vela.doc("nn.gradcheck", "nn.gradcheck(layer_or_net, x [, {entries = 64, h = 1e-6, seed = 1, tol = 1e-3, input = true}]) -> report",
      "Checks backward against central differences of a float64 forward on the host. L = Σ r∘forward(x) for a fixed random r in [−1, 1); the float32 gradients of backward (every parameter's and the input's) against (L(θ+h) − L(θ−h))/2h computed in float64 from the same values. The report lists, per parameter and for the input, the worst |analytic − numeric| over max |numeric| (up to `entries` entries each, spread over the matrix; math.huge for all), and has .worst, .ok (worst ≤ tol) and .errors[name]; it prints as a table. Layers take part through layer:host_forward(x, P, ctx) (their float64 forward on tables of rows). It runs one forward in the net's mode: in training a dropout draws its next mask (its step advances) and is checked with it, batchnorm uses and updates the batch's statistics; in evaluation (net:eval()) both are constants. Example: nn.gradcheck(nn.linear(5, 3, 'tanh'), randn(5, 4))",
      gradcheck.check)
    vela.doc("layer:host_forward", "layer:host_forward(x, P, ctx) -> out",
      "The layer's forward in float64 on the host, for nn.gradcheck: x and the result are Lua tables of rows, P the parameters by short name ('w', 'b') as tables of rows, ctx a table kept for the layer during one check.",
      linear_host_forward)
  end
  return nn
end

return gradcheck

-- vela.attention: nn.attention(dim, heads, {causal = true [, context = T]}),
-- causal multi-head self-attention in the manner of nn.linear: forward and
-- backward side by side, the equations as comments, one kernel call per
-- equation. Layout (docs/sequence.md, "Batched products"): one token per
-- column; heads stacked by rows (rows (h−1)·d + 1 .. h·d of Q, K, V are head
-- h, d = dim/heads); an input of dim × n is n/T sequences of T = context
-- tokens (T = n without context). Scores of head h are columns
-- (h−1)·n + 1 .. h·n of one T × (n·heads) matrix, so one softmax_causal call
-- serves every head and sequence; each product is one bmm over the n/T
-- sequences, per head.
local vela = require "vela"
local att = {}
local fmt = string.format
local nn, alloc, resolve, move_layers, check_input, check_grad

local Attention = {}
Attention.__index = Attention
att.Attention = Attention

local function positive_int(v, fn, what)
  if math.type(v) ~= "integer" or v < 1 then error(fmt("%s: %s must be a positive integer, got %s", fn, what, tostring(v)), 3) end
end

-- nn.attention(dim, heads [, {causal = true, context =, seed =, device =}]):
-- Wqkv (3·dim × dim) and Wo (dim × dim) ~ N(0, 1/dim), no biases.
function att.attention(dim, heads, opts)
  local fn = "nn.attention"
  positive_int(dim, fn, "dim (the rows of a token)")
  positive_int(heads, fn, "heads")
  if dim % heads ~= 0 then error(fmt("%s: heads (%d) must divide dim (%d)", fn, heads, dim), 2) end
  opts = require("vela.options").check(fn, opts, {"causal", "context", "seed", "device"})
  if opts.causal == false then
    error(fmt("%s: only causal = true is implemented (the mask is softmax_causal's)", fn), 2)
  elseif opts.causal ~= nil and opts.causal ~= true then
    error(fmt("%s: causal must be a boolean, got %s", fn, type(opts.causal)), 2)
  end
  if opts.context ~= nil then positive_int(opts.context, fn, "context") end
  local dev = opts.device and resolve(opts.device, fn) or vela.device()
  local self = setmetatable({inputs = dim, outputs = dim, heads = heads, context = opts.context}, Attention)
  self.Wqkv, self.Wo = alloc(dev, 3 * dim, dim), alloc(dev, dim, dim)
  if opts.seed then
    vela.randn(self.Wqkv, opts.seed); vela.randn(self.Wo, opts.seed + 1)
  else
    vela.randn(self.Wqkv); vela.randn(self.Wo)
  end
  vela.scal(1 / math.sqrt(dim), self.Wqkv); vela.scal(1 / math.sqrt(dim), self.Wo)
  self:_setup(dev)
  return self
end

function Attention:_setup(dev)
  self.dev = dev
  self.dWqkv, self.dWo = alloc(dev, 3 * self.inputs, self.inputs), alloc(dev, self.inputs, self.inputs)
  self.state = self.state or {Wqkv = {}, Wo = {}}
  self.x, self.n, self.b, self._checked = nil, nil, nil, nil
  self._params = {{self.Wqkv, self.dWqkv, self.state.Wqkv, name = "Wqkv"},
                  {self.Wo, self.dWo, self.state.Wo, name = "Wo"}}
end

function Attention:__tostring()
  return fmt("attention(%d, %d%s)", self.inputs, self.heads, self.context and fmt(", context %d", self.context) or "")
end

-- Buffers for n tokens of context T: qkv, dqkv (3·dim × n), O, dO, y, dx (dim × n), P, dP (T × n·heads).
function Attention:_buffers(n)
  local T = self.context or n
  if n % T ~= 0 then
    error(fmt("%s: input has %d tokens, not a multiple of the context %d", tostring(self), n, T), 0)
  end
  if self.b and self.b.n == n then return self.b end
  local dim, dev = self.inputs, self.dev
  local b = {n = n, T = T, B = n // T}
  b.qkv, b.dqkv = alloc(dev, 3 * dim, n), alloc(dev, 3 * dim, n)
  b.O, b.dO, b.y, b.dx = alloc(dev, dim, n), alloc(dev, dim, n), alloc(dev, dim, n), alloc(dev, dim, n)
  b.P, b.dP = alloc(dev, T, n * self.heads), alloc(dev, T, n * self.heads)
  self.b = b
  return b
end

-- Head h's d × n rows of Q (part 0), K (1) or V (2) in a 3·dim × n matrix; its T × n scores.
local function head(self, m, part, h)
  local d = self.inputs // self.heads
  return m:view(part * self.inputs + (h - 1) * d + 1, 1, d, m.cols)
end
local function scores(m, h, n) return m:columns((h - 1) * n + 1, n) end

-- forward: x (dim × n) → y (dim × n), s = 1/√d:
--   [Q; K; V] = Wqkv·x                                 mm
--   Sₕ = s·Kₕᵀ·Qₕ  per sequence (T × T: row key, column query)   bmm {ta}
--   Pₕ = causal softmax of each column of Sₕ           softmax_causal (every head at once)
--   Oₕ = Vₕ·Pₕ     per sequence                        bmm
--   y = Wo·O                                           mm
function Attention:forward(x, index)
  check_input(self, x, index, "one token per column")
  local b = self:_buffers(x.cols)
  self.x, self.n = x, x.cols
  local n, B, s = b.n, b.B, 1 / math.sqrt(self.inputs // self.heads)
  vela.mm(1, self.Wqkv, x, 0, b.qkv)
  for h = 1, self.heads do
    vela.bmm(s, head(self, b.qkv, 1, h), head(self, b.qkv, 0, h), 0, scores(b.P, h, n), B, {ta = true})
  end
  vela.softmax_causal(b.P)
  for h = 1, self.heads do
    vela.bmm(1, head(self, b.qkv, 2, h), scores(b.P, h, n), 0, head(self, b.O, 0, h), B)
  end
  vela.mm(1, self.Wo, b.O, 0, b.y)
  return b.y
end

-- backward: dy (dim × n) → dx, filling dWo and dWqkv:
--   dWo = dy·Oᵀ;  dO = Woᵀ·dy                          mm, mm
--   dVₕ = dOₕ·Pₕᵀ;  dPₕ = Vₕᵀ·dOₕ                        bmm {tb}, bmm {ta}
--   dSₕ = Pₕ ∘ (dPₕ − Σᵢ Pₕ ∘ dPₕ)                     softmax_causal_backward (every head)
--   dQₕ = s·Kₕ·dSₕ;  dKₕ = s·Qₕ·dSₕᵀ                     bmm, bmm {tb}
--   dWqkv = d[Q; K; V]·xᵀ;  dx = Wqkvᵀ·d[Q; K; V]        mm, mm
function Attention:backward(dy, need_dx)
  check_grad(self, dy, self.outputs, "attention")
  local b = self.b
  local n, B, s = b.n, b.B, 1 / math.sqrt(self.inputs // self.heads)
  vela.mm(1, dy, b.O:t(), 0, self.dWo)
  vela.mm(1, self.Wo:t(), dy, 0, b.dO)
  for h = 1, self.heads do
    local dOh, Ph = head(self, b.dO, 0, h), scores(b.P, h, n)
    vela.bmm(1, dOh, Ph, 0, head(self, b.dqkv, 2, h), B, {tb = true})
    vela.bmm(1, head(self, b.qkv, 2, h), dOh, 0, scores(b.dP, h, n), B, {ta = true})
  end
  vela.softmax_causal_backward(b.P, b.dP, b.dP)
  for h = 1, self.heads do
    local dSh = scores(b.dP, h, n)
    vela.bmm(s, head(self, b.qkv, 1, h), dSh, 0, head(self, b.dqkv, 0, h), B)
    vela.bmm(s, head(self, b.qkv, 0, h), dSh, 0, head(self, b.dqkv, 1, h), B, {tb = true})
  end
  vela.mm(1, b.dqkv, self.x:t(), 0, self.dWqkv)
  if need_dx == false then return nil end
  vela.mm(1, self.Wqkv:t(), b.dqkv, 0, b.dx)
  return b.dx
end

function Attention:params() return self._params end
function Attention:train() return self end
function Attention:eval() return self end
function Attention:_moved(dev, made)
  local m = setmetatable({}, Attention)
  for k, v in pairs(self) do m[k] = v end
  m.Wqkv, m.Wo = self.Wqkv:to(dev), self.Wo:to(dev)
  made[#made + 1], made[#made + 2] = m.Wqkv, m.Wo
  m:_setup(dev)
  return m
end
function Attention:to(dev)
  move_layers({self}, resolve(dev, "layer:to"), "layer:to")
  return self
end
function Attention:describe()
  return {kind = "attention", dim = self.inputs, heads = self.heads, context = self.context}
end

-- float64 for nn.gradcheck: the same equations, one sequence and head at a time.
function Attention:host_forward(x, P)
  local dim, n, H = self.inputs, #x[1], self.heads
  local d, T = dim // H, self.context or #x[1]
  local s = 1 / math.sqrt(d)
  local function prod(W, rows0, nrows, X)  -- rows rows0+1 .. rows0+nrows of W·X
    local out = {}
    for i = 1, nrows do
      local Wi, row = W[rows0 + i], {}
      for j = 1, #X[1] do
        local acc = 0
        for k = 1, #X do acc = acc + Wi[k] * X[k][j] end
        row[j] = acc
      end
      out[i] = row
    end
    return out
  end
  local qkv = prod(P.Wqkv, 0, 3 * dim, x)
  local O = {}
  for i = 1, dim do O[i] = {} end
  for h = 0, H - 1 do
    for q0 = 0, n - 1, T do
      for p = 0, T - 1 do  -- the query at position p of the sequence starting at column q0 + 1
        local j, w, m = q0 + p + 1, {}, -math.huge
        for i = 0, p do  -- keys 0..p
          local acc = 0
          for r = 1, d do acc = acc + qkv[dim + h * d + r][q0 + i + 1] * qkv[h * d + r][j] end
          w[i] = s * acc
          if w[i] > m then m = w[i] end
        end
        local sum = 0
        for i = 0, p do w[i] = math.exp(w[i] - m); sum = sum + w[i] end
        for r = 1, d do
          local acc = 0
          for i = 0, p do acc = acc + qkv[2 * dim + h * d + r][q0 + i + 1] * w[i] / sum end
          O[h * d + r][j] = acc
        end
      end
    end
  end
  return prod(P.Wo, 0, dim, O)
end

function att.attach(nn_module, helpers)
  nn = nn_module
  alloc, resolve = helpers.alloc, helpers.resolve
  move_layers, check_input, check_grad = helpers.move_layers, helpers.check_input, helpers.check_grad
  nn.attention, nn.Attention = att.attention, Attention
  nn.layer_kinds.attention = function(t, dev)
    return att.attention(t.dim, t.heads, {context = t.context, device = dev})
  end
  if vela.doc then
    vela.doc("nn.attention", "nn.attention(dim, heads [, {causal = true, context =, seed =, device =}])",
      "Causal multi-head self-attention (docs/sequence.md): [Q; K; V] = Wqkv·x, per head and sequence P = causal softmax(Kᵀ·Q/√d), O = V·P, y = Wo·O (no biases). One token per column, heads stacked by rows (d = dim/heads); context = T cuts n tokens into n/T sequences (T = n without it). Products are bmm over the sequences, the mask is softmax_causal's. Example: nn.attention(8, 2, {context = 4}):forward(randn(8, 12))",
      att.attention)
  end
  return att
end

return att

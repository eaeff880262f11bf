-- vela.block: nn.posembed (learned positional embeddings) and nn.block (a
-- pre-norm transformer block), the last pieces of a GPT, in the manner of
-- nn.linear (lua/vela/nn.lua): forward and backward side by side, the
-- equations as comments. Layout (docs/sequence.md): one token per column; an
-- input of dim × n is n/T sequences of T = context tokens (T = n without it).
-- nn.block is made of the layers before it (nn.layernorm, nn.attention,
-- nn.linear) and adds only the residual sums.
local vela, options, layer = require "vela", require "vela.options", require "vela.layer"
local alloc, buffers, check_input, check_grad = layer.alloc, layer.buffers, layer.check_input, layer.check_grad
local fmt = string.format
local blk = {}
local nn, seq, att, positive_int  -- set by attach (positive_int: sequence.lua's check)

-- ---------------------------------------------------------------------------
-- nn.posembed(context, dim): a learned column per position
-- ---------------------------------------------------------------------------
local PosEmbed = layer.class({"P"})
blk.PosEmbed = PosEmbed

-- nn.posembed(context, dim [, {seed =, device =}]): P (dim × context) ~ N(0, 1)·0.1.
function blk.posembed(context, dim, opts)
  positive_int(context, "nn.posembed", "context (the tokens of a sequence)")
  positive_int(dim, "nn.posembed", "dim (the rows of a token)")
  return layer.table(PosEmbed, "nn.posembed", opts, {inputs = dim, outputs = dim, context = context}, "P", dim,
                     context, 0.1)
end

function PosEmbed:_setup(dev)
  self.dP = alloc(dev, self.outputs, self.context)
  self.state = self.state or {P = {}}
  self.buf = buffers(dev, {y = self.outputs})
  self.Pflat, self.dPflat = self.P:view(self.outputs * self.context, 1), self.dP:view(self.outputs * self.context, 1)
  self.n, self._checked = nil, nil
  self._params = {{self.P, self.dP, self.state.P, name = "P"}}
end

function PosEmbed:__tostring() return fmt("posembed(%d, %d)", self.context, self.outputs) end

-- The n tokens as B = n/T columns of dim·T rows: one sequence a column (a view, column-major).
local function by_sequence(self, m, n)
  if n % self.context ~= 0 then
    error(fmt("%s: input has %d tokens, not a multiple of the context %d", tostring(self), n, self.context), 0)
  end
  return m:reshape(self.outputs * self.context, n // self.context)
end

-- forward: x (dim × n) → y (dim × n), token p (0-based) of each sequence of T:
--   y(:, j) = x(:, j) + P(:, 1 + (j − 1) mod T)      add, P broadcast over the n/T sequences
function PosEmbed:forward(x, index)
  check_input(self, x, index, "one token per column")
  local n = x.cols
  local b = self.buf:get(n)
  self.n = n
  vela.add(by_sequence(self, x, n), self.Pflat, by_sequence(self, b.y, n))
  return b.y
end

-- backward: dy (dim × n) → dx = dy, filling dP:
--   dP(:, p) = Σ over sequences of dy(:, token p)      mv: dy as (dim·T) × (n/T) times ones
--   dx = dy                                           (no kernel: the same matrix)
function PosEmbed:backward(dy, need_dx)
  check_grad(self, dy, self.outputs, "posembed")
  local B = self.n // self.context
  vela.mv(1, by_sequence(self, dy, self.n), layer.ones_on(self.dev, B), 0, self.dPflat)
  if need_dx == false then return nil end
  return dy
end

-- float64 for nn.gradcheck: the same sum.
function PosEmbed:host_forward(x, P)
  local T, out = self.context, {}
  for i = 1, #x do
    local row, Pi = {}, P.P[i]
    for j = 1, #x[i] do row[j] = x[i][j] + Pi[(j - 1) % T + 1] end
    out[i] = row
  end
  return out
end
function PosEmbed:describe() return {kind = "posembed", context = self.context, dim = self.outputs} end

-- ---------------------------------------------------------------------------
-- The MLP's gelu (tanh form), as nn.linear's own activation {f, df} (f(z, a): a ← gelu(z);
-- df(z, d): d ← gelu′(z), then nn.linear multiplies by da). On Vulkan: the op table's
-- gelu and gelu_prime. On the cpu those hold 0.5 ulp over the whole float range
-- (src/cpu/vmath.hpp, in double) and cost about 3 and 4 ms for 512 × 1,024 values
-- (scripts/bench/act_cpu.lua), against 1.1 and 0.5 ms for these few float32 kernels
-- (a sigmoid and cheap maps, within 1e-6 of float64; tests/lua/test_block.lua):
-- with 2u = z·(c + c·0.044715·z²), c = 2√(2/π), s = σ(2u):
--   gelu(z)  = z·s
--   gelu′(z) = s + z·s·(1 − s)·c·(1 + 3·0.044715·z²)
-- s is kept from f for df (the layer's forward comes before its backward).
-- ---------------------------------------------------------------------------
local C = 2 * math.sqrt(2 / math.pi)

local function gelu_pair(dev, rows)
  if dev:name() ~= "cpu" then return vela.gelu, vela.gelu_prime end
  local scratch = buffers(dev, {s = rows, t = rows})
  local function f(z, a)
    local b = scratch:get(z.cols)
    vela.sqr(z, b.s)                                  -- z²
    vela.linear_frac(b.s, C * 0.044715, C, 0, 1)      -- c + c·0.044715·z²
    vela.mul(b.s, z, b.s)                             -- 2u
    vela.sigmoid(b.s, b.s)                            -- s = σ(2u)
    vela.mul(z, b.s, a)                               -- a = z·s
  end
  local function df(z, d)
    local b = scratch:get(z.cols)
    vela.sqr(z, d)
    vela.linear_frac(d, 3 * C * 0.044715, C, 0, 1)    -- (2u)′ = c·(1 + 3·0.044715·z²)
    vela.mul(d, z, d)                                 -- z·(2u)′
    vela.linear_frac(b.s, b.t, -1, 1, 0, 1)           -- 1 − s
    vela.mul(b.t, b.s, b.t)                           -- s·(1 − s)
    vela.mul(d, b.t, d)
    vela.add(d, b.s, d)                               -- gelu′ = s + z·s·(1 − s)·(2u)′
  end
  return f, df
end

-- ---------------------------------------------------------------------------
-- nn.block(dim, heads, {causal = true, context =, mlp = 4·dim, ...}): pre-norm transformer block
-- ---------------------------------------------------------------------------
local Block = layer.class()
blk.Block = Block
-- The parts in order, each with the short names of its parameters in the block.
local parts = {"ln1", "attn", "ln2", "fc1", "fc2"}

-- nn.block(dim, heads [, {causal = true, context =, mlp = 4·dim, eps = 1e-5, seed =, device =}]):
-- ln1 = nn.layernorm(dim), attn = nn.attention(dim, heads), ln2 = nn.layernorm(dim),
-- fc1 = nn.linear(dim, mlp, "gelu"), fc2 = nn.linear(mlp, dim) (Xavier); seed s gives
-- attn seed s, fc1 s + 2, fc2 s + 3.
function blk.block(dim, heads, opts)
  local fn = "nn.block"
  positive_int(dim, fn, "dim (the rows of a token)")
  positive_int(heads, fn, "heads")
  opts = options.check(fn, opts, {"causal", "context", "mlp", "eps", "seed", "device"})
  if opts.mlp ~= nil then positive_int(opts.mlp, fn, "mlp (the hidden rows of the MLP)") end
  if opts.seed ~= nil and math.type(opts.seed) ~= "integer" then
    error(fmt("%s: seed must be an integer, got %s", fn, tostring(opts.seed)), 2)
  end
  local dev = layer.device(opts, fn)
  local mlp, s = opts.mlp or 4 * dim, opts.seed
  local function sub(make)  -- the part's own errors, pointed at nn.block's caller
    local ok, l = pcall(make)
    if not ok then error((tostring(l):gsub("^[^:]*:%d+: ", "")), 3) end
    return l
  end
  local self = setmetatable({inputs = dim, outputs = dim, heads = heads, context = opts.context, mlp = mlp}, Block)
  self.ln1 = sub(function() return seq.layernorm(dim, {eps = opts.eps, device = dev}) end)
  self.attn = sub(function()
    return att.attention(dim, heads, {causal = opts.causal, context = opts.context, seed = s, device = dev})
  end)
  self.ln2 = seq.layernorm(dim, {eps = opts.eps, device = dev})
  self.fc1 = nn.linear(dim, mlp, {f = vela.gelu, df = vela.gelu_prime, name = "gelu", seed = s and s + 2, device = dev})
  self.fc2 = nn.linear(mlp, dim, {seed = s and s + 3, device = dev})
  self.eps = self.ln1.eps
  return self:_on(dev)
end

function Block:_setup(dev)
  local f, df = gelu_pair(dev, self.mlp)
  self.fc1.custom = {f = f, df = df, name = "gelu"}
  self.buf = buffers(dev, {h = self.inputs, y = self.inputs, dh = self.inputs, dx = self.inputs})
  self.n, self._checked = nil, nil
  self._params = {}
  for _, part in ipairs(parts) do
    for _, p in ipairs(self[part]:params()) do
      local short = p.name:match("[^.]*$")
      self._params[#self._params + 1] = {p[1], p[2], p[3], name = part .. "_" .. short, part = part, key = short}
    end
  end
end

function Block:__tostring()
  return fmt("block(%d, %d heads, mlp %d%s)", self.inputs, self.heads, self.mlp,
    self.context and fmt(", context %d", self.context) or "")
end

-- forward: x (dim × n) → y (dim × n):
--   h = x + attn(ln1(x))                               layernorm, attention, add
--   y = h + fc2(gelu(fc1(ln2(h))))                     layernorm, dense (gelu), dense, add
function Block:forward(x, index)
  check_input(self, x, index, "one token per column")
  local b = self.buf:get(x.cols)
  self.n = x.cols
  vela.add(x, self.attn:forward(self.ln1:forward(x)), b.h)
  vela.add(b.h, self.fc2:forward(self.fc1:forward(self.ln2:forward(b.h))), b.y)
  return b.y
end

-- backward: dy (dim × n) → dx, filling every part's gradients (the chain rule
-- through the two residual sums, whose gradient passes both ways unchanged):
--   dh = dy + ln2ᵀ(fc1ᵀ(fc2ᵀ(dy)))                     the parts' backward, add
--   dx = dh + ln1ᵀ(attnᵀ(dh))                          the parts' backward, add
function Block:backward(dy, need_dx)
  local b = check_grad(self, dy, self.outputs, "block")
  vela.add(dy, self.ln2:backward(self.fc1:backward(self.fc2:backward(dy, true), true), true), b.dh)
  local dln1 = self.ln1:backward(self.attn:backward(b.dh, true), need_dx ~= false)
  if need_dx == false then return nil end
  vela.add(b.dh, dln1, b.dx)
  return b.dx
end

-- Moved part by part (each part moves its parameters and optimizer state).
function Block:_moved(dev, made)
  local m = setmetatable({}, Block)
  for k, v in pairs(self) do m[k] = v end
  for _, part in ipairs(parts) do m[part] = self[part]:_moved(dev, made) end
  m:_on(dev)
  return m
end

-- float64 for nn.gradcheck: the parts' own host_forward and the two sums.
function Block:host_forward(x, P, ctx)
  local Ps = {}
  for _, part in ipairs(parts) do Ps[part] = {} end
  for _, p in ipairs(self._params) do Ps[p.part][p.key] = P[p.part .. "_" .. p.key] end
  local function f(part, a) return self[part]:host_forward(a, Ps[part], ctx) end
  local function add(a, c)
    local out = {}
    for i = 1, #a do
      local row = {}
      for j = 1, #a[i] do row[j] = a[i][j] + c[i][j] end
      out[i] = row
    end
    return out
  end
  local h = add(x, f("attn", f("ln1", x)))
  return add(h, f("fc2", f("fc1", f("ln2", h))))
end

function Block:describe()
  return {kind = "block", dim = self.inputs, heads = self.heads, context = self.context, mlp = self.mlp, eps = self.eps}
end

-- ---------------------------------------------------------------------------
function blk.attach(nn_module, seq_module, att_module)
  nn, seq, att = nn_module, seq_module, att_module
  positive_int = seq.positive_int
  nn.posembed, nn.block, nn.PosEmbed, nn.Block = blk.posembed, blk.block, PosEmbed, Block
  nn.layer_kinds.posembed = function(d, dev) return blk.posembed(d.context, d.dim, {device = dev}) end
  nn.layer_kinds.block = function(d, dev)
    return blk.block(d.dim, d.heads, {context = d.context, mlp = d.mlp, eps = d.eps, device = dev})
  end
  return blk
end

return blk

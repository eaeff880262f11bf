-- vela.sequence: nn.layernorm and nn.embedding, the first layers of a sequence
-- model, in the manner of nn.linear (lua/vela/nn.lua): forward and backward
-- side by side, the equations as comments, one kernel call per equation,
-- buffers made once per batch size. Layout (docs/sequence.md): one token per
-- column; an input of dim × n is n tokens.
local vela = require "vela"
local seq = {}
local fmt = string.format
local layer = require "vela.layer"
local options = require "vela.options"
local alloc, buffers = layer.alloc, layer.buffers
local check_input, check_grad = layer.check_input, layer.check_grad

local function positive_int(v, fn, what)
  if math.type(v) ~= "integer" or v < 1 then error(fmt("%s: %s must be a positive integer, got %s", fn, what, tostring(v)), 3) end
end
seq.positive_int = positive_int  -- for lua/vela/block.lua

-- ---------------------------------------------------------------------------
-- nn.layernorm(dim): layer norm of each token (column)
-- ---------------------------------------------------------------------------
local LayerNorm = layer.class({"gamma", "beta"})
seq.LayerNorm = LayerNorm

-- nn.layernorm(dim [, {eps = 1e-5, device =}]): γ = 1, β = 0 at first.
function seq.layernorm(dim, opts)
  positive_int(dim, "nn.layernorm", "dim (the rows of a token)")
  opts = options.check("nn.layernorm", opts, {"eps", "device"})
  local eps = opts.eps or 1e-5
  if type(eps) ~= "number" or not (eps > 0) then
    error(fmt("nn.layernorm: eps must be a positive number, got %s", tostring(eps)), 2)
  end
  local dev = layer.device(opts, "nn.layernorm")
  local self = setmetatable({inputs = dim, outputs = dim, eps = eps}, LayerNorm)
  self.gamma = vela.fill(alloc(dev, dim, 1), 1)
  self.beta = alloc(dev, dim, 1)
  return self:_on(dev)
end

function LayerNorm:_setup(dev)
  self.dgamma, self.dbeta = alloc(dev, self.inputs, 1), alloc(dev, self.inputs, 1)
  self.state = self.state or {gamma = {}, beta = {}}
  self.buf = buffers(dev, {y = self.inputs, dx = self.inputs})
  self.stats = buffers(dev, {mean = 1, rstd = 1})  -- 1×n: one per token
  self.x, self._checked = nil, nil
  self._params = {{self.gamma, self.dgamma, self.state.gamma, name = "gamma"},
                  {self.beta, self.dbeta, self.state.beta, name = "beta"}}
end

function LayerNorm:__tostring() return fmt("layernorm(%d)", self.inputs) end

-- forward: x (dim×n) → y (dim×n), per column j:
--   μⱼ = Σᵢ x / dim,  σⱼ² = Σᵢ (x − μⱼ)² / dim,  rstdⱼ = 1/√(σⱼ² + ε)
--   y = γ ∘ (x − μⱼ)·rstdⱼ + β                         layernorm (μ and rstd saved)
function LayerNorm:forward(x, index)
  check_input(self, x, index, "one token per column")
  local b, s = self.buf:get(x.cols), self.stats:get(x.cols)
  self.x, self.n = x, x.cols
  vela.layernorm(x, self.gamma, self.beta, s.mean, s.rstd, b.y, self.eps)
  return b.y
end

-- backward: dy (dim×n) → dx, filling dγ and dβ (x̂ = (x − μ)·rstd, g = dy ∘ γ):
--   dβ = Σⱼ dy,  dγ = Σⱼ dy ∘ x̂                        layernorm_backward
--   dx = rstd·(g − Σᵢ g/dim − x̂·Σᵢ (g ∘ x̂)/dim)         (the same call)
function LayerNorm:backward(dy, need_dx)
  local b, s = check_grad(self, dy, self.inputs, "layernorm"), self.stats:get(self.n)
  vela.layernorm_backward(dy, self.x, s.mean, s.rstd, self.gamma, self.dgamma, self.dbeta, b.dx)
  if need_dx == false then return nil end
  return b.dx
end

-- float64 for nn.gradcheck: the same equations.
function LayerNorm:host_forward(x, P)
  local m, n, out = #x, #x[1], {}
  for i = 1, m do out[i] = {} end
  for j = 1, n do
    local mu, q = 0, 0
    for i = 1, m do mu = mu + x[i][j] end
    mu = mu / m
    for i = 1, m do q = q + (x[i][j] - mu) ^ 2 end
    local r = 1 / math.sqrt(q / m + self.eps)
    for i = 1, m do out[i][j] = P.gamma[i][1] * (x[i][j] - mu) * r + P.beta[i][1] end
  end
  return out
end
function LayerNorm:describe() return {kind = "layernorm", dim = self.inputs, eps = self.eps} end

-- ---------------------------------------------------------------------------
-- nn.embedding(vocab, dim): a learned column per token
-- ---------------------------------------------------------------------------
local Embedding = layer.class({"E"})
seq.Embedding = Embedding

-- nn.embedding(vocab, dim [, {seed =, device =}]): E (dim×vocab) ~ N(0, 1).
function seq.embedding(vocab, dim, opts)
  positive_int(vocab, "nn.embedding", "vocab (the number of tokens)")
  positive_int(dim, "nn.embedding", "dim (the rows of a token)")
  return layer.table(Embedding, "nn.embedding", opts, {inputs = 1, outputs = dim, vocab = vocab}, "E", dim, vocab, 1)
end

function Embedding:_setup(dev)
  self.dE = alloc(dev, self.outputs, self.vocab)
  self.state = self.state or {E = {}}
  self.buf = buffers(dev, {y = self.outputs, dx = 1})
  self.idx, self._checked = nil, nil
  self._params = {{self.E, self.dE, self.state.E, name = "E"}}
end

function Embedding:__tostring() return fmt("embedding(%d, %d)", self.vocab, self.outputs) end

-- forward: idx (1×n, token numbers 1..vocab) → y (dim×n)
--   y(:, j) = E(:, idx(j))                             gather_cols (indices checked)
function Embedding:forward(idx, index)
  check_input(self, idx, index, "one token number per column")
  local b = self.buf:get(idx.cols)
  self.idx, self.n = idx, idx.cols
  vela.gather_cols(self.E, idx, b.y)
  return b.y
end

-- backward: dy (dim×n) → dE, summed over repeated tokens in order:
--   dE = 0;  dE(:, idx(j)) += dy(:, j)                fill, embedding_backward
-- Token numbers have no gradient: dx is zeros (1×n) when asked for.
function Embedding:backward(dy, need_dx)
  check_grad(self, dy, self.outputs, "embedding")
  vela.fill(self.dE, 0)
  vela.embedding_backward(dy, self.idx, self.dE)
  if need_dx == false then return nil end
  return vela.fill(self.buf:get(self.n).dx, 0)
end

-- float64 for nn.gradcheck: the same lookup (a perturbed index rounds to its token).
function Embedding:host_forward(x, P)
  local out = {}
  for i = 1, self.outputs do
    local row = {}
    for j = 1, #x[1] do row[j] = P.E[i][math.floor(x[1][j] + 0.5)] end
    out[i] = row
  end
  return out
end
function Embedding:describe() return {kind = "embedding", vocab = self.vocab, dim = self.outputs} end

-- ---------------------------------------------------------------------------
function seq.attach(nn)
  nn.layernorm, nn.embedding = seq.layernorm, seq.embedding
  nn.LayerNorm, nn.Embedding = LayerNorm, Embedding
  local att = require("vela.attention").attach(nn, layer)
  require("vela.block").attach(nn, seq, att)
  nn.layer_kinds.layernorm = function(d, dev) return seq.layernorm(d.dim, {eps = d.eps, device = dev}) end
  nn.layer_kinds.embedding = function(d, dev) return seq.embedding(d.vocab, d.dim, {device = dev}) end
  return seq
end

return seq

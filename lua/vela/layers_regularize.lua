-- vela.layers_regularize: nn.dropout and nn.batchnorm, layers in the manner
-- of nn.linear (lua/vela/nn.lua): forward and backward side by side, the
-- equations as comments, one kernel call per equation, buffers made once per
-- batch size. Both have a training and an evaluation mode (net:train(),
-- net:eval(); nn.fit and nn.evaluate switch them).
local vela = require "vela"
local layer = require "vela.layer"

local layers = {}
local fmt = string.format

local alloc, buffers = layer.alloc, layer.buffers
local check_input, check_grad = layer.check_input, layer.check_grad

local function host(m) return m:to("cpu"):totable() end

-- ---------------------------------------------------------------------------
-- nn.dropout(p): inverted dropout
-- ---------------------------------------------------------------------------

local Dropout = layer.class()
layers.Dropout = Dropout
Dropout.forget = {"used_mask"}  -- see layer:_moved

-- nn.dropout(p [, {seed =, device =}]): in training, each unit of each sample
-- is kept with probability 1 − p and scaled by 1/(1 − p) (so evaluation,
-- which keeps every unit unscaled, sees the same expected activation).
-- The mask of training step s (the s-th training forward of this layer) is
-- Philox's for (seed, s): a seeded run draws the same masks on every device,
-- and a checkpoint keeps s, so a resumed run draws the masks it would have.
function layers.dropout(p, opts)
  if type(p) ~= "number" or not (p >= 0 and p < 1) then
    error(fmt("nn.dropout: p must be a number in [0, 1) (the probability of dropping a unit), got %s", tostring(p)), 2)
  end
  opts = require("vela.options").check("nn.dropout", opts, {"seed", "device"})
  if opts.seed ~= nil and (math.type(opts.seed) ~= "integer" or opts.seed < 0) then
    error(fmt("nn.dropout: seed must be a non-negative integer, got %s", tostring(opts.seed)), 2)
  end
  local dev = layer.device(opts, "nn.dropout")
  local self = setmetatable({p = p, seed = opts.seed or vela._next_seed(), step = 0, training = true}, Dropout)
  return self:_on(dev)
end

function Dropout:_setup(dev)
  self.buf = buffers(dev, {mask = 1, y = 1, dx = 1})
  self._rows = nil
  self._checked = nil
  self._params = {}
end

function Dropout:__tostring() return fmt("dropout(%g)", self.p) end

-- nn.sequential gives a dropout the size of its neighbour.
function Dropout:bind(rows)
  self.inputs, self.outputs = rows, rows
end

-- forward: x (m×n) → y (m×n)
--   training:   mask = (u ≥ p)/(1 − p), u ~ U[0, 1) by Philox (seed, step)
--               y = x ∘ mask                       dropout, one kernel for both
--   evaluation: y = x                              (no kernel: x itself)
function Dropout:forward(x, index)
  check_input(self, x, index)
  self.n = x.cols
  if not self.training or self.p == 0 then
    self.used_mask = nil
    return x
  end
  if self._rows ~= x.rows then  -- buffers sized for this layer's rows (a dropout takes any size)
    self._rows = x.rows
    self.buf = buffers(self.dev, {mask = x.rows, y = x.rows, dx = x.rows})
  end
  local b = self.buf:get(x.cols)
  self.step = self.step + 1
  vela.dropout(x, b.mask, b.y, self.p, self.seed, self.step)
  self.used_mask = b.mask
  return b.y
end

-- backward: dy → dx = dy ∘ mask (the forward's mask; the same scaling), or dy in evaluation.
function Dropout:backward(dy, need_dx)
  assert(self.n, "nn.dropout: backward before forward")
  if need_dx == false then return end
  if not self.used_mask then return dy end
  local b = self.buf:get(self.n)
  vela.mul(dy, self.used_mask, b.dx)
  return b.dx
end

-- float64 for nn.gradcheck: y = x ∘ mask, with the mask of the last forward.
function Dropout:host_forward(x, _, ctx)
  if not self.used_mask then return x end
  ctx.mask = ctx.mask or host(self.used_mask)
  local m, out = ctx.mask, {}
  for i, row in ipairs(x) do
    local r, mi = {}, m[i]
    for j, v in ipairs(row) do r[j] = v * mi[j] end
    out[i] = r
  end
  return out
end

function Dropout:describe() return {kind = "dropout", p = self.p, seed = self.seed, step = self.step} end

-- ---------------------------------------------------------------------------
-- nn.batchnorm(features [, {channels =}]): batch normalization
-- ---------------------------------------------------------------------------

local BatchNorm = layer.class({"gamma", "beta", "running_mean", "running_var"})
layers.BatchNorm = BatchNorm
BatchNorm.forget = {"zero"}

-- nn.batchnorm(features [, {channels =, momentum = 0.1, eps = 1e-5, device =}]):
-- features is the input's rows. Each row is one feature, or with channels = C
-- (images of C channels, C·H·W rows, channel-major) each channel is one,
-- normalized over its H·W pixels of every sample. γ = 1, β = 0 at first;
-- running mean 0 and variance 1, updated in training by
--   running ← (1 − momentum)·running + momentum·batch   (the variance unbiased: ·N/(N − 1)).
function layers.batchnorm(features, opts)
  if math.type(features) ~= "integer" or features < 1 then
    error(fmt("nn.batchnorm: features must be a positive integer (the input's rows), got %s", tostring(features)), 2)
  end
  opts = require("vela.options").check("nn.batchnorm", opts, {"channels", "momentum", "eps", "device"})
  local channels = opts.channels or features
  if math.type(channels) ~= "integer" or channels < 1 or features % channels ~= 0 then
    error(fmt("nn.batchnorm: channels must be a positive integer dividing features (%d), got %s", features,
      tostring(opts.channels)), 2)
  end
  local momentum, eps = opts.momentum or 0.1, opts.eps or 1e-5
  if type(momentum) ~= "number" or not (momentum >= 0 and momentum <= 1) then
    error(fmt("nn.batchnorm: momentum must be a number in [0, 1], got %s", tostring(momentum)), 2)
  end
  if type(eps) ~= "number" or not (eps > 0) then
    error(fmt("nn.batchnorm: eps must be a positive number, got %s", tostring(eps)), 2)
  end
  local dev = layer.device(opts, "nn.batchnorm")
  local self = setmetatable({inputs = features, outputs = features, channels = channels, group = features // channels,
    momentum = momentum, eps = eps, training = true}, BatchNorm)
  self.gamma = vela.fill(alloc(dev, channels, 1), 1)
  self.beta = alloc(dev, channels, 1)
  self.running_mean = alloc(dev, channels, 1)
  self.running_var = vela.fill(alloc(dev, channels, 1), 1)
  return self:_on(dev)
end

function BatchNorm:_setup(dev)
  self.dgamma = alloc(dev, self.channels, 1)
  self.dbeta = alloc(dev, self.channels, 1)
  self.mean = alloc(dev, self.channels, 1)   -- the last training batch's statistics
  self.var = alloc(dev, self.channels, 1)
  self.state = self.state or {gamma = {}, beta = {}}
  self.buf = buffers(dev, {y = self.inputs, dx = self.inputs})
  self.x = nil
  self._checked = nil
  self._params = {{self.gamma, self.dgamma, self.state.gamma, name = "gamma"},
                  {self.beta, self.dbeta, self.state.beta, name = "beta"}}
end

function BatchNorm:__tostring()
  if self.channels ~= self.inputs then return fmt("batchnorm(%d, %d channels)", self.inputs, self.channels) end
  return fmt("batchnorm(%d)", self.inputs)
end

-- forward: x (features×n) → y (features×n), per feature f (a row, or a channel's rows):
--   training:   μ = Σ x / N, σ² = Σ (x − μ)² / N      batchnorm_stats, N = n·(rows per feature)
--               y = γ·(x − μ)/√(σ² + ε) + β           batchnorm
--               running_mean ← (1 − m)·running_mean + m·μ              axpby
--               running_var  ← (1 − m)·running_var + m·σ²·N/(N − 1)   axpby
--   evaluation: y = γ·(x − running_mean)/√(running_var + ε) + β         batchnorm
function BatchNorm:forward(x, index)
  check_input(self, x, index)
  local n = x.cols
  local b = self.buf:get(n)
  self.x, self.n, self.used_batch = x, n, self.training
  if self.training then
    local N = n * self.group
    vela.batchnorm_stats(x, self.mean, self.var, self.group)
    vela.batchnorm(x, self.mean, self.var, self.gamma, self.beta, b.y, self.eps, self.group)
    local m = self.momentum
    vela.axpby(m, self.mean, 1 - m, self.running_mean)
    if N > 1 then vela.axpby(m * N / (N - 1), self.var, 1 - m, self.running_var) end
  else
    vela.batchnorm(x, self.running_mean, self.running_var, self.gamma, self.beta, b.y, self.eps, self.group)
  end
  return b.y
end

-- backward: dy (features×n) → dx, filling dγ and dβ (x̂ = (x − μ)/√(σ² + ε)):
--   dβ = Σ dy,  dγ = Σ dy·x̂                            batchnorm_backward (sums)
--   dx = γ/(N·√(σ² + ε))·(N·dy − dβ − x̂·dγ)            batchnorm_backward (one pass)
-- In evaluation mode μ and σ² are the running statistics, constants:
--   dx = γ·dy/√(running_var + ε)                        batchnorm with mean 0, β 0
--   dβ, dγ: the sums above with the running statistics  batchnorm_backward without dx
function BatchNorm:backward(dy, need_dx)
  local b = check_grad(self, dy, self.inputs, "batchnorm")
  if self.used_batch then
    vela.batchnorm_backward(dy, self.x, self.mean, self.var, self.gamma, self.dgamma, self.dbeta,
      need_dx ~= false and b.dx or nil, self.eps, self.group)
    if need_dx == false then return end
    return b.dx
  end
  vela.batchnorm_backward(dy, self.x, self.running_mean, self.running_var, self.gamma, self.dgamma, self.dbeta, nil,
    self.eps, self.group)
  if need_dx == false then return end
  self.zero = self.zero or alloc(self.dev, self.channels, 1)
  vela.batchnorm(dy, self.zero, self.running_var, self.gamma, self.zero, b.dx, self.eps, self.group)
  return b.dx
end

function BatchNorm:buffers() return {running_mean = self.running_mean, running_var = self.running_var} end

-- float64 for nn.gradcheck: the same equations, the statistics of x itself
-- in training, the running ones (read once) in evaluation.
function BatchNorm:host_forward(x, P, ctx)
  local G, C, n = self.group, self.channels, #x[1]
  local out = {}
  for c = 1, C do
    local r0 = (c - 1) * G
    local mu, var
    if self.used_batch then
      local s, N = 0, G * n
      for i = r0 + 1, r0 + G do for j = 1, n do s = s + x[i][j] end end
      mu = s / N
      local q = 0
      for i = r0 + 1, r0 + G do for j = 1, n do q = q + (x[i][j] - mu) ^ 2 end end
      var = q / N
    else
      ctx.rm = ctx.rm or host(self.running_mean)
      ctx.rv = ctx.rv or host(self.running_var)
      mu, var = ctx.rm[c][1], ctx.rv[c][1]
    end
    local a, beta = P.gamma[c][1] / math.sqrt(var + self.eps), P.beta[c][1]
    for i = r0 + 1, r0 + G do
      local row = {}
      for j = 1, n do row[j] = a * (x[i][j] - mu) + beta end
      out[i] = row
    end
  end
  return out
end

function BatchNorm:describe()
  return {kind = "batchnorm", features = self.inputs, channels = self.channels, momentum = self.momentum, eps = self.eps}
end

-- ---------------------------------------------------------------------------

function layers.attach(nn)
  nn.dropout, nn.batchnorm = layers.dropout, layers.batchnorm
  nn.Dropout, nn.BatchNorm = Dropout, BatchNorm
  nn.layer_kinds.dropout = function(d, dev)
    local l = layers.dropout(d.p, {seed = d.seed, device = dev})
    l.step = d.step or 0
    return l
  end
  nn.layer_kinds.batchnorm = function(d, dev)
    return layers.batchnorm(d.features, {channels = d.channels, momentum = d.momentum, eps = d.eps, device = dev})
  end
  return layers
end

return layers

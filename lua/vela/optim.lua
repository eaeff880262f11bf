-- vela.optim: optimizers that update parameters in place, each parameter in
-- one pass of a fused kernel (vela.sgd_step, vela.adam_step; plain SGD is one
-- axpy), and learning-rate schedules.
--
-- An optimizer steps a list of {param, grad, state} (what net:params()
-- returns). Its state (velocities, moments) lives in that state table, made
-- on the parameter's device on the first step; net:to(dev) moves it with the
-- parameters, so training carries on where it stopped.
local vela = require "vela"

local optim = {}
local axpy, sgd_step, adam_step = vela.axpy, vela.sgd_step, vela.adam_step
local fmt = string.format

local matrix_mt = getmetatable(vela.zeros(0, 0, "float32", "cpu"))

local function is_matrix(m) return getmetatable(m) == matrix_mt end

-- A step is all or nothing: every parameter, gradient and state matrix is
-- checked before any is changed (kernels on checked operands do not fail),
-- and new state is made for all parameters before it is kept.
local function check_params(name, params)
  if type(params) ~= "table" then error(name .. ":step: expected net:params() (a list of {param, grad})", 3) end
  if params.params then params = params:params() end
  for i = 1, #params do
    local p = params[i]
    local what = fmt("%s:step: parameter %d (%s)", name, i, type(p) == "table" and tostring(p.name or i) or "?")
    if type(p) ~= "table" or not is_matrix(p[1]) or not is_matrix(p[2]) or type(p[3]) ~= "table" then
      error(what .. " is not a {param, grad, state} triple", 3)
    end
    local w, g = p[1], p[2]
    if w.released or g.released then error(what .. ": a released matrix", 3) end
    if w.rows ~= g.rows or w.cols ~= g.cols then
      error(fmt("%s: the parameter is %d×%d but its gradient is %d×%d", what, w.rows, w.cols, g.rows, g.cols), 3)
    end
    if not rawequal(w:device(), g:device()) then
      error(fmt("%s: the parameter is on %s but its gradient is on %s", what, w:device():name(), g:device():name()), 3)
    end
    if w:dtype() ~= "float32" or g:dtype() ~= "float32" then error(what .. ": parameters must be float32", 3) end
    for k, m in pairs(p[3]) do
      if is_matrix(m) and (m.released or m.rows ~= w.rows or m.cols ~= w.cols or not rawequal(m:device(), w:device())) then
        error(fmt("%s: its state '%s' is released, or not of the parameter's shape and device", what, tostring(k)), 3)
      end
    end
  end
  return params
end

-- Makes the missing state of every parameter (names: the state fields, each
-- a zero matrix like the parameter), all or nothing.
local function make_state(name, params, key, names)
  local made, pending = {}, {}
  local ok, err = pcall(function()
    for i = 1, #params do
      local st = params[i][3]
      if not st[key] then
        local new = {}
        for _, n in ipairs(names) do
          new[n] = vela.fill(params[i][1]:raw(), 0)
          made[#made + 1] = new[n]
        end
        pending[i] = new
      end
    end
  end)
  if not ok then
    for _, m in ipairs(made) do pcall(m.release, m) end
    error(fmt("%s:step: %s (no parameter was changed)", name, tostring(err):gsub("^[^:]*:%d+: ", "")), 3)
  end
  for i, new in pairs(pending) do
    for n, m in pairs(new) do params[i][3][n] = m end
  end
end

-- optim.sgd{lr = 0.01, momentum = 0, weight_decay = 0, nesterov = false}
--   plain:     w ← w − lr·g
--   momentum:  v ← μ·v + g ;  w ← w − lr·v            (PyTorch's form)
--   nesterov:  v ← μ·v + g ;  w ← w − lr·(g + μ·v)
-- weight decay adds λ·w to g first (g' = g + λ·w; with momentum inside the
-- fused sgd_step, which leaves g as it was; without, in the gradient buffer).
local SGD = {}
SGD.__index = SGD

-- optim.sgd(0.1) and the like: the options are a table.
local function check_opts(name, opts, example)
  if opts ~= nil and type(opts) ~= "table" then
    error(string.format("optim.%s: takes a table of options, e.g. optim.%s%s; got a %s", name, name, example,
      type(opts)), 3)
  end
  if type(opts) == "table" and opts.params then
    error(string.format("optim.%s: the parameters go to opt:step(net), not to the constructor", name), 3)
  end
  return opts or {}
end

function optim.sgd(opts)
  opts = check_opts("sgd", opts, "{lr = 0.1, momentum = 0.9}")
  local self = setmetatable({lr = opts.lr or 0.01, momentum = opts.momentum or 0,
                             weight_decay = opts.weight_decay or 0, nesterov = opts.nesterov or false,
                             name = "sgd"}, SGD)
  if self.nesterov and self.momentum == 0 then error("optim.sgd: nesterov needs a momentum", 2) end
  return self
end

function SGD:step(params)
  params = check_params("optim.sgd", params)
  self.steps = (self.steps or 0) + 1
  local lr, mu, wd = self.lr, self.momentum, self.weight_decay
  if mu ~= 0 then make_state("optim.sgd", params, "v", {"v"}) end
  for i = 1, #params do
    local p = params[i]
    local w, g, st = p[1], p[2], p[3]
    if mu == 0 then
      if wd ~= 0 then axpy(wd, w, g) end
      axpy(-lr, g, w)
    else
      -- v ← μ·v + g'; w ← w − lr·v (nesterov: w ← w − lr·(g' + μ·v)), one pass
      sgd_step(w, g, st.v, lr, mu, wd, self.nesterov)
    end
  end
end

function SGD:__tostring()
  return string.format("sgd{lr = %g, momentum = %g%s}", self.lr, self.momentum,
    self.weight_decay ~= 0 and string.format(", weight_decay = %g", self.weight_decay) or "")
end

-- optim.momentum{lr =, momentum = 0.9}: sgd with momentum.
function optim.momentum(opts)
  opts = check_opts("momentum", opts, "{lr = 0.1, momentum = 0.9}")
  return optim.sgd{lr = opts.lr, momentum = opts.momentum or 0.9, weight_decay = opts.weight_decay,
                   nesterov = opts.nesterov}
end

-- optim.adam{lr = 0.001, beta1 = 0.9, beta2 = 0.999, eps = 1e-8}
--   m ← β₁·m + (1 − β₁)·g
--   v ← β₂·v + (1 − β₂)·g²
--   w ← w − lr·√(1 − β₂ᵗ)/(1 − β₁ᵗ) · m / (√v + ε̂)
-- (the bias correction folded into the step, as in the Adam paper's
-- efficient form; ε̂ = ε·√(1 − β₂ᵗ) keeps it equal to the textbook form).
local Adam = {}
Adam.__index = Adam

function optim.adam(opts)
  opts = check_opts("adam", opts, "{lr = 0.001}")
  return setmetatable({lr = opts.lr or 0.001, beta1 = opts.beta1 or 0.9, beta2 = opts.beta2 or 0.999,
                       eps = opts.eps or 1e-8, name = "adam"}, Adam)
end

function Adam:step(params)
  params = check_params("optim.adam", params)
  self.steps = (self.steps or 0) + 1
  local b1, b2 = self.beta1, self.beta2
  make_state("optim.adam", params, "m", {"m", "v"})
  for i = 1, #params do
    local p = params[i]
    local w, g, st = p[1], p[2], p[3]
    st.t = (st.t or 0) + 1
    local c1, c2 = 1 - b1 ^ st.t, 1 - b2 ^ st.t
    -- m ← β₁m + (1−β₁)g; v ← β₂v + (1−β₂)g²; w ← w − lrₜ·m/(√v + ε̂), one pass
    adam_step(w, g, st.m, st.v, self.lr * math.sqrt(c2) / c1, b1, b2, self.eps * math.sqrt(c2))
  end
end

function Adam:__tostring()
  return string.format("adam{lr = %g, beta1 = %g, beta2 = %g, eps = %g}", self.lr, self.beta1, self.beta2, self.eps)
end

-- ---------------------------------------------------------------------------
-- Learning-rate schedules: functions of the epoch (1-based) giving the rate.
-- nn.fit sets optimizer.lr = schedule(epoch) before each epoch.
-- ---------------------------------------------------------------------------

-- optim.step_lr(lr, every, gamma): lr·gamma^⌊(epoch − 1)/every⌋.
function optim.step_lr(lr, every, gamma)
  assert(every and every >= 1, "optim.step_lr: every must be >= 1")
  gamma = gamma or 0.1
  return function(epoch) return lr * gamma ^ ((epoch - 1) // every) end
end

-- optim.cosine(lr, epochs [, min_lr]): from lr at epoch 1 down to min_lr at
-- epoch `epochs` along half a cosine.
function optim.cosine(lr, epochs, min_lr)
  min_lr = min_lr or 0
  return function(epoch)
    if epochs <= 1 then return lr end
    local t = math.min(math.max((epoch - 1) / (epochs - 1), 0), 1)
    return min_lr + (lr - min_lr) * 0.5 * (1 + math.cos(math.pi * t))
  end
end

-- Torch7 and PyTorch names: one clear error naming vela's spelling.
local torch_names = {
  SGD = "vela spells it optim.sgd{lr = 0.1, momentum = 0.9}; then opt:step(net) after net:backward",
  Adam = "vela spells it optim.adam{lr = 0.001}; then opt:step(net) after net:backward",
  lr_scheduler = "schedules are functions of the epoch: optim.step_lr(lr, every, gamma), optim.cosine(lr, epochs)",
}
setmetatable(optim, {__index = function(_, k)
  if torch_names[k] then error(string.format("optim.%s: %s", k, torch_names[k]), 2) end
end})

-- help(nn.fit), ?nn.linear: documentation for the shell's help.
if vela.doc then
  vela.doc("optim.sgd", "optim.sgd{lr = 0.01, momentum = 0, weight_decay = 0, nesterov = false}",
    "SGD in place: with momentum one fused sgd_step per parameter, else one axpy; opt:step(net) or opt:step(net:params()).", optim.sgd)
  vela.doc("optim.momentum", "optim.momentum{lr =, momentum = 0.9}",
    "SGD with momentum: v ← μv + g, w ← w − lr·v.", optim.momentum)
  vela.doc("optim.adam", "optim.adam{lr = 0.001, beta1 = 0.9, beta2 = 0.999, eps = 1e-8}",
    "Adam, state on the parameters' device.", optim.adam)
  vela.doc("sgd:step", "opt:step(net)  |  opt:step(net:params())",
    "One SGD update of every parameter from its gradient (after net:backward), in place, one pass per parameter (sgd_step); momentum state lives beside each parameter. PyTorch optimizer.step().", SGD.step)
  vela.doc("adam:step", "opt:step(net)  |  opt:step(net:params())",
    "One Adam update of every parameter in one pass each (adam_step; moments and step count kept per parameter, on its device). PyTorch optimizer.step().", Adam.step)
  vela.doc("optim.step_lr", "optim.step_lr(lr, every, gamma) -> schedule",
    "lr·gamma^⌊(epoch−1)/every⌋, for nn.fit's schedule option.", optim.step_lr)
  vela.doc("optim.cosine", "optim.cosine(lr, epochs [, min_lr]) -> schedule",
    "Half a cosine from lr to min_lr over the epochs.", optim.cosine)
end

return optim

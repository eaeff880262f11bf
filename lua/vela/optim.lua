-- vela.optim: optimizers that update parameters in place, each parameter in
-- one pass of a fused kernel (vela.sgd_step, adam_step, adamw_step,
-- rmsprop_step, adagrad_step; plain SGD is one axpy), and learning-rate
-- schedules. The update rules are PyTorch's (torch.optim), and so are the
-- option names.
--
-- An optimizer steps a list of {param, grad, state} (what net:params()
-- returns). Its state (velocities, moments) lives in that state table, made
-- on the parameter's device on the first step; net:to(dev) moves it with the
-- parameters, so training carries on where it stopped.
--
-- Hyperparameters are checked when an optimizer is made, when nn.load makes
-- one from a checkpoint (through the same constructor), and before every
-- step (nn.fit's schedule and the user may change opt.lr): a step with a bad
-- one is an error that changes nothing. nn.fit checks them before each epoch
-- and steps with every check at an epoch's first batch only (optim._epoch_stepper).
local vela = require "vela"

local optim = {}
local axpy = vela.axpy
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
-- a matrix like the parameter filled with init, 0 by default), all or nothing.
local function make_state(name, params, names, init)
  local made, pending = {}, {}
  local ok, err = pcall(function()
    for i = 1, #params do
      local st = params[i][3]
      for _, n in ipairs(names) do
        if not st[n] then
          local m = vela.fill(params[i][1]:raw(), init or 0)
          made[#made + 1] = m
          pending[#pending + 1] = {st, n, m}
        end
      end
    end
  end)
  if not ok then
    for _, m in ipairs(made) do pcall(m.release, m) end
    error(fmt("%s:step: %s (no parameter was changed)", name, tostring(err):gsub("^[^:]*:%d+: ", "")), 3)
  end
  for _, e in ipairs(pending) do e[1][e[2]] = e[3] end
end

-- ---------------------------------------------------------------------------
-- Hyperparameters: one spec per optimizer, {name, default, check}, checked on
-- construction (unknown keys too), on load and before every step.
-- ---------------------------------------------------------------------------

local INF = math.huge
local function in_range(lo, hi, hi_open)
  return function(x)
    if math.type(x) == nil then return "a number" end
    local ok = x == x and x > -INF and x < INF and x >= lo and (hi_open and x < hi or not hi_open and x <= hi)
    if not ok then return fmt("a number in [%g, %s%s", lo, hi == INF and "inf" or fmt("%g", hi), hi_open and ")" or "]") end
  end
end
local nonneg, unit, unit_open = in_range(0, INF, true), in_range(0, 1), in_range(0, 1, true)
local function boolean(x) if type(x) ~= "boolean" then return "true or false" end end
local function count(x)
  if math.type(x) == nil or x ~= math.floor(x) or not (x >= 0 and x < 2 ^ 53) then return "a non-negative integer" end
end

local specs = {
  sgd = {{"lr", 0.01, nonneg}, {"momentum", 0, unit}, {"weight_decay", 0, nonneg}, {"nesterov", false, boolean}},
  adam = {{"lr", 0.001, nonneg}, {"beta1", 0.9, unit_open}, {"beta2", 0.999, unit_open}, {"eps", 1e-8, nonneg},
          {"weight_decay", 0, nonneg}},
  adamw = {{"lr", 0.001, nonneg}, {"beta1", 0.9, unit_open}, {"beta2", 0.999, unit_open}, {"eps", 1e-8, nonneg},
           {"weight_decay", 0.01, nonneg}},
  rmsprop = {{"lr", 0.01, nonneg}, {"alpha", 0.99, unit}, {"eps", 1e-8, nonneg}, {"weight_decay", 0, nonneg},
             {"momentum", 0, unit}, {"centered", false, boolean}},
  adagrad = {{"lr", 0.01, nonneg}, {"lr_decay", 0, nonneg}, {"weight_decay", 0, nonneg},
             {"initial_accumulator_value", 0, nonneg}, {"eps", 1e-10, nonneg}},
}
optim.specs = specs  -- nn.save keeps these fields (and steps) of an optimizer

-- Torch7's option names (optim.sgd's config table) and PyTorch's betas tuple.
local torch_keys = {learningRate = "lr", learningRateDecay = "lr_decay", weightDecay = "weight_decay",
                    epsilon = "eps", initialAccumulatorValue = "initial_accumulator_value",
                    dampening = false, amsgrad = false, foreach = false, fused = false, maximize = false}

-- The edit distance of two short names, for "did you mean".
local function distance(a, b)
  local prev = {}
  for j = 0, #b do prev[j] = j end
  for i = 1, #a do
    local cur = {[0] = i}
    for j = 1, #b do
      cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a:byte(i) == b:byte(j) and 0 or 1))
    end
    prev = cur
  end
  return prev[#b]
end

-- Every key of opts is known, else an error naming the function, the key, the
-- nearest known one and all of them. A table nn.save wrote (name = kind) may
-- also hold name and steps.
local function check_keys(kind, opts)
  local known, list = {}, {}
  for _, s in ipairs(specs[kind]) do known[s[1]] = true; list[#list + 1] = s[1] end
  if kind == "adam" or kind == "adamw" then known.betas = true; list[#list + 1] = "betas" end
  local saved = opts.name == kind
  for k in pairs(opts) do
    if not known[k] and not (saved and (k == "name" or k == "steps")) then
      local hint = torch_keys[k]
      local why
      if hint then why = fmt("Torch7's %s is vela's %s", k, hint)
      elseif hint == false then why = fmt("vela's optim.%s has no %s", kind, k)
      else
        local best, bd = nil, 3  -- at most two edits, fewer than the key's length
        for _, n in ipairs(list) do
          local d = type(k) == "string" and distance(k:lower(), n) or 99
          if d < bd and d < #k then best, bd = n, d end
        end
        why = best and fmt("did you mean '%s'?", best) or nil
      end
      error(fmt("optim.%s: unknown option '%s'%s; options: %s", kind, tostring(k), why and " (" .. why .. ")" or "",
        table.concat(list, ", ")), 4)
    end
  end
end

local function show(x) return x ~= x and "nan" or tostring(x) end  -- not "-nan"

-- Checks every hyperparameter of an optimizer (a made one, or its options).
local function validate(kind, self, where, level)
  for _, s in ipairs(specs[kind]) do
    local want = s[3](self[s[1]])
    if want then
      error(fmt("%s: %s is %s but must be %s", where, s[1], show(self[s[1]]), want), level + 1)
    end
  end
  if self.steps ~= nil and count(self.steps) then
    error(fmt("%s: steps is %s but must be a non-negative integer", where, show(self.steps)), level + 1)
  end
end

-- optim.sgd(0.1) and the like: the options are a table. Returns the
-- optimizer object of `kind`, every field its option or default, checked.
local function construct(kind, mt, opts, example)
  if opts ~= nil and type(opts) ~= "table" then
    error(fmt("optim.%s: takes a table of options, e.g. optim.%s%s; got a %s", kind, kind, example, type(opts)), 3)
  end
  opts = opts or {}
  if opts.params then error(fmt("optim.%s: the parameters go to opt:step(net), not to the constructor", kind), 3) end
  check_keys(kind, opts)
  local self = {name = kind, steps = opts.name == kind and opts.steps or nil}
  for _, s in ipairs(specs[kind]) do
    local v = opts[s[1]]
    if v == nil then v = s[2] end
    self[s[1]] = v
  end
  if opts.betas ~= nil then
    if type(opts.betas) ~= "table" or opts.beta1 ~= nil or opts.beta2 ~= nil then
      error(fmt("optim.%s: betas must be a table {beta1, beta2} (and not given with beta1 or beta2)", kind), 3)
    end
    self.beta1, self.beta2 = opts.betas[1], opts.betas[2]
  end
  validate(kind, self, "optim." .. kind, 3)
  return setmetatable(self, mt)
end

-- The common step: checks, makes the state, then updates each parameter
-- with update(self, w, g, st), which may not fail. Returns the step and the
-- update alone (apply: no checks, the state already made), which
-- optim._epoch_stepper gives nn.fit for the steps after an epoch's first.
local function stepper(kind, state_names, update)
  local function apply(self, params)
    self.steps = (self.steps or 0) + 1
    for i = 1, #params do
      local p = params[i]
      update(self, p[1], p[2], p[3])
    end
  end
  return function(self, params)
    local where = "optim." .. kind
    params = check_params(where, params)
    validate(kind, self, where .. ":step", 2)
    local names = type(state_names) == "function" and state_names(self) or state_names
    make_state(where, params, names, kind == "adagrad" and self.initial_accumulator_value or 0)
    apply(self, params)
  end, apply
end

local function describe(self)
  local parts = {}
  for _, s in ipairs(specs[self.name]) do parts[#parts + 1] = fmt("%s = %s", s[1], tostring(self[s[1]])) end
  return fmt("%s{%s}", self.name, table.concat(parts, ", "))
end

-- A class: methods on the metatable itself (as torch/nn does), printed by describe.
local function class()
  local c = {__tostring = describe}
  c.__index = c
  return c
end

-- optim[kind](opts): construct's object. (Not a tail call: the errors' level
-- counts this frame.)
local function constructor(kind, mt, example)
  return function(opts)
    local self = construct(kind, mt, opts, example)
    return self
  end
end

-- optim.sgd{lr = 0.01, momentum = 0, weight_decay = 0, nesterov = false}
--   plain:     w ← w − lr·g
--   momentum:  v ← μ·v + g ;  w ← w − lr·v            (PyTorch's form)
--   nesterov:  v ← μ·v + g ;  w ← w − lr·(g + μ·v)
-- weight decay adds λ·w to g first (g' = g + λ·w; with momentum inside the
-- fused sgd_step, which leaves g as it was; without, in the gradient buffer).
local SGD = class()

function optim.sgd(opts)
  local self = construct("sgd", SGD, opts, "{lr = 0.1, momentum = 0.9}")
  if self.nesterov and self.momentum == 0 then error("optim.sgd: nesterov needs a momentum", 2) end
  return self
end

SGD.step, SGD._apply = stepper("sgd", function(self) return self.momentum ~= 0 and {"v"} or {} end,
  function(self, w, g, st)
    if self.momentum == 0 then
      if self.weight_decay ~= 0 then axpy(self.weight_decay, w, g) end
      axpy(-self.lr, g, w)
    else
      -- v ← μ·v + g'; w ← w − lr·v (nesterov: w ← w − lr·(g' + μ·v)), one pass
      vela.sgd_step(w, g, st.v, self.lr, self.momentum, self.weight_decay, self.nesterov)
    end
  end)

-- p = {w, g, state} of a layer's weight: g ← a·b and the update of w in one
-- kernel (mm_sgd_step; nn.fit's step on the cpu, optim._product_stepper).
function SGD:_mm_step(a, b, p)
  vela.mm_sgd_step(a, b, p[2], p[1], p[3].v, self.lr, self.momentum, self.weight_decay, self.nesterov)
end

-- optim.momentum{lr =, momentum = 0.9}: sgd with momentum.
function optim.momentum(opts)
  if opts ~= nil and type(opts) ~= "table" then
    error(fmt("optim.momentum: takes a table of options, e.g. optim.momentum{lr = 0.1}; got a %s", type(opts)), 2)
  end
  opts = opts or {}
  local o = {}
  for k, v in pairs(opts) do o[k] = v end
  if o.momentum == nil then o.momentum = 0.9 end
  return optim.sgd(o)
end

-- optim.adam{lr = 0.001, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0}
--   g' = g + λ·w (PyTorch's Adam: L2 in the gradient)
--   m ← β₁·m + (1 − β₁)·g' ;  v ← β₂·v + (1 − β₂)·g'²
--   w ← w − lr·√(1 − β₂ᵗ)/(1 − β₁ᵗ) · m / (√v + ε̂)
-- (the bias correction folded into the step, as in the Adam paper's
-- efficient form; ε̂ = ε·√(1 − β₂ᵗ) keeps it equal to the textbook form; all
-- in double here, 1 − β in double in the kernel's host side).
-- optim.adamw{...weight_decay = 0.01}: the same with decoupled weight decay,
--   w ← (1 − lr·λ)·w before the Adam step (Loshchilov & Hutter; PyTorch AdamW).
local Adam = class()
local AdamW = class()

optim.adam = constructor("adam", Adam, "{lr = 0.001}")
optim.adamw = constructor("adamw", AdamW, "{lr = 0.001, weight_decay = 0.01}")

local function adam_update(decoupled)
  return function(self, w, g, st)
    st.t = (st.t or 0) + 1
    local c1, c2 = 1 - self.beta1 ^ st.t, 1 - self.beta2 ^ st.t
    local lr, eps = self.lr * math.sqrt(c2) / c1, self.eps * math.sqrt(c2)
    if decoupled then
      vela.adamw_step(w, g, st.m, st.v, lr, self.beta1, self.beta2, eps, self.lr * self.weight_decay)
    else
      vela.adam_step(w, g, st.m, st.v, lr, self.beta1, self.beta2, eps, self.weight_decay)
    end
  end
end
Adam.step, Adam._apply = stepper("adam", {"m", "v"}, adam_update(false))
AdamW.step, AdamW._apply = stepper("adamw", {"m", "v"}, adam_update(true))

-- optim.rmsprop{lr = 0.01, alpha = 0.99, eps = 1e-8, weight_decay = 0, momentum = 0, centered = false}
--   g' = g + λ·w ;  sq ← α·sq + (1 − α)·g'²
--   d = √sq + ε   (centered: gavg ← α·gavg + (1 − α)·g',  d = √(sq − gavg²) + ε)
--   momentum μ > 0: buf ← μ·buf + g'/d, w ← w − lr·buf ;  else w ← w − lr·g'/d
local RMSprop = class()

optim.rmsprop = constructor("rmsprop", RMSprop, "{lr = 0.01}")

RMSprop.step, RMSprop._apply = stepper("rmsprop", function(self)
    local names = {"sqavg"}
    if self.momentum ~= 0 then names[#names + 1] = "mbuf" end
    if self.centered then names[#names + 1] = "gavg" end
    return names
  end,
  function(self, w, g, st)
    vela.rmsprop_step(w, g, st.sqavg, self.lr, self.alpha, self.eps, self.weight_decay, self.momentum,
      self.momentum ~= 0 and st.mbuf or nil, self.centered and st.gavg or nil)
  end)

-- optim.adagrad{lr = 0.01, lr_decay = 0, weight_decay = 0, initial_accumulator_value = 0, eps = 1e-10}
--   g' = g + λ·w ;  sum ← sum + g'² ;  w ← w − lrₜ·g'/(√sum + ε),  lrₜ = lr/(1 + (t − 1)·lr_decay)
local Adagrad = class()

optim.adagrad = constructor("adagrad", Adagrad, "{lr = 0.01}")

Adagrad.step, Adagrad._apply = stepper("adagrad", {"sumsq"}, function(self, w, g, st)
  st.t = (st.t or 0) + 1
  vela.adagrad_step(w, g, st.sumsq, self.lr / (1 + (st.t - 1) * self.lr_decay), self.eps, self.weight_decay)
end)

-- optim.check(opt): checks a made optimizer's hyperparameters (nn.fit and
-- nn.load call it; a step does too), returns opt.
function optim.check(opt, where)
  if type(opt) ~= "table" or not specs[opt.name] or type(opt.step) ~= "function" then
    error(fmt("%s: not an optimizer of vela.optim (optim.sgd{...}, optim.adam{...}, ...): %s", where or "optim.check",
      tostring(opt)), 2)
  end
  validate(opt.name, opt, where or "optim." .. opt.name, 2)
  return opt
end

-- optim._epoch_stepper(opt) -> step(params): nn.fit's optimizer step for one
-- epoch. Its first call is opt:step(params), every check made and the state
-- made; later calls with the same params table only update (the checks cost
-- ~0.03 ms a step of a 2-layer MLP, 3% of it, and nothing in an epoch of
-- nn.fit changes what they check: the parameters are the net's, and nn.fit
-- checks the hyperparameters before each epoch). An optimizer not made here,
-- or whose step was replaced, is stepped with opt:step every time.
-- part (optional): a list of some of those params (nn.fit's, when the rest
-- are stepped in their products): after the first call it is only updated too.
function optim._epoch_stepper(opt, part)
  local mt = type(opt) == "table" and getmetatable(opt)
  local apply = type(mt) == "table" and rawget(mt, "_apply")
  if not apply or rawget(opt, "step") ~= nil or mt.step == nil then
    return function(params) return opt:step(params) end
  end
  local checked
  return function(params)
    if checked and (rawequal(params, checked) or rawequal(params, part)) then return apply(opt, params) end
    opt:step(params)
    checked = params
  end
end

-- optim._steps_in_product(opt): whether a layer can run opt's update of its
-- weight inside the weight-gradient product (opt:_mm_step; Linear:backward):
-- an optim.sgd with momentum whose methods are its class's.
function optim._steps_in_product(opt)
  local mt = type(opt) == "table" and getmetatable(opt)
  return mt == SGD and rawget(opt, "step") == nil and rawget(opt, "_apply") == nil and rawget(opt, "_mm_step") == nil
    and opt.momentum ~= 0
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

-- Torch7 and PyTorch names (optim.SGD, ...): one clear error naming vela's
-- spelling, from lua/vela/torch.lua.
require("vela.torch")._attach("optim", optim)

if vela.doc then require("vela.optim_doc")(optim, {sgd = SGD, adam = Adam, adamw = AdamW, rmsprop = RMSprop,
                                                   adagrad = Adagrad}) end

return optim

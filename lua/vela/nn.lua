-- vela.nn: fully connected networks written with vela's kernels, meant to be
-- read as a worked example (in the manner of llm.c): each layer keeps its
-- forward and backward side by side, each starting with the shapes it takes
-- and gives, and each backward is the derivative as written on paper, one
-- kernel call per equation.
--
-- Conventions: one sample per column (a batch of n MNIST images is 784×n);
-- labels are a 1×n vector of 1-based class indices; every buffer a layer
-- needs is allocated once per batch size and reused, so a training step
-- allocates no device memory. The losses keep their per-sample values on the
-- device; reading them (a host wait) is left to the caller.
local vela = require "vela"
local options = require "vela.options"
local layer = require "vela.layer"

local nn = {}

local mm, mv, dense, mul = vela.mm, vela.mv, vela.dense, vela.mul
local fmt = string.format

-- What every layer shares (the base class, buffers, checks, moving between
-- devices) is lua/vela/layer.lua's.
local alloc, buffers, ones_on, same_device = layer.alloc, layer.buffers, layer.ones_on, layer.same_device
local resolve, move_layers, dev_name = layer.resolve, layer.move_layers, layer.dev_name
local check_input, check_grad = layer.check_input, layer.check_grad

-- ---------------------------------------------------------------------------
-- nn.linear: a ← act(W·x + b·1ᵀ)
-- ---------------------------------------------------------------------------

-- The activations and their fused backward kernels: the op table's (lua/vela/layer.lua).
local activations, from_z = layer.activations, layer.from_z

local Linear = layer.class({"w", "b"})
nn.Linear = Linear

-- nn.linear(inputs, outputs [, activation] [, opts]) with opts.init "he"
-- (default for relu) or "xavier" (default otherwise), opts.seed (default: the
-- next seed of vela's sequence, see seed(n)), opts.device.
-- Weights: W ~ N(0, 1)·s with s = √(2/inputs) (He) or √(2/(inputs+outputs))
-- (Xavier/Glorot); b = 0. The same seed gives the same W on every device.
--
-- A user activation: opts.f and opts.df, kernels written at the prompt (map):
-- f(z, a) writes a ← f(z) and df(z, d) writes d ← f′(z); the layer keeps z.
function nn.linear(inputs, outputs, activation, opts)
  if type(activation) == "table" then activation, opts = nil, activation end
  opts = options.check("nn.linear", opts, {"seed", "init", "device", "f", "df", "name"})
  local custom
  if opts.f ~= nil or opts.df ~= nil then
    if activation ~= nil then
      error(fmt("nn.linear: give an activation name or opts.f and opts.df, not both (got '%s' and f)",
        tostring(activation)), 2)
    end
    if type(opts.f) ~= "function" or type(opts.df) ~= "function" then
      error(fmt("nn.linear: opts.f and opts.df must both be kernels, f(z, a): a ← f(z) and df(z, d): d ← f′(z) " ..
        "(e.g. map\"x / (1.0 + exp(-x))\"), got %s and %s", type(opts.f), type(opts.df)), 2)
    end
    local ok, info = pcall(vela.kernel_info, opts.f)
    custom = {f = opts.f, df = opts.df, name = opts.name or (ok and info.name) or "custom"}
    activation = custom.name
  end
  activation = activation or "identity"
  assert(math.type(inputs) == "integer" and inputs > 0, "nn.linear: inputs must be a positive integer")
  assert(math.type(outputs) == "integer" and outputs > 0, "nn.linear: outputs must be a positive integer")
  if not custom and not activations[activation] then
    error(fmt("nn.linear: unknown activation '%s' (expected one of %s)", tostring(activation), layer.activation_list), 2)
  end
  local init, scale = layer.init_scale("nn.linear", opts.init, activation, inputs, outputs)

  local dev = layer.device(opts, "nn.linear")
  local self = setmetatable({inputs = inputs, outputs = outputs, activation = activation, init = init,
    custom = custom}, Linear)
  self.w, self.b = layer.weights(dev, outputs, inputs, opts.seed, scale)
  return self:_on(dev)
end

-- Gradients, optimizer state and batch buffers, all on the parameters' device.
function Linear:_setup(dev)
  self.dw = alloc(dev, self.outputs, self.inputs)
  self.db = alloc(dev, self.outputs, 1)
  self.state = self.state or {w = {}, b = {}}
  self.wt = self.w:t()
  local shapes = {a = self.outputs, delta = self.outputs, dx = self.inputs}
  if from_z[self.activation] or self.custom then shapes.z = self.outputs end
  self.buf = buffers(dev, shapes)
  self.x, self.xt = nil, nil
  self._params = {{self.w, self.dw, self.state.w, name = "w"}, {self.b, self.db, self.state.b, name = "b"}}
  self._checked = nil
end

function Linear:__tostring()
  return fmt("linear(%d→%d, %s)", self.inputs, self.outputs, self.activation)
end

function Linear:_check(x, index) check_input(self, x, index) end

-- forward: x (inputs×n) → a (outputs×n)
--   a = act(W·x + b·1ᵀ)
-- One fused kernel; unfused it reads  mm(1, W, x, 0, a); add_bias(b, a); act(a).
function Linear:forward(x, index)
  self:_check(x, index)
  local n = x.cols
  local buf = self.buf:get(n)
  if not rawequal(x, self.x) then self.xt = x:t() end  -- xᵀ for dW, a view made once per input
  self.x, self.a, self.n = x, buf.a, n
  if self.custom then
    -- a user activation: z kept for its derivative, a ← f(z)
    dense(self.w, x, self.b, buf.z, "identity")
    self.custom.f(buf.z, buf.a)
  elseif from_z[self.activation] then
    -- act′ needs z: keep it, then a ← act(z)
    dense(self.w, x, self.b, buf.z, "identity")
    vela[self.activation](buf.z, buf.a)
  else
    dense(self.w, x, self.b, buf.a, self.activation)
  end
  return buf.a
end

-- backward: da = ∂L/∂a (outputs×n) → dx = ∂L/∂x (inputs×n), or nothing when
-- need_dx is false (the first layer: nobody wants the gradient of the data).
-- The four equations of backprop, one kernel each:
--   δ  = da ∘ act′(z)        (outputs×n)       <act>_backward, act′ from a (or z)
--   dW = δ·xᵀ                (outputs×inputs)  mm
--   db = δ·1                 (outputs)         mv with a ones vector
--   dx = Wᵀ·δ                (inputs×n)        mm with W:t()
-- opt (nn.fit's, internal): an optimizer whose _mm_step updates W inside the
-- dW product (optim.sgd with momentum: mm_sgd_step); the caller steps the rest.
function Linear:backward(da, need_dx, opt)
  local buf = check_grad(self, da, self.outputs, "linear")
  local delta
  if self.custom then
    delta = buf.delta
    self.custom.df(buf.z, delta)  -- δ ← f′(z)
    vela.mul(delta, da, delta)     -- δ ← da ∘ f′(z)
  else
    delta = layer.delta(self.activation, da, buf.z, self.a, buf.delta)  -- δ ← da ∘ act′, one kernel
  end
  mv(1, delta, ones_on(self.dev, self.n), 0, self.db)
  if type(opt) == "table" then
    -- dx with the W of the forward pass, before the dW product updates W
    if need_dx ~= false then mm(1, self.wt, delta, 0, buf.dx) end
    opt:_mm_step(delta, self.xt, self._params[1])
    if need_dx ~= false then return buf.dx end
    return
  end
  mm(1, delta, self.xt, 0, self.dw)
  if need_dx == false then return end  -- no value: the prompt prints nothing
  mm(1, self.wt, delta, 0, buf.dx)
  return buf.dx
end

-- layer:to (w and b move, with their optimizer state), layer:params, layer(x)
-- are the base's (lua/vela/layer.lua).

-- ---------------------------------------------------------------------------
-- nn.sequential{layer, layer, ...}
-- ---------------------------------------------------------------------------

local Sequential = layer.class()
nn.Sequential = Sequential

function nn.sequential(layers)
  assert(type(layers) == "table" and #layers > 0, "nn.sequential: expected a list of layers")
  -- Image layers (nn.conv2d, the pools, nn.flatten: lua/vela/conv.lua, pool.lua) take the
  -- image shape {c, h, w} the layers before them give, through layers that keep
  -- the size (nn.dropout, nn.batchnorm).
  local image
  for i, l in ipairs(layers) do
    if type(l) == "table" and l.take_image then
      local ok, res = pcall(l.take_image, l, image, i)
      if not ok then error(res, 2) end
      image = res
    elseif not (type(l) == "table" and (l.bind or (image and l.inputs == l.outputs and l.inputs == image.c * image.h * image.w))) then
      image = nil
    end
  end
  -- A layer of any size (nn.dropout) has no inputs until layer:bind(rows)
  -- gives it its neighbour's: the layer before it, or for the first layer the one after.
  for i = 2, #layers do
    if layers[i].inputs == nil and layers[i].bind then layers[i]:bind(layers[i - 1].outputs) end
  end
  if layers[1].inputs == nil and layers[1].bind and layers[2] then layers[1]:bind(layers[2].inputs) end
  for i = 2, #layers do
    if layers[i].inputs ~= layers[i - 1].outputs then
      error(fmt("nn.sequential: layer %d (%s) takes %d inputs but layer %d (%s) gives %d outputs",
        i, tostring(layers[i]), layers[i].inputs, i - 1, tostring(layers[i - 1]), layers[i - 1].outputs), 2)
    end
  end
  local self = setmetatable({layers = layers, inputs = layers[1].inputs, outputs = layers[#layers].outputs}, Sequential)
  self:_collect()
  return self
end

function Sequential:_collect()
  local ps = {}
  for i, l in ipairs(self.layers) do
    for _, p in ipairs(l:params()) do
      p.name = fmt("%d.%s", i, p.name:match("[^.]*$"))
      ps[#ps + 1] = p
    end
  end
  self._params = ps
end

function Sequential:__tostring()
  local parts = {}
  for i, l in ipairs(self.layers) do parts[i] = tostring(l) end
  return fmt("sequential{%s} on %s", table.concat(parts, ", "), dev_name(self:device()))
end

function Sequential:device() return self.layers[1].dev end

-- forward: x (inputs×n) → output (outputs×n), layer by layer.
function Sequential:forward(x)
  for i, l in ipairs(self.layers) do
    x = l:forward(x, i)  -- i names the layer in an error
  end
  return x
end

-- backward: ∂L/∂output (outputs×n) → nothing; every layer's gradients are
-- filled. The first layer skips the gradient of its input.
function Sequential:backward(dout)
  self:_backward(dout)
end

-- opt: nn.fit's optimizer, given to the layers, each nn.linear updating its W
-- inside its dW product (Linear:backward; Sequential:_steps_left).
-- A layer with takes_act(before) true (a max pool after a relu conv:
-- lua/vela/pool.lua) applies the act′ of the layer before it in its own
-- backward, which then takes its gradient as δ (the same values, from a
-- smaller pass).
function Sequential:_backward(dout, opt)
  local layers, i = self.layers, #self.layers
  while i >= 1 do
    local l, before = layers[i], layers[i - 1]
    if before and l.takes_act and l:takes_act(before) then
      dout = before:backward(l:backward(dout, true, opt, true), i > 2, opt, true)
      i = i - 2
    else
      dout = l:backward(dout, i > 1, opt)
      i = i - 1
    end
  end
end

-- nn.fit's step on the cpu with optim.sgd with momentum updates each
-- nn.linear's W inside its weight-gradient product (mm_sgd_step: each piece of
-- dW's columns updated by the thread that computed it, while in its cache),
-- when neither the net's nor the layer's backward is replaced. Returns the
-- parameters the optimizer still steps itself (biases, other layers'), or nil
-- when none is stepped in a product. nn.fit then checks the loss before the
-- backward, which changes W: a bad batch still leaves everything as it was.
function Sequential:_steps_left()
  if rawget(self, "backward") ~= nil then return nil end
  local inside, rest = {}, {}
  for _, l in ipairs(self.layers) do
    if getmetatable(l) == Linear and rawget(l, "backward") == nil then inside[l:params()[1]] = true end
  end
  for _, p in ipairs(self:params()) do
    if not inside[p] then rest[#rest + 1] = p end
  end
  if #rest == #self:params() then return nil end
  return rest
end

-- The list of {param, grad, state, name = "1.w"}: what an optimizer steps.
function Sequential:params() return self._params end

-- Moves parameters, gradients and optimizer state to dev; buffers are made
-- afresh there. The net object stays the same, so code holding it carries on.
function Sequential:to(dev)
  dev = resolve(dev, "net:to")
  move_layers(self.layers, dev, "net:to")
  self:_collect()
  return self
end

-- net:train([on]) / net:eval(): the mode of every layer that has one
-- (nn.dropout drops only in training; nn.batchnorm uses the batch's
-- statistics in training and its running ones in evaluation). A new net
-- is in training mode; nn.fit trains in it, nn.evaluate and nn.predict
-- evaluate in evaluation mode and put the mode back.
function Sequential:train(on)
  on = on ~= false
  self.training = on
  for _, l in ipairs(self.layers) do
    if l.train then l:train(on) elseif l.training ~= nil then l.training = on end
  end
  return self
end

function Sequential:eval() return self:train(false) end

function Sequential:nparams()
  local n = 0
  for _, p in ipairs(self._params) do n = n + #p[1] end
  return n
end

-- ---------------------------------------------------------------------------
-- Losses: forward(output, labels) → per-sample loss vector (1×n, on the
-- device); backward() → ∂L/∂output for L the mean over the batch.
-- ---------------------------------------------------------------------------

-- The start of every loss's forward: the shapes checked every call, the
-- label values once per labels matrix, in the
-- kernels' words (reading them makes the host wait, which a training step must
-- not do: the batches of a loader reuse one matrix). The kernels check every
-- call's labels themselves (softmax_xent, gather_cols; on a Vulkan device the
-- next read reports a bad one), so a later bad batch is an error too.
-- Returns the loss's buffers for this batch (those its class names in
-- _shapes(k), made afresh when the classes k or the device change).
local function loss_buffers(self, name, z, labels)
  if labels.rows ~= 1 or labels.cols ~= z.cols then
    error(fmt("%s: labels are %d×%d but the output has %d columns (expected a 1×%d vector of class indices)",
      name, labels.rows, labels.cols, z.cols, z.cols), 3)
  end
  if not rawequal(labels, self._labels_checked) then
    for j, v in ipairs(labels:to("cpu"):totable()[1]) do
      if v ~= math.floor(v) or v < 1 or v > z.rows then
        error(fmt("%s: labels at position %d is not a class index (an integer in 1..%d)", name, j, z.rows), 3)
      end
    end
    self._labels_checked = labels
  end
  local dev = z:device()
  if not self.buf or not same_device(self.buf.dev, dev) or self.k ~= z.rows then
    self.k, self.eye = z.rows, nil
    self.buf = buffers(dev, self._shapes(z.rows))
  end
  return self.buf:get(z.cols)
end

-- nn.softmax_xent(): softmax followed by cross-entropy, fused in one kernel.
--   forward: z (k×n) logits, labels (1×n) → loss (1×n), lossᵢ = −log softmax(zᵢ)[labelᵢ]
--   backward: dz = (softmax(z) − onehot(labels)) / n   (k×n)
local Xent = {name = "softmax_xent"}
Xent.__index = Xent
function Xent._shapes(k) return {dz = k, loss = 1} end

function nn.softmax_xent() return setmetatable({}, Xent) end

function Xent:forward(z, labels)
  local b = loss_buffers(self, "nn.softmax_xent", z, labels)
  vela.softmax_xent(z, labels, b.dz, b.loss, 1 / z.cols)
  self.dz, self.loss = b.dz, b.loss
  return b.loss
end

function Xent:backward() return self.dz or error("nn.softmax_xent: backward before forward (loss:forward(z, labels) first)", 2) end

-- nn.quadratic(): half the squared error against one-hot targets.
--   forward: a (k×n), labels (1×n) → loss (1×n), lossᵢ = ½‖aᵢ − yᵢ‖², y = onehot(labels)
--   backward: da = (a − y) / n   (k×n)
-- The one-hot targets are columns of the k×k identity gathered by label.
local Quad = {name = "quadratic"}
Quad.__index = Quad
function Quad._shapes(k) return {y = k, d = k, sq = k, loss = 1} end

function nn.quadratic() return setmetatable({}, Quad) end

function Quad:forward(a, labels)
  local b = loss_buffers(self, "nn.quadratic", a, labels)
  local n, k, dev = a.cols, a.rows, a:device()
  if not self.eye then  -- the k×k identity, made with the buffers
    self.eye = alloc(dev, k, k)
    for i = 1, k do self.eye:set(i, i, 1) end
  end
  vela.gather_cols(self.eye, labels, b.y)        -- y  ← onehot(labels)
  vela.sub(a, b.y, b.d)                          -- d  ← a − y
  vela.sqr(b.d, b.sq)                            -- sq ← d²
  b.sq_t, b.loss_t = b.sq_t or b.sq:t(), b.loss_t or b.loss:t()
  mv(0.5, b.sq_t, ones_on(dev, k), 0, b.loss_t)  -- lossᵢ ← ½ Σ_rows d²
  vela.scal(1 / n, b.d)                          -- da ← d / n
  self.da, self.loss = b.d, b.loss
  return b.loss
end

function Quad:backward() return self.da or error("nn.quadratic: backward before forward (loss:forward(a, labels) first)", 2) end

nn.losses = {softmax_xent = nn.softmax_xent, quadratic = nn.quadratic}

-- The mean of a per-sample loss vector, read to the host (the host waits).
function nn.mean(loss) return vela.sum(loss) / #loss end

-- ---------------------------------------------------------------------------
-- Saving and loading: net:save, nn.save and nn.load live in lua/vela/checkpoint.lua.
-- ---------------------------------------------------------------------------

require("vela.checkpoint").attach(nn, {Sequential = Sequential, Linear = Linear, resolve = resolve,
  release_all = layer.release_all})

-- ---------------------------------------------------------------------------
-- Training and evaluation: nn.fit, nn.evaluate, nn.predict and nn.confusion
-- live in lua/vela/train.lua.
-- ---------------------------------------------------------------------------

require("vela.train").attach(nn, {alloc = alloc, buffers = buffers, same_device = same_device})

-- ---------------------------------------------------------------------------
-- Layers of other kinds (the protocol: lua/vela/layer.lua) register here for
-- checkpoints: nn.layer_kinds[kind](description, dev) → layer, the inverse
-- of layer:describe().
-- ---------------------------------------------------------------------------

nn.layer_kinds = nn.layer_kinds or {}
nn._helpers = layer
require("vela.gradcheck").attach(nn)
require("vela.layers_regularize").attach(nn)
require("vela.conv").attach(nn)
require("vela.pool").attach(nn)
require("vela.summary").attach(nn, Sequential)
require("vela.sequence").attach(nn)

-- Torch7 and PyTorch names (nn.Linear(784, 10), nn.ReLU, ...): one clear
-- error naming vela's spelling, from lua/vela/torch.lua.
require("vela.torch")._attach("nn", nn)

-- help(nn.linear), ?nn.conv2d, ...: the layers' help entries, kept apart in lua/vela/nn_doc.lua.
if vela.doc then require("vela.nn_doc")(nn, {Layer = layer.Layer, Linear = Linear, Sequential = Sequential,
  Xent = Xent, Quad = Quad}) end

return nn

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

local nn = {}

local mm, mv, dense, mul = vela.mm, vela.mv, vela.dense, vela.mul
local fmt = string.format

-- ---------------------------------------------------------------------------
-- helpers
-- ---------------------------------------------------------------------------

local function alloc(dev, rows, cols) return vela.zeros(rows, cols, "float32", dev) end

-- Devices are compared by identity: there is one userdata per device.
local same_device = rawequal

local function dev_name(d) return d:name() end
local matrix_mt = getmetatable(vela.zeros(0, 0, "float32", "cpu"))

-- A device argument (a device or a spec such as "cpu") as a device, without
-- changing the current device: device(spec) selects, so the current one is
-- put back. Errors name `fn`.
local function resolve(dev, fn)
  if type(dev) ~= "string" then
    if dev == nil or not pcall(dev_name, dev) then
      error(fmt("%s: expected a device or a device name, got %s", fn, type(dev)), 3)
    end
    return dev
  end
  local cur = vela.device()
  local ok, d = pcall(vela.device, dev)
  vela.device(cur)
  if not ok then error(fmt("%s: %s", fn, (tostring(d):gsub("^[^:]*:%d+: ", ""):gsub("^device: ", ""))), 3) end
  return d
end

-- Releases the matrices in list `made` (a step that failed half way gives back what it allocated).
local function release_all(made)
  for i = #made, 1, -1 do pcall(made[i].release, made[i]) end
end

-- A ones vector of length n on dev, kept per (device, n): the bias gradient
-- is δ·1, the row sums of δ, done by mv.
local ones_cache = {}  -- device → {n → ones vector}
local function ones_on(dev, n)
  local t = ones_cache[dev]
  if not t then t = {}; ones_cache[dev] = t end
  local v = t[n]
  if not v then v = vela.fill(alloc(dev, n, 1), 1); t[n] = v end
  return v
end

-- Per-batch-size buffers: one matrix of `cap` columns per name, handed out as
-- views of the first n columns (the views themselves cached per n), grown
-- only when a larger batch arrives.
local Buffers = {}
Buffers.__index = Buffers

local function buffers(dev, rows) return setmetatable({dev = dev, rows = rows, cap = 0, full = {}, views = {}}, Buffers) end

function Buffers:get(n)
  local v = self.views[n]
  if v then return v end
  if n > self.cap then
    self.cap = n
    for name, r in pairs(self.rows) do self.full[name] = alloc(self.dev, r, n) end
    self.views = {}
  end
  v = {}
  for name in pairs(self.rows) do
    local m = self.full[name]
    v[name] = (n == self.cap) and m or m:columns(1, n)
  end
  self.views[n] = v
  return v
end

-- ---------------------------------------------------------------------------
-- nn.linear: a ← act(W·x + b·1ᵀ)
-- ---------------------------------------------------------------------------

-- The activations and their fused backward kernels come from the op table
-- (src/core/ops.def through vela.activations and vela.ops): from = "z" means
-- the derivative needs the pre-activation z, which the layer then keeps.
local activations, backward, from_z = {}, {}, {}
for _, name in ipairs(vela.activations) do
  activations[name] = true
  if name ~= "identity" then
    backward[name] = vela[name .. "_backward"]
    from_z[name] = vela.ops[name].from == "z"
  end
end
local activation_list = table.concat(vela.activations, ", ")

local Linear = {}
Linear.__index = Linear
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
    error(fmt("nn.linear: unknown activation '%s' (expected one of %s)", tostring(activation), activation_list), 2)
  end
  local init = opts.init or (activation == "relu" and "he" or "xavier")
  local scale
  if init == "he" then scale = math.sqrt(2 / inputs)
  elseif init == "xavier" then scale = math.sqrt(2 / (inputs + outputs))
  else error(fmt("nn.linear: unknown init '%s' (expected he or xavier)", tostring(init)), 2) end

  local dev = opts.device and resolve(opts.device, "nn.linear") or vela.device()
  local self = setmetatable({inputs = inputs, outputs = outputs, activation = activation, init = init,
    custom = custom}, Linear)
  self.w = alloc(dev, outputs, inputs)
  if opts.seed then vela.randn(self.w, opts.seed) else vela.randn(self.w) end
  vela.scal(scale, self.w)
  self.b = alloc(dev, outputs, 1)
  self:_setup(dev)
  return self
end

-- Gradients, optimizer state and batch buffers, all on the parameters' device.
function Linear:_setup(dev)
  self.dev = dev
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

-- The checks of every layer's forward, once per distinct input matrix
-- (batches are cached views, so the hot path compares one reference).
-- rows_note says what the rows are; a layer without self.inputs (of any
-- size) takes any number of rows.
local function check_input(self, x, index, rows_note)
  if rawequal(x, self._checked) then return end
  local name = index and fmt("net:forward: layer %d, %s", index, tostring(self)) or fmt("layer:forward: %s", tostring(self))
  if getmetatable(x) ~= matrix_mt then
    error(fmt("%s: input is %s, expected a matrix", name, type(x)), 0)
  end
  if x.cols == 0 then
    error(fmt("%s: input is %d×0, an empty batch (one sample per column, at least one)", name, x.rows), 0)
  end
  if self.inputs and x.rows ~= self.inputs then
    error(fmt("%s: input is %d×%d but the layer takes %d rows (%s)",
      name, x.rows, x.cols, self.inputs, rows_note or "one sample per column"), 0)
  end
  if not same_device(x:device(), self.dev) then
    error(fmt("%s: input is on %s but the layer is on %s (move one: x:to(dev) or net:to(dev))",
      name, dev_name(x:device()), dev_name(self.dev)), 0)
  end
  self._checked = x
end

-- The checks of every layer's backward: a forward came first, and the
-- gradient has the shape of its output (rows × the forward's columns).
-- Errors point at the caller of backward.
local function check_grad(self, d, rows, kind)
  if not self.n then error(fmt("nn.%s: backward before forward", kind), 3) end
  if d.rows ~= rows or d.cols ~= self.n then
    error(fmt("%s: backward got a %d×%d gradient, expected %d×%d (the shape of the last forward's output)",
      tostring(self), d.rows, d.cols, rows, self.n), 3)
  end
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
function Linear:backward(da, need_dx)
  check_grad(self, da, self.outputs, "linear")
  local n = self.n
  local buf = self.buf:get(n)
  local delta = da
  local bw = backward[self.activation]
  if self.custom then
    delta = buf.delta
    self.custom.df(buf.z, delta)  -- δ ← f′(z)
    vela.mul(delta, da, delta)     -- δ ← da ∘ f′(z)
  elseif bw then
    delta = buf.delta
    bw(da, from_z[self.activation] and buf.z or self.a, delta)  -- δ ← da ∘ act′, one kernel
  end
  mm(1, delta, self.xt, 0, self.dw)
  mv(1, delta, ones_on(self.dev, n), 0, self.db)
  if need_dx == false then return end  -- no value: the prompt prints nothing
  mm(1, self.wt, delta, 0, buf.dx)
  return buf.dx
end

function Linear:params() return self._params end

-- The layer as it would be on dev, in a new table; every matrix it made is
-- appended to `made`. self is not touched.
local function moved(self, dev, made)
  if self._moved then return self:_moved(dev, made) end  -- a layer of another kind moves itself
  local n = setmetatable({}, Linear)
  for k, v in pairs(self) do n[k] = v end
  local function to(m)
    local c = m:to(dev)
    made[#made + 1] = c
    return c
  end
  n.w, n.b = to(self.w), to(self.b)
  local state = {}
  for name, st in pairs(self.state) do
    local c = {}
    for k, m in pairs(st) do c[k] = type(m) == "number" and m or to(m) end
    state[name] = c
  end
  n.state = state
  n:_setup(dev)
  made[#made + 1] = n.dw
  made[#made + 1] = n.db
  return n
end

-- Replaces every field of layer l by those of n (a moved copy).
local function adopt(l, n)
  for k in pairs(l) do if n[k] == nil then l[k] = nil end end
  for k, v in pairs(n) do l[k] = v end
end

-- Moves a list of layers to dev, all or nothing: every copy is made first;
-- on an error the copies are released and the layers are as they were.
local function move_layers(layers, dev, fn)
  local made, copies = {}, {}
  local ok, err = pcall(function()
    for i, l in ipairs(layers) do copies[i] = moved(l, dev, made) end
  end)
  if not ok then
    release_all(made)
    error(fmt("%s: %s (nothing was moved)", fn, tostring(err):gsub("^[^:]*:%d+: ", "")), 3)
  end
  for i, l in ipairs(layers) do adopt(l, copies[i]) end
end

function Linear:to(dev)
  dev = resolve(dev, "layer:to")
  move_layers({self}, dev, "layer:to")
  return self
end

-- ---------------------------------------------------------------------------
-- nn.sequential{layer, layer, ...}
-- ---------------------------------------------------------------------------

local Sequential = {}
Sequential.__index = Sequential
nn.Sequential = Sequential

function nn.sequential(layers)
  assert(type(layers) == "table" and #layers > 0, "nn.sequential: expected a list of layers")
  -- Image layers (nn.conv2d, the pools, nn.flatten: lua/vela/conv.lua) take the
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

-- net(x) is net:forward(x), as PyTorch's net(x); layer(x) likewise.
function Sequential:__call(x) return self:forward(x) end
function Linear:__call(x) return self:forward(x) end

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
  for i = #self.layers, 1, -1 do
    dout = self.layers[i]:backward(dout, i > 1)
  end
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

-- Shapes every call; the label values once per labels matrix here, in the
-- kernels' words (reading them makes the host wait, which a training step must
-- not do: the batches of a loader reuse one matrix). The kernels check every
-- call's labels themselves (softmax_xent, gather_cols; on a Vulkan device the
-- next read reports a bad one), so a later bad batch is an error too.
local function check_loss_args(self, name, z, labels)
  if labels.rows ~= 1 or labels.cols ~= z.cols then
    error(fmt("%s: labels are %d×%d but the output has %d columns (expected a 1×%d vector of class indices)",
      name, labels.rows, labels.cols, z.cols, z.cols), 3)
  end
  if rawequal(labels, self._labels_checked) then return end
  for j, v in ipairs(labels:to("cpu"):totable()[1]) do
    if v ~= math.floor(v) or v < 1 or v > z.rows then
      error(fmt("%s: labels at position %d is not a class index (an integer in 1..%d)", name, j, z.rows), 3)
    end
  end
  self._labels_checked = labels
end

-- nn.softmax_xent(): softmax followed by cross-entropy, fused in one kernel.
--   forward: z (k×n) logits, labels (1×n) → loss (1×n), lossᵢ = −log softmax(zᵢ)[labelᵢ]
--   backward: dz = (softmax(z) − onehot(labels)) / n   (k×n)
local Xent = {name = "softmax_xent"}
Xent.__index = Xent

function nn.softmax_xent() return setmetatable({}, Xent) end

function Xent:forward(z, labels)
  check_loss_args(self, "nn.softmax_xent", z, labels)
  local n = z.cols
  if not self.buf or not same_device(self.buf.dev, z:device()) or self.k ~= z.rows then
    self.k = z.rows
    self.buf = buffers(z:device(), {dz = z.rows, loss = 1})
  end
  local b = self.buf:get(n)
  vela.softmax_xent(z, labels, b.dz, b.loss, 1 / n)
  self.dz, self.loss = b.dz, b.loss
  return b.loss
end

function Xent:backward()
  if not self.dz then error("nn.softmax_xent: backward before forward (loss:forward(z, labels) first)", 2) end
  return self.dz
end

-- nn.quadratic(): half the squared error against one-hot targets.
--   forward: a (k×n), labels (1×n) → loss (1×n), lossᵢ = ½‖aᵢ − yᵢ‖², y = onehot(labels)
--   backward: da = (a − y) / n   (k×n)
-- The one-hot targets are columns of the k×k identity gathered by label.
local Quad = {name = "quadratic"}
Quad.__index = Quad

function nn.quadratic() return setmetatable({}, Quad) end

function Quad:forward(a, labels)
  check_loss_args(self, "nn.quadratic", a, labels)
  local n, k, dev = a.cols, a.rows, a:device()
  if not self.buf or not same_device(self.buf.dev, dev) or self.k ~= k then
    self.k = k
    self.buf = buffers(dev, {y = k, d = k, sq = k, loss = 1})
    self.eye = alloc(dev, k, k)
    for i = 1, k do self.eye:set(i, i, 1) end
  end
  local b = self.buf:get(n)
  vela.gather_cols(self.eye, labels, b.y)        -- y  ← onehot(labels)
  vela.sub(a, b.y, b.d)                          -- d  ← a − y
  vela.sqr(b.d, b.sq)                            -- sq ← d²
  b.sq_t, b.loss_t = b.sq_t or b.sq:t(), b.loss_t or b.loss:t()
  mv(0.5, b.sq_t, ones_on(dev, k), 0, b.loss_t)  -- lossᵢ ← ½ Σ_rows d²
  vela.scal(1 / n, b.d)                          -- da ← d / n
  self.da, self.loss = b.d, b.loss
  return b.loss
end

function Quad:backward()
  if not self.da then error("nn.quadratic: backward before forward (loss:forward(a, labels) first)", 2) end
  return self.da
end

nn.losses = {softmax_xent = nn.softmax_xent, quadratic = nn.quadratic}

-- The mean of a per-sample loss vector, read to the host (the host waits).
function nn.mean(loss) return vela.sum(loss) / #loss end

-- ---------------------------------------------------------------------------
-- Saving and loading: net:save, nn.save and nn.load live in lua/vela/checkpoint.lua.
-- ---------------------------------------------------------------------------

require("vela.checkpoint").attach(nn, {Sequential = Sequential, Linear = Linear, resolve = resolve,
  release_all = release_all})

-- ---------------------------------------------------------------------------
-- Training and evaluation: nn.fit, nn.evaluate, nn.predict and nn.confusion
-- live in lua/vela/train.lua.
-- ---------------------------------------------------------------------------

require("vela.train").attach(nn, {alloc = alloc, buffers = buffers, same_device = same_device})

-- ---------------------------------------------------------------------------
-- Layers of other kinds register here for checkpoints:
-- nn.layer_kinds[kind](description, dev) → layer, the inverse of layer:describe().
-- A layer of another kind provides forward(x, index), backward(d, need_dx),
-- params(), to(dev), _moved(dev, made) (a moved copy, see move_layers),
-- describe() and optionally buffers() (matrices a checkpoint keeps besides
-- the parameters), bind(rows) (a layer of any size), train(on), and
-- host_forward(x, P, ctx) for nn.gradcheck.
-- ---------------------------------------------------------------------------

nn.layer_kinds = nn.layer_kinds or {}
local layer_helpers = {alloc = alloc, buffers = buffers, same_device = same_device, resolve = resolve,
  release_all = release_all, move_layers = move_layers, matrix_mt = matrix_mt, ones_on = ones_on,
  check_input = check_input, check_grad = check_grad}
nn._helpers = layer_helpers
require("vela.gradcheck").attach(nn)
require("vela.layers_regularize").attach(nn, layer_helpers)
require("vela.conv").attach(nn, layer_helpers)
require("vela.summary").attach(nn, Sequential)
-- layer(x) is layer:forward(x) for every kind of layer, as net(x) is.
for _, class in ipairs{nn.Conv2d, nn.Pool, nn.Flatten, nn.Dropout, nn.BatchNorm} do class.__call = Linear.__call end
require("vela.sequence").attach(nn, layer_helpers)

-- ---------------------------------------------------------------------------
-- Torch7 and PyTorch names: one clear error naming vela's spelling, instead
-- of "attempt to call a table value". nn.Linear and nn.Sequential are the
-- classes (what getmetatable(layer) is), callable only to say so.
-- ---------------------------------------------------------------------------

local torch_names = {
  ReLU = "activations are an argument of the layer: nn.linear(784, 128, 'relu')",
  Tanh = "activations are an argument of the layer: nn.linear(784, 128, 'tanh')",
  Sigmoid = "activations are an argument of the layer: nn.linear(784, 128, 'sigmoid')",
  SoftMax = "softmax is fused with the loss: nn.softmax_xent(), or softmax(x, y) for the values",
  Softmax = "softmax is fused with the loss: nn.softmax_xent(), or softmax(x, y) for the values",
  LogSoftMax = "use nn.softmax_xent() (softmax and cross-entropy in one kernel)",
  LogSoftmax = "use nn.softmax_xent() (softmax and cross-entropy in one kernel)",
  CrossEntropyLoss = "vela spells it nn.softmax_xent() (it takes the logits, as PyTorch's does)",
  CrossEntropyCriterion = "vela spells it nn.softmax_xent()",
  ClassNLLCriterion = "use nn.softmax_xent() on the logits (softmax and NLL in one kernel)",
  NLLLoss = "use nn.softmax_xent() on the logits (softmax and NLL in one kernel)",
  MSECriterion = "vela spells it nn.quadratic() (half the squared error against one-hot targets)",
  MSELoss = "vela spells it nn.quadratic() (half the squared error against one-hot targets)",
  Module = "vela's layers are plain tables with forward and backward; see ?nn.linear",
  functional = "vela's functions are the global kernels: relu(x), softmax(x, y), mm(a, b, c) ...",
}

local function torch_class_call(name, spelling)
  return function() error(fmt("nn.%s: %s", name, spelling), 2) end
end
setmetatable(Linear, {__call = torch_class_call("Linear",
  "vela spells it nn.linear(inputs, outputs [, activation]), e.g. nn.linear(784, 10)")})
setmetatable(Sequential, {__call = torch_class_call("Sequential",
  "vela spells it nn.sequential{layer, ...}, e.g. nn.sequential{nn.linear(784, 128, 'relu'), nn.linear(128, 10)}")})
setmetatable(nn, {__index = function(_, k)
  local spelling = torch_names[k]
  if spelling then error(fmt("nn.%s: %s", k, spelling), 2) end
end})

-- help(nn.linear), ?nn.sequential: documentation for the shell's help.
if vela.doc then
  vela.doc("nn.linear", "nn.linear(inputs, outputs [, activation] [, {seed =, init = 'he'|'xavier', device =, f =, df =}])",
    "A fully connected layer a = act(W·x + b); activation one of vela.activations (identity, relu, sigmoid, tanh, elu, gelu, leaky_relu, softplus), or your own: {f = swish, df = swish_prime}, kernels made by map (f(z, a): a ← f(z); df(z, d): d ← f′(z)). layer:forward(x), layer:backward(da [, need_dx]) (δ = da ∘ act′ in one kernel, <act>_backward).", nn.linear)
  vela.doc("nn.sequential", "nn.sequential{layer, ...}",
    "A net of layers in order: net:forward(x), net:backward(dout), net:params(), net:to(dev), net:save(path).", nn.sequential)
  vela.doc("nn.softmax_xent", "nn.softmax_xent()",
    "Softmax + cross-entropy loss (one fused kernel): loss:forward(z, labels) gives per-sample losses (1×n) on the device, loss:backward() the gradient of their mean.", nn.softmax_xent)
  vela.doc("nn.quadratic", "nn.quadratic()",
    "Half the squared error against one-hot targets: loss:forward(a, labels), loss:backward().", nn.quadratic)
  vela.doc("layer:forward", "layer:forward(x) -> a",
    "x (inputs×n, one sample per column) → a = act(W·x + b), one fused dense kernel; a is the layer's buffer, reused by the next forward.", Linear.forward)
  vela.doc("layer:backward", "layer:backward(da [, need_dx]) -> dx",
    "da = ∂L/∂a → fills layer.dw and layer.db; returns dx = ∂L/∂x (none when need_dx is false). After a forward.", Linear.backward)
  vela.doc("layer:params", "layer:params() -> {{w, dw, state, name = 'w'}, ...}",
    "The parameters with their gradients and optimizer state: what opt:step takes.", Linear.params)
  vela.doc("layer:to", "layer:to(dev) -> layer",
    "Moves the parameters and optimizer state to dev (a device or a spec such as 'vulkan:0').", Linear.to)
  vela.doc("net:forward", "net:forward(x) -> output",
    "x (inputs×n, one sample per column) through every layer; PyTorch's net(x), Torch7's net:forward(x).", Sequential.forward)
  vela.doc("net:backward", "net:backward(dout)",
    "dout = ∂L/∂output (the loss's backward()) through every layer, filling each layer's dw and db. Torch7 net:backward(x, dout); PyTorch loss.backward().", Sequential.backward)
  vela.doc("net:params", "net:params() -> {{w, dw, state, name = '1.w'}, ...}",
    "Every layer's parameters, gradients and optimizer state, for opt:step(net:params()) (opt:step(net) does the same).", Sequential.params)
  vela.doc("net:to", "net:to(dev) -> net",
    "Moves parameters, gradients and optimizer state to dev mid-session; the same net object carries on there.", Sequential.to)
  vela.doc("net:device", "net:device() -> device", "The device holding the net's parameters.", Sequential.device)
  vela.doc("net:train", "net:train([on = true]) -> net",
    "Training mode (net:train(false): evaluation mode) for every layer that has one: nn.dropout drops units only in training, nn.batchnorm uses the batch's statistics in training and its running ones in evaluation. nn.fit trains in training mode; nn.evaluate and nn.predict run in evaluation mode and put the mode back. PyTorch's net.train().", Sequential.train)
  vela.doc("net:eval", "net:eval() -> net",
    "Evaluation mode: net:train(false). PyTorch's net.eval(), Torch7's net:evaluate().", Sequential.eval)
  vela.doc("net:nparams", "net:nparams() -> count", "The number of parameters (weights and biases).", Sequential.nparams)
  vela.doc("softmax_xent:forward", "loss:forward(z, labels) -> 1×n",
    "Per-sample softmax cross-entropy of logits z (k×n) against 1-based labels (1×n), on the device; nn.mean(loss) reads the mean.", Xent.forward)
  vela.doc("softmax_xent:backward", "loss:backward() -> dz",
    "∂(mean loss)/∂z = (softmax(z) − onehot(labels))/n, from the last forward.", Xent.backward)
  vela.doc("quadratic:forward", "loss:forward(a, labels) -> 1×n",
    "Per-sample ½‖a − onehot(labels)‖² on the device.", Quad.forward)
  vela.doc("quadratic:backward", "loss:backward() -> da",
    "∂(mean loss)/∂a = (a − onehot(labels))/n, from the last forward.", Quad.backward)
  vela.doc("nn.mean", "nn.mean(loss) -> number",
    "The mean of a per-sample loss vector, read to the host.", nn.mean)
end

return nn

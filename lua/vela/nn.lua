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
  opts = opts or {}
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
  if need_dx == false then return nil end
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

function Xent:backward() return self.dz end

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

function Quad:backward() return self.da end

nn.losses = {softmax_xent = nn.softmax_xent, quadratic = nn.quadratic}

-- The mean of a per-sample loss vector, read to the host (the host waits).
function nn.mean(loss) return vela.sum(loss) / #loss end

-- ---------------------------------------------------------------------------
-- save / load: a small, versioned binary format, device independent.
--
--   bytes  what
--   8      magic "VELANN\r\n" (the \r\n catches text-mode mangling)
--   4      format version, uint32 little-endian (1)
--   4      number of layers L
--   L ×    4 layer kind (1 = linear), 4 inputs, 4 outputs,
--          4 activation (its index in vela.activations − 1: 0 identity, 1 relu, 2 sigmoid, 3 tanh, ...),
--          then outputs·inputs float32 W (column-major), outputs float32 b
--   8      "VELAEND\n": a truncated file is caught even at a layer boundary
-- ---------------------------------------------------------------------------

local MAGIC, TRAILER, VERSION = "VELANN\r\n", "VELAEND\n", 1
-- Codes are the order of vela.activations (the op table appends only).
local act_code, act_of_code = {}, {}
for i, name in ipairs(vela.activations) do act_code[name], act_of_code[i - 1] = i - 1, name end
nn.format_version = VERSION

-- Column-major float32 bytes of a matrix, read from its device once.
local function pack_matrix(m)
  local rows = m:to("cpu"):totable()
  local flat, k = {}, 0
  local parts = {}
  for j = 1, m.cols do
    for i = 1, m.rows do
      k = k + 1
      flat[k] = rows[i][j]
      if k == 4096 then parts[#parts + 1] = string.pack(string.rep("<f", k), table.unpack(flat, 1, k)); k = 0 end
    end
  end
  if k > 0 then parts[#parts + 1] = string.pack(string.rep("<f", k), table.unpack(flat, 1, k)) end
  return table.concat(parts)
end

function Sequential:save(path)
  local out = {MAGIC, string.pack("<I4I4", VERSION, #self.layers)}
  for i, l in ipairs(self.layers) do
    if getmetatable(l) ~= Linear then
      error(fmt("net:save: layer %d (%s) is not a linear layer; net:save writes linear layers only " ..
        "(nn.save(path, net) keeps every kind)", i, tostring(l)), 2)
    end
    if l.custom then
      error(fmt("net:save: %s uses the kernel '%s' written at the prompt as its activation; only the op " ..
        "table's activations (%s) can be saved", tostring(l), l.activation, activation_list), 2)
    end
    out[#out + 1] = string.pack("<I4I4I4I4", 1, l.inputs, l.outputs, act_code[l.activation])
    out[#out + 1] = pack_matrix(l.w)
    out[#out + 1] = pack_matrix(l.b)
  end
  out[#out + 1] = TRAILER
  -- Written under a temporary name and renamed: a killed save leaves no torn file.
  local tmp = path .. ".tmp-" .. tostring(os.time())
  local f, err = io.open(tmp, "wb")
  if not f then error("net:save: " .. err, 2) end
  local ok, werr = f:write(table.concat(out))
  f:close()
  if not ok then os.remove(tmp) error(fmt("net:save: '%s': %s", path, tostring(werr)), 2) end
  local renamed, rerr = os.rename(tmp, path)
  if not renamed then os.remove(tmp) error(fmt("net:save: '%s': %s", path, tostring(rerr)), 2) end
  return path
end

-- ---------------------------------------------------------------------------
-- Checkpoints: nn.save(path, net [, opt [, extra]]) / nn.load(path [, dev]).
--
-- A NumPy .npz (vela.save's layout, so numpy.load opens it too) holding each
-- parameter as "1.w", "1.b", ..., each optimizer state matrix as
-- "1.w.v", "1.w.m" ..., and a text member "vela_checkpoint": a Lua table
-- literal with the format version, the layers (kind, shape, activation), the
-- optimizer (kind, hyperparameters, current lr, step counts), the state of
-- rand/randn's seed sequence, and `extra` (the caller's numbers, strings,
-- booleans and tables of them: the epoch, the schedule position). Loading it
-- and stepping on gives the same next loss as a run never interrupted.
-- ---------------------------------------------------------------------------

local CHECKPOINT_VERSION = 1

-- A Lua literal for plain data; anything else is an error naming its place.
local function serialize(v, where)
  local tv = type(v)
  if tv == "number" then
    if math.type(v) == "integer" then return fmt("%d", v) end
    if v ~= v then return "0/0" end
    if v == math.huge then return "1/0" end
    if v == -math.huge then return "-1/0" end
    return fmt("%.17g", v)
  elseif tv == "string" then return fmt("%q", v)
  elseif tv == "boolean" then return tostring(v)
  elseif tv == "table" and getmetatable(v) == nil then
    local keys = {}
    for k in pairs(v) do
      if type(k) ~= "string" and math.type(k) ~= "integer" then
        error(fmt("nn.save: %s has a %s key (keys must be strings or integers)", where, type(k)), 0)
      end
      keys[#keys + 1] = k
    end
    table.sort(keys, function(a, b)
      if type(a) == type(b) then return a < b end
      return type(a) == "number"
    end)
    local parts = {}
    for _, k in ipairs(keys) do
      local key = type(k) == "string" and fmt("[%q]", k) or fmt("[%d]", k)
      parts[#parts + 1] = key .. " = " .. serialize(v[k], where .. "." .. tostring(k))
    end
    return "{" .. table.concat(parts, ", ") .. "}"
  end
  error(fmt("nn.save: %s is a %s (a checkpoint keeps numbers, strings, booleans and plain tables)", where, tv), 0)
end

local optimizer_fields = {sgd = {"lr", "momentum", "weight_decay", "nesterov", "steps"},
                          adam = {"lr", "beta1", "beta2", "eps", "steps"}}

-- nn.save(path, net [, opt [, extra]]) -> path
function nn.save(path, net, opt, extra)
  if type(path) ~= "string" then error("nn.save: path must be a string, got " .. type(path), 2) end
  if getmetatable(net) ~= Sequential then
    error("nn.save: net must be an nn.sequential{...}, got " .. (type(net) == "table" and tostring(net) or type(net)), 2)
  end
  if opt ~= nil and (type(opt) ~= "table" or not optimizer_fields[opt.name]) then
    error("nn.save: opt must be an optimizer from optim.sgd{...} or optim.adam{...}, got " .. tostring(opt), 2)
  end
  local files, meta = {}, {format = CHECKPOINT_VERSION, layers = {}, state = {}}
  for i, l in ipairs(net.layers) do
    if getmetatable(l) ~= Linear and l.describe then
      -- Another kind of layer: its description (kind and constructor
      -- arguments, for nn.layer_kinds[kind]) and its buffers (running statistics).
      meta.layers[i] = l:describe()
      for name, m in pairs(l.buffers and l:buffers() or {}) do files[i .. "." .. name] = m end
      goto continue
    end
    if getmetatable(l) ~= Linear then error(fmt("nn.save: layer %d (%s) cannot be saved (it has no describe)", i, tostring(l)), 2) end
    if l.custom then
      error(fmt("nn.save: %s uses the kernel '%s' written at the prompt as its activation; only the op " ..
        "table's activations (%s) can be saved", tostring(l), l.activation, activation_list), 2)
    end
    meta.layers[i] = {kind = "linear", inputs = l.inputs, outputs = l.outputs, activation = l.activation}
    ::continue::
  end
  for _, p in ipairs(net:params()) do
    files[p.name] = p[1]
    local numbers = {}
    for k, v in pairs(p[3]) do
      if type(v) == "number" then numbers[k] = v else files[p.name .. "." .. k] = v end
    end
    meta.state[p.name] = numbers
  end
  if opt then
    local o = {name = opt.name}
    for _, k in ipairs(optimizer_fields[opt.name]) do o[k] = opt[k] end
    meta.optimizer = o
  end
  local seed, count = vela._seed_sequence()
  meta.seed_sequence = {seed, count}
  if extra ~= nil and type(extra) ~= "table" then error("nn.save: extra must be a table, got " .. type(extra), 2) end
  meta.extra = extra or {}
  local ok, text = pcall(serialize, meta, "checkpoint")
  if not ok then error(text:gsub("checkpoint%.extra", "extra"), 2) end
  files.vela_checkpoint = "return " .. text .. "\n"
  local saved, err = pcall(vela.save, path, files)
  if not saved then error("nn.save: " .. tostring(err):gsub("^save: ", ""), 2) end
  return path
end

local function load_checkpoint(path, dev)
  local function bad(what, ...) error(fmt("nn.load: '%s' " .. what, path, ...), 0) end
  local ok, files = pcall(vela.load, path, dev)
  if not ok then bad("is not a vela net or checkpoint (%s)", tostring(files):gsub("^load: '[^']*'%s*:?%s*", "")) end
  local text = files.vela_checkpoint
  if type(text) ~= "string" then bad("is a .npz without a vela_checkpoint member (not a vela checkpoint)") end
  local chunk = load(text, "=" .. path, "t", {})
  local okm, meta = pcall(chunk or error)
  if not chunk or not okm or type(meta) ~= "table" then bad("has a damaged vela_checkpoint member") end
  if meta.format ~= CHECKPOINT_VERSION then
    bad("has checkpoint format %s; this vela reads format %d", tostring(meta.format), CHECKPOINT_VERSION)
  end
  local layers = {}
  for i, d in ipairs(meta.layers or {}) do
    local make = nn.layer_kinds[d.kind]
    if d.kind ~= "linear" and make then
      -- Another kind of layer: made from its description, then its parameters and buffers.
      local okl, l = pcall(make, d, dev)
      if not okl then bad("layer %d (%s): %s", i, tostring(d.kind), tostring(l):gsub("^[^:]*:%d+: ", "")) end
      local want = {}
      for _, p in ipairs(l:params()) do want[p.name:match("[^.]*$")] = p[1] end
      for name, m in pairs(l.buffers and l:buffers() or {}) do want[name] = m end
      for name, m in pairs(want) do
        local f = files[i .. "." .. name]
        if not f then bad("has no %d.%s for layer %d (%s)", i, name, i, d.kind) end
        if f.rows ~= m.rows or f.cols ~= m.cols then
          bad("%d.%s is %d×%d, expected %d×%d", i, name, f.rows, f.cols, m.rows, m.cols)
        end
        vela.copy(f, m)
      end
      layers[i] = l
      goto continue
    end
    if d.kind ~= "linear" or not activations[d.activation] then bad("layer %d is not a linear layer vela knows", i) end
    local l = nn.linear(d.inputs, d.outputs, d.activation, {device = dev, seed = 1})
    for _, name in ipairs{"w", "b"} do
      local m = files[i .. "." .. name]
      if not m then bad("has no parameter %d.%s", i, name) end
      if m.rows ~= l[name].rows or m.cols ~= l[name].cols then
        bad("parameter %d.%s is %d×%d, expected %d×%d", i, name, m.rows, m.cols, l[name].rows, l[name].cols)
      end
      vela.copy(m, l[name])
    end
    layers[i] = l
    ::continue::
  end
  if #layers == 0 then bad("holds no layers") end
  local net = nn.sequential(layers)
  -- Optimizer state: the matrices named <param>.<key>, the numbers from the description.
  for _, p in ipairs(net:params()) do
    local st = p[3]
    for k, v in pairs((meta.state or {})[p.name] or {}) do st[k] = v end
    for name, m in pairs(files) do
      local key = type(name) == "string" and name:match("^" .. p.name:gsub("%.", "%%.") .. "%.(%a+)$")
      if key then
        if m.rows ~= p[1].rows or m.cols ~= p[1].cols then bad("state %s has the wrong shape", name) end
        st[key] = m
      end
    end
  end
  local opt
  if meta.optimizer then
    local optim = require "vela.optim"
    local o = meta.optimizer
    local make = optim[o.name]
    if not make or not optimizer_fields[o.name] then bad("names an unknown optimizer '%s'", tostring(o.name)) end
    opt = make(o)
    for _, k in ipairs(optimizer_fields[o.name]) do opt[k] = o[k] end
    net.optimizer = opt
  end
  if meta.seed_sequence then vela._seed_sequence(meta.seed_sequence[1], meta.seed_sequence[2]) end
  return net, opt, meta.extra or {}
end

-- nn.load(path [, dev]) → a sequential net on dev (default: the current
-- device); for a checkpoint of nn.save also the optimizer and the extra table.
function nn.load(path, dev)
  if type(path) ~= "string" then error(fmt("nn.load: path must be a string, got %s", type(path)), 2) end
  local f, err = io.open(path, "rb")
  if not f then error("nn.load: " .. err, 2) end
  local s, rerr = f:read("a")
  f:close()
  if not s then error(fmt("nn.load: cannot read '%s': %s", path, tostring(rerr or "a directory?")), 2) end
  dev = dev and resolve(dev, "nn.load") or vela.device()
  if s:sub(1, 4) == "PK\3\4" then
    local ok, net, opt, extra = pcall(load_checkpoint, path, dev)
    if not ok then error(net, 2) end
    return net, opt, extra
  end
  local function bad(what, ...) error(fmt("nn.load: '%s' " .. what, path, ...), 0) end
  -- Everything the file declares is checked before anything is allocated;
  -- a failure while making the layers releases those already made.
  local made = {}
  local ok, res = pcall(function()
    if #s < 16 or s:sub(1, 8) ~= MAGIC then bad("is not a vela net or checkpoint (no VELANN magic, not a .npz)") end
    local version, nlayers, pos = string.unpack("<I4I4", s, 9)
    if version ~= VERSION then bad("has format version %d; this vela reads version %d", version, VERSION) end
    if nlayers < 1 or nlayers > 1000 then bad("declares %d layers", nlayers) end
    local specs, p = {}, pos
    for i = 1, nlayers do
      if p + 16 > #s + 1 then bad("is truncated in layer %d's header", i) end
      local kind, inputs, outputs, act
      kind, inputs, outputs, act, p = string.unpack("<I4I4I4I4", s, p)
      if kind ~= 1 then bad("layer %d has unknown kind %d (1 = linear)", i, kind) end
      if not act_of_code[act] then bad("layer %d has unknown activation code %d", i, act) end
      -- Each size alone first: two 32-bit sizes multiplied may exceed 2^63.
      if inputs < 1 or outputs < 1 or inputs > (1 << 31) or outputs > (1 << 31) or inputs * outputs > (1 << 31) then
        bad("layer %d has bad size %d→%d", i, inputs, outputs)
      end
      if i > 1 and inputs ~= specs[i - 1].outputs then
        bad("layer %d takes %d inputs but layer %d gives %d outputs", i, inputs, i - 1, specs[i - 1].outputs)
      end
      local nw, nb = inputs * outputs, outputs
      if p + 4 * (nw + nb) > #s + 1 then bad("is truncated in layer %d's parameters", i) end
      specs[i] = {inputs = inputs, outputs = outputs, act = act_of_code[act], at = p}
      p = p + 4 * (nw + nb)
    end
    if s:sub(p, p + 7) ~= TRAILER or p + 8 ~= #s + 1 then bad("is truncated or has trailing bytes (no end marker where expected)") end
    local layers = {}
    for i, sp in ipairs(specs) do
      local l = nn.linear(sp.inputs, sp.outputs, sp.act, {device = dev, seed = 1})
      made[#made + 1] = l.w; made[#made + 1] = l.b; made[#made + 1] = l.dw; made[#made + 1] = l.db
      pos = sp.at
      local function read(m, count)
        local vals = {}
        local k = 0
        while k < count do
          local c = math.min(4096, count - k)
          local chunk = {string.unpack(string.rep("<f", c), s, pos)}
          pos = chunk[c + 1]
          for t = 1, c do vals[k + t] = chunk[t] end
          k = k + c
        end
        local tmp = vela.matrix(m.rows, m.cols, vals, "float32", dev)
        vela.copy(tmp, m)
        tmp:release()
      end
      read(l.w, sp.inputs * sp.outputs)
      read(l.b, sp.outputs)
      layers[i] = l
    end
    return nn.sequential(layers)
  end)
  if not ok then
    release_all(made)
    local msg = tostring(res):gsub("^[^:]*:%d+: ", "")
    if not msg:find("^nn%.load:") then msg = "nn.load: " .. msg end
    error(msg, 2)
  end
  return res
end

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
  vela.doc("nn.load", "nn.load(path [, dev]) -> net [, opt, extra]",
    "Loads a checkpoint of nn.save (the net, its optimizer with its state and step count, and extra; the seed sequence of rand/randn is restored) or a net of net:save, onto dev (default: the current device). Training resumes with the same next loss as an uninterrupted run, on any device. torch.load.", nn.load)
  vela.doc("nn.save", "nn.save(path, net [, opt [, extra]]) -> path",
    "A checkpoint (.npz, numpy.load reads it): weights, the optimizer's state, hyperparameters and step count, the seed sequence of rand/randn, and extra (a table of numbers, strings, booleans: the epoch, the schedule position). Written under a temporary name and renamed. local net, opt, extra = nn.load(path) resumes. torch.save.", nn.save)
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
  vela.doc("net:save", "net:save(path) -> path",
    "Writes the weights only (the VELANN format; nn.load reads it). nn.save(path, net, opt) keeps the optimizer too.", Sequential.save)
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

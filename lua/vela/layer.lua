-- vela.layer: what every layer of vela.nn shares, in the manner of torch/nn's
-- Module.lua. The base class (layer.class) gives each layer layer:to(dev),
-- layer:params(), layer:train([on]) / layer:eval() and layer(x); the helpers
-- below give the layer files their buffers, their input and gradient checks
-- and the all-or-nothing move between devices. A layer file (nn.lua, conv.lua,
-- pool.lua, layers_regularize.lua, sequence.lua) keeps only its own math:
-- its constructor, _setup(dev), forward and backward side by side,
-- host_forward (nn.gradcheck's float64 twin) and describe (checkpoints).
--
-- The layer protocol (what nn.sequential, net:to, checkpoints and
-- nn.gradcheck use): forward(x, index), backward(d, need_dx), params(),
-- _setup(dev) (gradients and buffers on dev, after _on has set self.dev),
-- describe(), and optionally buffers() (matrices a checkpoint keeps besides
-- the parameters), bind(rows) (a layer of any size), take_image(shape,
-- index) (an image layer), host_forward(x, P, ctx), and
-- nn.layer_kinds[kind](description, dev), the inverse of describe(). A class lists in `moves` the matrices that move with
-- the layer (parameters and kept buffers) and in `forget` the fields of the
-- last forward a moved layer drops.
local vela = require "vela"

local layer = {}
local fmt = string.format

-- ---------------------------------------------------------------------------
-- helpers
-- ---------------------------------------------------------------------------

function layer.alloc(dev, rows, cols) return vela.zeros(rows, cols, "float32", dev) end
local alloc = layer.alloc

-- Devices are compared by identity: there is one userdata per device.
layer.same_device = rawequal

local function dev_name(d) return d:name() end
layer.dev_name = dev_name
layer.matrix_mt = getmetatable(vela.zeros(0, 0, "float32", "cpu"))

-- A device argument (a device or a spec such as "cpu") as a device, without
-- changing the current device: device(spec) selects, so the current one is
-- put back. Errors name `fn` and point at the caller's caller (level 3), or
-- at `level` as error() counts from resolve.
function layer.resolve(dev, fn, level)
  level = level or 3
  if type(dev) ~= "string" then
    if dev == nil or not pcall(dev_name, dev) then
      error(fmt("%s: expected a device or a device name, got %s", fn, type(dev)), level)
    end
    return dev
  end
  local cur = vela.device()
  local ok, d = pcall(vela.device, dev)
  vela.device(cur)
  if not ok then error(fmt("%s: %s", fn, (tostring(d):gsub("^[^:]*:%d+: ", ""):gsub("^device: ", ""))), level) end
  return d
end
local resolve = layer.resolve

-- A constructor's device: opts.device resolved, or the current device.
-- Errors name fn and point at the constructor's caller.
function layer.device(opts, fn)
  if not opts.device then return vela.device() end
  return resolve(opts.device, fn, 4)
end

-- Releases the matrices in list `made` (a step that failed half way gives back what it allocated).
function layer.release_all(made)
  for i = #made, 1, -1 do pcall(made[i].release, made[i]) end
end

-- A ones vector of length n on dev, kept per (device, n): the bias gradient
-- is δ·1, the row sums of δ, done by mv.
local ones_cache = {}  -- device → {n → ones vector}
function layer.ones_on(dev, n)
  local t = ones_cache[dev]
  if not t then t = {}; ones_cache[dev] = t end
  local v = t[n]
  if not v then v = vela.fill(alloc(dev, n, 1), 1); t[n] = v end
  return v
end

-- Per-batch-size buffers: one matrix of `cap` columns per name, handed out as
-- views of the first n columns (the views themselves cached per n), grown
-- only when a larger batch arrives. Each name is made on its first use and
-- has its own capacity, so what only the backward reads (δ, dx) is never made
-- by a forward-only pass (nn.evaluate, nn.predict), and stays the training
-- batch's size when an evaluation batch is larger: the CNN of
-- scripts/bench/cnn.lua evaluated 1,000 images with 270 MB less this way.
local Buffers = {}
Buffers.__index = Buffers

function layer.buffers(dev, rows) return setmetatable({dev = dev, rows = rows, cap = {}, full = {}, views = {}}, Buffers) end

-- The view of name's matrix at n columns; nil for a name not in rows.
function Buffers:_view(name, n)
  local r = self.rows[name]
  if not r then return nil end
  local m = self.full[name]
  if n > (self.cap[name] or 0) then
    m = alloc(self.dev, r, n)
    self.full[name], self.cap[name] = m, n
    for _, v in pairs(self.views) do rawset(v, name, nil) end  -- views of the old matrix
  end
  return n == self.cap[name] and m or m:columns(1, n)
end

-- The table of views at n columns: b.name, made on first use.
function Buffers:get(n)
  local v = self.views[n]
  if v then return v end
  local buffers = self
  v = setmetatable({}, {__index = function(t, name)
    local m = buffers:_view(name, n)
    if m then rawset(t, name, m) end
    return m
  end})
  self.views[n] = v
  return v
end

-- The activations and their fused backward kernels come from the op table
-- (src/core/ops.def through vela.activations and vela.ops): from_z[name]
-- means the derivative needs the pre-activation z, which the layer then keeps.
layer.activations, layer.backward, layer.from_z = {}, {}, {}
for _, name in ipairs(vela.activations) do
  layer.activations[name] = true
  if name ~= "identity" then
    layer.backward[name] = vela[name .. "_backward"]
    layer.from_z[name] = vela.ops[name].from == "z"
  end
end
layer.activation_list = table.concat(vela.activations, ", ")

-- δ = da ∘ act′ in one kernel (<act>_backward) into delta, act′ read from z
-- when the op needs the pre-activation, else from a; da itself for identity.
function layer.delta(activation, da, z, a, delta)
  local bw = layer.backward[activation]
  if not bw then return da end
  bw(da, layer.from_z[activation] and z or a, delta)
  return delta
end

-- The initial weights' scale: √(2/fan_in) (He, the default for relu) or
-- √(2/(fan_in + fan_out)) (Xavier/Glorot). Returns init's name and the scale;
-- errors name fn and point at the constructor's caller.
function layer.init_scale(fn, init, activation, fan_in, fan_out)
  init = init or (activation == "relu" and "he" or "xavier")
  if init == "he" then return init, math.sqrt(2 / fan_in) end
  if init == "xavier" then return init, math.sqrt(2 / (fan_in + fan_out)) end
  error(fmt("%s: unknown init '%s' (expected he or xavier)", fn, tostring(init)), 3)
end

-- Weights W (rows×cols) ~ N(0, 1)·scale from seed (default: the next seed of
-- vela's sequence, see seed(n)) and a zero bias (rows×1), on dev. The same
-- seed gives the same W on every device.
function layer.weights(dev, rows, cols, seed, scale)
  local w = alloc(dev, rows, cols)
  if seed then vela.randn(w, seed) else vela.randn(w) end
  vela.scal(scale, w)
  return w, alloc(dev, rows, 1)
end

-- A layer that is one learned table, rows × cols ~ N(0, 1)·scale (nn.embedding's
-- E, nn.posembed's P): checks opts ({seed =, device =}), makes `fields` an
-- instance of Class on the chosen device with the table as fields[key].
function layer.table(Class, fn, opts, fields, key, rows, cols, scale)
  opts = require("vela.options").check(fn, opts, {"seed", "device"})
  local dev = layer.device(opts, fn)
  local self = setmetatable(fields, Class)
  self[key] = layer.weights(dev, rows, cols, opts.seed, scale)
  return self:_on(dev)
end

-- The checks of every layer's forward, once per distinct input matrix
-- (batches are cached views, so the hot path compares one reference).
-- rows_note says what the rows are; a layer without self.inputs (of any
-- size) takes any number of rows.
function layer.check_input(self, x, index, rows_note)
  if rawequal(x, self._checked) then return end
  local name = index and fmt("net:forward: layer %d, %s", index, tostring(self)) or fmt("layer:forward: %s", tostring(self))
  if getmetatable(x) ~= layer.matrix_mt then
    error(fmt("%s: input is %s, expected a matrix", name, type(x)), 0)
  end
  if x.cols == 0 then
    error(fmt("%s: input is %d×0, an empty batch (one sample per column, at least one)", name, x.rows), 0)
  end
  if self.inputs and x.rows ~= self.inputs then
    error(fmt("%s: input is %d×%d but the layer takes %d rows (%s)",
      name, x.rows, x.cols, self.inputs, rows_note or "one sample per column"), 0)
  end
  if not rawequal(x:device(), self.dev) then
    error(fmt("%s: input is on %s but the layer is on %s (move one: x:to(dev) or net:to(dev))",
      name, dev_name(x:device()), dev_name(self.dev)), 0)
  end
  self._checked = x
end

-- The checks of every layer's backward: a forward came first, and the
-- gradient has the shape of its output (rows × the forward's columns).
-- Errors point at the caller of backward. Returns the layer's buffers of
-- the forward's batch size (self.buf:get(self.n)).
function layer.check_grad(self, d, rows, kind)
  if not self.n then error(fmt("nn.%s: backward before forward", kind), 3) end
  if d.rows ~= rows or d.cols ~= self.n then
    error(fmt("%s: backward got a %d×%d gradient, expected %d×%d (the shape of the last forward's output)",
      tostring(self), d.rows, d.cols, rows, self.n), 3)
  end
  return self.buf and self.buf:get(self.n)
end

-- ---------------------------------------------------------------------------
-- Moving layers between devices, all or nothing
-- ---------------------------------------------------------------------------

-- Replaces every field of layer l by those of n (a moved copy).
local function adopt(l, n)
  for k in pairs(l) do if n[k] == nil then l[k] = nil end end
  for k, v in pairs(n) do l[k] = v end
end

-- Moves a list of layers to dev, all or nothing: every copy is made first
-- (layer:_moved); on an error the copies are released and the layers are as
-- they were. Errors name fn and point at its caller's caller.
function layer.move_layers(layers, dev, fn)
  local made, copies = {}, {}
  local ok, err = pcall(function()
    for i, l in ipairs(layers) do copies[i] = l:_moved(dev, made) end
  end)
  if not ok then
    layer.release_all(made)
    error(fmt("%s: %s (nothing was moved)", fn, tostring(err):gsub("^[^:]*:%d+: ", "")), 3)
  end
  for i, l in ipairs(layers) do adopt(l, copies[i]) end
end

-- ---------------------------------------------------------------------------
-- The base class
-- ---------------------------------------------------------------------------

local Layer = {}
layer.Layer = Layer

-- A new layer class: its methods first, then Layer's. layer(x) is
-- layer:forward(x), as PyTorch's layer(x) (a metamethod, so set on each class).
function layer.class(moves)
  local C = {moves = moves}  -- the learned matrices that move with the layer (see Layer:_moved)
  C.__index = C
  C.__call = function(self, x) return self:forward(x) end
  return setmetatable(C, {__index = Layer})
end

-- The layer placed on dev: self.dev, then what the layer's own _setup(dev)
-- makes there (gradients, optimizer state, batch buffers). Returns self.
function Layer:_on(dev)
  self.dev = dev
  self:_setup(dev)
  return self
end

-- The list of {param, grad, state, name = "w"}: what an optimizer steps.
function Layer:params() return self._params end

-- Training (on, the default) or evaluation mode; a no-op for a layer without
-- modes (nn.dropout, nn.batchnorm and nn.conv2d have a `training` field: the
-- conv keeps no windows for a backward in evaluation mode).
function Layer:train(on)
  if self.training ~= nil then self.training = on ~= false end
  return self
end

function Layer:eval() return self:train(false) end

-- The layer as it would be on dev, in a new table: the matrices its class
-- lists in `moves` and its optimizer state copied to dev, the fields in
-- `forget` dropped, gradients and buffers made afresh by _setup(dev). Every
-- matrix made is appended to `made`; self is not touched.
function Layer:_moved(dev, made)
  local C = getmetatable(self)
  local n = setmetatable({}, C)
  for k, v in pairs(self) do n[k] = v end
  local function to(m)
    local c = m:to(dev)
    made[#made + 1] = c
    return c
  end
  for _, name in ipairs(C.moves or {}) do n[name] = to(self[name]) end
  if self.state then
    local state = {}
    for name, st in pairs(self.state) do
      local c = {}
      for k, m in pairs(st) do c[k] = type(m) == "number" and m or to(m) end
      state[name] = c
    end
    n.state = state
  end
  for _, name in ipairs(C.forget or {}) do n[name] = nil end
  n:_on(dev)
  for _, p in ipairs(n._params or {}) do made[#made + 1] = p[2] end
  return n
end

-- Moves the parameters, their gradients and optimizer state to dev (a device
-- or a spec such as "vulkan:0"); buffers are made afresh there. The layer
-- object stays the same.
function Layer:to(dev)
  dev = resolve(dev, "layer:to")
  layer.move_layers({self}, dev, "layer:to")
  return self
end

return layer

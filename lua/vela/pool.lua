-- vela.pool: the layers of convolutional nets that learn nothing, in the
-- manner of nn.conv2d (lua/vela/conv.lua), whose image layout and geometry
-- (conv.image) they share: nn.maxpool2d, nn.avgpool2d and nn.flatten,
-- forward and backward side by side, buffers made once per batch size.
local vela = require "vela"
local options = require "vela.options"
local layer = require "vela.layer"
local image, Conv2d = require("vela.conv").image, require("vela.conv").Conv2d

local pool = {}
local fmt = string.format

local buffers, check_grad = layer.buffers, layer.check_grad
local shape_str, check_image_input, pair, pad_pair = image.shape_str, image.check_input, image.pair, image.pad_pair
local input_shape, place, take_image = image.input_shape, image.place, image.take_image

-- ---------------------------------------------------------------------------
-- nn.maxpool2d(k [, stride] [, {pad =, input =}]) and nn.avgpool2d
-- ---------------------------------------------------------------------------

local Pool = layer.class()
pool.Pool = Pool
Pool.forget = {"n", "x"}  -- see layer:_moved

local function make_pool(kind, k, stride, opts)
  local fn = "nn." .. kind
  if type(stride) == "table" and opts == nil and #stride ~= 2 then  -- not {height, width}: the options
    stride, opts = nil, stride
  end
  opts = options.check(fn, opts, {"pad", "input", "device"}, 4)
  local kh, kw = pair(k, fn, "k")
  local sh, sw = kh, kw
  if stride ~= nil then sh, sw = pair(stride, fn, "stride") end
  local ph, pw = pad_pair(opts.pad, fn)
  if 2 * ph > kh or 2 * pw > kw then
    error(fmt("%s: pad %d×%d is more than half the %d×%d window (a window would see only padding)", fn, ph, pw, kh, kw), 3)
  end
  local dev = layer.device(opts, fn)
  local self = setmetatable({kind = kind, kh = kh, kw = kw, sh = sh, sw = sw, ph = ph, pw = pw,
    max = kind == "maxpool2d"}, Pool)
  if opts.input ~= nil then
    local shape = input_shape(opts.input, nil, fn)
    self.channels_in, self.channels_out, self.fixed = shape.c, shape.c, true
    local ok, err = pcall(place, self, shape, fn)
    if not ok then error(err, 3) end
  end
  return self:_on(dev)
end

function pool.maxpool2d(k, stride, opts) return make_pool("maxpool2d", k, stride, opts) end
function pool.avgpool2d(k, stride, opts) return make_pool("avgpool2d", k, stride, opts) end

function Pool:_setup(dev)
  self._params = {}
  self._checked = nil
  if self.image then self:_buffers() end
end

function Pool:_buffers()
  local shapes = {y = self.outputs, dx = self.inputs}
  if self.max then shapes.idx, shapes.dya = self.outputs, self.outputs end
  self.buf = buffers(self.dev, shapes)
end

function Pool:__tostring()
  local s = self.sh == self.kh and self.sw == self.kw and "" or
    fmt(", stride %s", self.sh == self.sw and self.sh or self.sh .. "×" .. self.sw)
  local p = (self.ph == 0 and self.pw == 0) and "" or fmt(", pad %s", self.ph == self.pw and self.ph or self.ph .. "×" .. self.pw)
  return fmt("%s(%d×%d%s%s)", self.kind, self.kh, self.kw, s, p)
end

-- A pool keeps the channels of the images it gets.
function Pool:take_image(shape, index)
  if shape and not self.fixed then self.channels_in, self.channels_out = shape.c, shape.c end
  return take_image(self, shape, index)
end

-- forward: x (C·H·W × n) → y (C·oh·ow × n)
--   max:     y = the maximum of each window, idx = its row in x      maxpool
--   average: y = the mean of each window (padding counts as 0)     avgpool
function Pool:forward(x, index)
  check_image_input(self, x, index)
  local b = self.buf:get(x.cols)
  self.n, self.x = x.cols, x
  if self.max then vela.maxpool(x, b.y, b.idx, self.g) else vela.avgpool(x, b.y, self.g) end
  return b.y
end

-- backward: dy (C·oh·ow × n) → dx (C·H·W × n)
--   max:     dx = dy routed to the rows idx names (0 elsewhere)      maxpool_backward
--   average: dx = Σ over the windows holding each pixel of dy/(kh·kw)   avgpool_backward
--
-- nn.sequential hands a max pool that tiles its input (stride = k, no
-- padding) right after a relu nn.conv2d the conv's relu′ (takes_act below):
-- the pool routes dy ∘ relu′(y) instead of dy, and the conv takes what it gets
-- as its δ. The winner of each window is the pixel whose a the pool copied
-- to y, so relu′(a) there is relu′(y), and every other pixel gets 0 either
-- way: the same δ, bit for bit, from a pass over the pool's outputs instead
-- of one over the conv's (4× larger: 9.4 MB read twice and written once for
-- the first conv of examples/cnn.lua at batch 128).
--   max, act: dx = dy ∘ relu′(y) routed to the rows idx names      relu_backward, maxpool_backward
function Pool:backward(dy, need_dx, _, act)
  local b = check_grad(self, dy, self.outputs, self.kind)
  if need_dx == false then return end
  if self.max then
    if act then
      vela.relu_backward(dy, b.y, b.dya)
      dy = b.dya
    end
    vela.maxpool_backward(dy, b.idx, b.dx, self.g)
  else
    vela.avgpool_backward(dy, b.dx, self.g)
  end
  return b.dx
end

-- Whether this pool's backward can apply the relu′ of `before`, the layer
-- ahead of it in nn.sequential (see Pool:backward): a max pool whose windows
-- tile the image, after a relu nn.conv2d whose output it pooled last, neither
-- backward replaced.
function Pool:takes_act(before)
  return self.max and self.sh == self.kh and self.sw == self.kw and self.ph == 0 and self.pw == 0 and
    getmetatable(before) == Conv2d and before.activation == "relu" and self.x ~= nil and rawequal(before.a, self.x) and
    rawget(self, "backward") == nil and rawget(before, "backward") == nil
end

-- float64 for nn.gradcheck: the maximum (the first on ties) or the mean of each window.
function Pool:host_forward(x)
  local g, oh, ow, n, out = self.image_in, self.image.h, self.image.w, #x[1], {}
  for c = 0, g.c - 1 do
    for oy = 0, oh - 1 do
      for ox = 0, ow - 1 do
        local row = {}
        for j = 1, n do
          local m, s = -math.huge, 0
          for ky = 0, self.kh - 1 do
            local iy = oy * self.sh - self.ph + ky
            for kx = 0, self.kw - 1 do
              local ix = ox * self.sw - self.pw + kx
              if iy >= 0 and iy < g.h and ix >= 0 and ix < g.w then
                local v = x[(c * g.h + iy) * g.w + ix + 1][j]
                s = s + v
                if v > m then m = v end
              end
            end
          end
          row[j] = self.max and m or s / (self.kh * self.kw)
        end
        out[(c * oh + oy) * ow + ox + 1] = row
      end
    end
  end
  return out
end

function Pool:describe()
  return {kind = self.kind, k = {self.kh, self.kw}, stride = {self.sh, self.sw}, pad = {self.ph, self.pw},
          input = self.image_in and {c = self.image_in.c, h = self.image_in.h, w = self.image_in.w} or nil}
end

-- ---------------------------------------------------------------------------
-- nn.flatten(): the end of the image shapes
-- ---------------------------------------------------------------------------

-- The layout already is one column per sample: flatten moves nothing. It
-- ends the image shape (the layers after it see C·H·W rows), so a linear
-- layer can follow a pool with a clear size check.
local Flatten = layer.class()
pool.Flatten = Flatten

function pool.flatten(opts)
  opts = options.check("nn.flatten", opts, {"device"})
  local dev = layer.device(opts, "nn.flatten")
  return setmetatable({dev = dev, _params = {}}, Flatten)
end

function Flatten:__tostring()
  return self.image_in and fmt("flatten(%s→%d)", shape_str(self.image_in), self.inputs) or "flatten"
end

function Flatten:take_image(shape)
  if shape then
    self.image_in = {c = shape.c, h = shape.h, w = shape.w}
    self.inputs = shape.c * shape.h * shape.w
    self.outputs = self.inputs
  end
  return nil
end

-- Without an image layer before it, a flatten takes its neighbour's size (as nn.dropout).
function Flatten:bind(rows) self.inputs, self.outputs = rows, rows end

-- forward: x → x (the same matrix);  backward: dy → dy.
function Flatten:forward(x, index)
  if getmetatable(x) ~= layer.matrix_mt then
    error(fmt("%s: input is %s, expected a matrix", index and fmt("net:forward: layer %d, flatten", index) or "layer:forward: flatten", type(x)), 0)
  end
  if self.inputs and x.rows ~= self.inputs then
    error(fmt("%s: input is %d×%d but the layer takes %d rows", index and fmt("net:forward: layer %d, %s", index,
      tostring(self)) or "layer:forward: " .. tostring(self), x.rows, x.cols, self.inputs), 0)
  end
  self.n = x.cols
  return x
end

function Flatten:backward(dy, need_dx)
  if need_dx == false then return end
  return dy
end

function Flatten:_setup() end
function Flatten:host_forward(x) return x end
function Flatten:describe()
  return {kind = "flatten", input = self.image_in and {c = self.image_in.c, h = self.image_in.h, w = self.image_in.w} or nil,
          rows = self.inputs}
end

-- ---------------------------------------------------------------------------
-- attach: nn.maxpool2d, nn.avgpool2d, nn.flatten; their kinds for checkpoints
-- ---------------------------------------------------------------------------

function pool.attach(nn)
  nn.maxpool2d, nn.avgpool2d, nn.flatten = pool.maxpool2d, pool.avgpool2d, pool.flatten
  nn.Pool, nn.Flatten = Pool, Flatten
  nn.layer_kinds.maxpool2d = function(d, dev) return pool.maxpool2d(d.k, d.stride, {pad = d.pad, input = d.input, device = dev}) end
  nn.layer_kinds.avgpool2d = function(d, dev) return pool.avgpool2d(d.k, d.stride, {pad = d.pad, input = d.input, device = dev}) end
  nn.layer_kinds.flatten = function(d, dev)
    local f = pool.flatten({device = dev})
    if d.input then f:take_image(d.input) elseif d.rows then f:bind(d.rows) end
    return f
  end
  return pool
end

return pool

-- vela.conv: nn.conv2d in the manner of nn.linear (lua/vela/nn.lua):
-- forward and backward side by side, the equations as comments, one kernel
-- call per equation, buffers made once per batch size; and the image geometry
-- it shares with the pools and nn.flatten (lua/vela/pool.lua).
--
-- Layout (see docs/lua-api.md, "Images"): a batch of images is a matrix of
-- C·H·W rows (channel-major, then the image's rows, then its columns) and one
-- column per sample, as MNIST's 784×n already is. Every image layer keeps the
-- image shape {c =, h =, w =} it takes (layer.image_in) and gives
-- (layer.image; nil after nn.flatten); nn.sequential hands each layer the
-- shape of the one before it, so only the first layer of a net is told its
-- image size ({input = {h = 28, w = 28}}; a number for square images).
--
-- nn.conv2d is im2col + one GEMM + the layout move with the bias:
--   cols = im2col(x)            (C·kh·kw) × (P·n), P = oh·ow positions
--   uᵀ   = W·cols               (out × P·n)                 mm
--   z    = images(u) + b        (out·P × n), the image layout  to_images
--   a    = act(z)
-- On the cpu a stride-1 unpadded layer's forward is one vela.conv instead
-- (direct loops, no windows; on AVX2, or always for one input channel), and
-- its dW and db one vela.conv_wgrad (one input channel, or on AVX2 kw ≤ 5
-- and a multiple of 16 output channels), and on AVX2 with several input
-- channels its dx one vela.conv_dgrad (else col2im(Wᵀ·duᵀ) by parts); see
-- Conv2d:_buffers.
local vela = require "vela"
local options = require "vela.options"
local layer = require "vela.layer"

local conv = {}
local fmt = string.format

local alloc, buffers, ones_on = layer.alloc, layer.buffers, layer.ones_on
local check_input, check_grad, dev_name = layer.check_input, layer.check_grad, layer.dev_name

-- ---------------------------------------------------------------------------
-- Image geometry, shared with the pools (lua/vela/pool.lua) as conv.image
-- ---------------------------------------------------------------------------

local function shape_str(s) return fmt("%d×%d×%d", s.c, s.h, s.w) end

-- nn's input checks, after one of an image layer's own: it knows its image size.
local function check_image_input(self, x, index)
  if rawequal(x, self._checked) then return end
  if not self.inputs then
    local name = index and fmt("net:forward: layer %d, %s", index, tostring(self)) or fmt("layer:forward: %s", tostring(self))
    error(fmt("%s: the layer does not know its image size: give it {input = {h =, w =}} or put it after an image layer in nn.sequential", name), 0)
  end
  check_input(self, x, index, shape_str(self.image_in) .. " images, one per column")
end

-- A size argument: a positive integer, or {height, width} of them.
local function pair(v, fn, what)
  local function int(x) return math.type(x) == "integer" and x >= 1 end
  if int(v) then return v, v end
  if type(v) == "table" and #v == 2 and int(v[1]) and int(v[2]) then return v[1], v[2] end
  error(fmt("%s: %s must be a positive integer or {height, width}, got %s", fn, what,
    type(v) == "table" and "a table" or tostring(v)), 3)
end

local function pad_pair(v, fn)
  if v == nil then return 0, 0 end
  if math.type(v) == "integer" and v >= 0 then return v, v end
  if type(v) == "table" and #v == 2 and math.type(v[1]) == "integer" and math.type(v[2]) == "integer"
    and v[1] >= 0 and v[2] >= 0 then return v[1], v[2] end
  error(fmt("%s: pad must be a non-negative integer or {height, width}, got %s", fn,
    type(v) == "table" and "a table" or tostring(v)), 3)
end

-- opts.input: {h =, w = [, c =]}, or a number for square images; nil when absent.
local function input_shape(v, c, fn)
  if v == nil then return nil end
  if math.type(v) == "integer" and v >= 1 then return {c = c, h = v, w = v} end
  if type(v) == "table" and math.type(v.h) == "integer" and math.type(v.w) == "integer" and v.h >= 1 and v.w >= 1 then
    if v.c ~= nil and v.c ~= c and c then
      error(fmt("%s: input has c = %s but the layer takes %d channels", fn, tostring(v.c), c), 3)
    end
    local cc = c or v.c
    if math.type(cc) ~= "integer" or cc < 1 then
      error(fmt("%s: input must say its channels: {c =, h =, w =}, got c = %s", fn, tostring(v.c)), 3)
    end
    return {c = cc, h = v.h, w = v.w}
  end
  error(fmt("%s: input must be {h =, w =} (or a number for square images), got %s", fn,
    type(v) == "table" and "a table without integer h and w" or tostring(v)), 3)
end

-- Output positions along one axis.
local function outs(size, k, s, p) return (size + 2 * p - k) // s + 1 end

-- The layer's image shape in → its geometry table for the kernels and its
-- output shape; errors name fn (nn.sequential or the constructor).
local function place(self, shape, fn)
  if shape.c ~= self.channels_in then
    error(fmt("%s: %s takes %d-channel images but gets %s", fn, tostring(self), self.channels_in, shape_str(shape)), 0)
  end
  if self.kh > shape.h + 2 * self.ph or self.kw > shape.w + 2 * self.pw then
    error(fmt("%s: the %d×%d window of %s does not fit %s images padded by %d×%d", fn, self.kh, self.kw,
      tostring(self), shape_str(shape), self.ph, self.pw), 0)
  end
  self.image_in = {c = shape.c, h = shape.h, w = shape.w}
  self.g = {c = shape.c, h = shape.h, w = shape.w, k = {self.kh, self.kw}, stride = {self.sh, self.sw},
            pad = {self.ph, self.pw}}
  local oh, ow = outs(shape.h, self.kh, self.sh, self.ph), outs(shape.w, self.kw, self.sw, self.pw)
  self.positions = oh * ow
  self.image = {c = self.channels_out, h = oh, w = ow}
  self.inputs, self.outputs = shape.c * shape.h * shape.w, self.channels_out * oh * ow
  self._checked = nil
  if self.dev then self:_buffers() end
end

-- nn.sequential calls this with the image shape of the layers before (nil for
-- none); returns the shape this layer gives. A layer given its input at
-- construction keeps it and checks the one it gets.
local function take_image(self, shape, index)
  local where = fmt("nn.sequential: layer %d", index)
  if shape == nil then
    if not self.image_in then
      error(fmt("%s (%s) does not know the size of its images: give the first image layer {input = {h =, w =}} " ..
        "(e.g. nn.conv2d(1, 6, 5, {input = {h = 28, w = 28}}))", where, tostring(self)), 0)
    end
    return self.image
  end
  if self.fixed and (shape.c ~= self.image_in.c or shape.h ~= self.image_in.h or shape.w ~= self.image_in.w) then
    error(fmt("%s (%s) takes %s images but the layers before give %s", where, tostring(self),
      shape_str(self.image_in), shape_str(shape)), 0)
  end
  place(self, shape, where)
  return self.image
end

conv.image = {shape_str = shape_str, check_input = check_image_input, pair = pair, pad_pair = pad_pair,
  input_shape = input_shape, place = place, take_image = take_image}

-- ---------------------------------------------------------------------------
-- nn.conv2d(in_ch, out_ch, k [, {stride = 1, pad = 0, activation = "identity", input =, seed =, init =, device =}])
-- ---------------------------------------------------------------------------

local Conv2d = layer.class()
conv.Conv2d = Conv2d
Conv2d.moves, Conv2d.forget = {"w", "b"}, {"x", "a", "n", "_cols"}  -- see layer:_moved

local activations, from_z = layer.activations, layer.from_z

-- Weights W (out × in·kh·kw, row o the filter of output channel o, its
-- columns in im2col's row order (c·kh + ky)·kw + kx) ~ N(0, 1)·s, s = √(2/fan_in)
-- (He, the default for relu) or √(2/(fan_in + fan_out)) (Xavier), fan_in =
-- in·kh·kw, fan_out = out·kh·kw; b = 0. The same seed gives the same W on every device.
function conv.conv2d(in_ch, out_ch, k, opts)
  local fn = "nn.conv2d"
  if math.type(in_ch) ~= "integer" or in_ch < 1 then
    error(fmt("%s: in_ch must be a positive integer (input channels), got %s", fn, tostring(in_ch)), 2)
  end
  if math.type(out_ch) ~= "integer" or out_ch < 1 then
    error(fmt("%s: out_ch must be a positive integer (output channels), got %s", fn, tostring(out_ch)), 2)
  end
  opts = options.check(fn, opts, {"stride", "pad", "activation", "input", "seed", "init", "device"})
  local kh, kw = pair(k, fn, "k")
  local sh, sw = pair(opts.stride or 1, fn, "stride")
  local ph, pw = pad_pair(opts.pad, fn)
  local activation = opts.activation or "identity"
  if not activations[activation] then
    error(fmt("%s: unknown activation '%s' (expected one of %s)", fn, tostring(activation),
      layer.activation_list), 2)
  end
  local fan_in, fan_out = in_ch * kh * kw, out_ch * kh * kw
  local init, scale = layer.init_scale(fn, opts.init, activation, fan_in, fan_out)
  local dev = layer.device(opts, fn)
  local self = setmetatable({channels_in = in_ch, channels_out = out_ch, kh = kh, kw = kw, sh = sh, sw = sw,
    ph = ph, pw = pw, activation = activation, init = init, training = true}, Conv2d)
  local shape = input_shape(opts.input, in_ch, fn)
  if shape then
    self.fixed = true
    local ok, err = pcall(place, self, shape, fn)
    if not ok then error(err, 2) end
  end
  self.w, self.b = layer.weights(dev, out_ch, fan_in, opts.seed, scale)
  return self:_on(dev)
end

function Conv2d:_setup(dev)
  -- On the cpu dW is stored as its transpose (a view of a C·kh·kw × out matrix),
  -- so OpenBLAS computes dWᵀ = cols·du: in the CNN of scripts/bench/cnn.lua
  -- the 64×640·640×800 product ran 7.4 ms a step instead of 8.2 (1 thread).
  local R = self.channels_in * self.kh * self.kw
  self.dw = dev_name(dev) == "cpu" and alloc(dev, R, self.channels_out):t() or alloc(dev, self.channels_out, R)
  self.db = alloc(dev, self.channels_out, 1)
  self.state = self.state or {w = {}, b = {}}
  self.wt = self.w:t()
  self._params = {{self.w, self.dw, self.state.w, name = "w"}, {self.b, self.db, self.state.b, name = "b"}}
  self._checked = nil
  if self.image then self:_buffers() end
end

-- Per-batch buffers: z, a, δ (out·P × n) and dx (C·H·W × n) as nn.linear's.
-- The GEMM's operands: cols (C·kh·kw × P·n, one window per column) for the
-- whole batch, u (P·m × out) for a part of m samples of it (see _part).
function Conv2d:_buffers()
  self.wide = buffers(self.dev, {cols = self.channels_in * self.kh * self.kw})
  self.part_max = math.max(1, (1 << 19) // (self.channels_in * self.kh * self.kw * self.positions))
  self.row_cols = dev_name(self.dev) == "cpu" and self.image.w >= 2 * self.kw
  -- One input channel on the cpu: vela.conv / vela.conv_wgrad, direct loops
  -- without windows (im2col's K = kh·kw is too short for a fast GEMM).
  local cpu = dev_name(self.dev) == "cpu"
  local plain = cpu and self.sh == 1 and self.sw == 1 and self.ph == 0 and self.pw == 0
  self.direct = plain and self.channels_in == 1
  -- More input channels, stride 1, no padding, on AVX2: the forward by
  -- vela.conv (register tiles over the image, no windows, no GEMM, no
  -- to_images); the backward makes each part's windows, for dx only where
  -- conv_wgrad takes dW (docs/cpu.md, "The second conv without windows").
  self.direct_forward = self.direct or (plain and (self.dev:info().limits.loops or ""):match("^x86%-64%-v") ~= nil)
  -- and dW, db by vela.conv_wgrad where its AVX2 tile fits (kw ≤ 5, out a multiple of 16)
  self.direct_wgrad = self.direct or (self.direct_forward and self.kw <= 5 and self.channels_out % 16 == 0)
  -- and dx by vela.conv_dgrad (register tiles over dz and W, no windows, no col2im) on AVX2
  self.direct_dgrad = self.direct_forward and not self.direct
  self.cols_parts, self.cols_views = {}, {}
  local shapes = {z = self.outputs, delta = self.outputs, dx = self.inputs}
  if from_z[self.activation] then shapes.a = self.outputs end
  self.buf = buffers(self.dev, shapes)
  self.parts, self.u_full, self.u_cap = {}, nil, 0
end

-- Samples per part: on the cpu a part's cols stays within ~2 MB (the
-- cache: im2col, the GEMM and col2im then work on resident data), elsewhere
-- the whole batch is one part (one dispatch each).
function Conv2d:_part_size(n)
  if dev_name(self.dev) ~= "cpu" then return n end
  return math.min(n, self.part_max)
end

-- The GEMM buffers of a part of m samples, made once per m.
function Conv2d:_part(m)
  local v = self.parts[m]
  if v then return v end
  local P = self.positions
  if m > self.u_cap then
    self.u_full, self.u_cap, self.parts = alloc(self.dev, P * m, self.channels_out), m, {}
  end
  local u = m == self.u_cap and self.u_full or self.u_full:view(1, 1, P * m, self.channels_out)
  v = {u = u, ut = u:t(), ones = ones_on(self.dev, P * m)}
  self.parts[m] = v
  return v
end

-- Column views [j, j + k) of the batch matrices, and their transposes,
-- cached per (matrix, j, k).
local function cols_of(self, m, j, k, transposed)
  if j == 1 and k == m.cols and not transposed then return m end
  local c = self._cols[m]
  if not c then c = {}; self._cols[m] = c end
  local key = (j * 65536 + k) * 2 + (transposed and 1 or 0)
  local v = c[key]
  if not v then
    v = m:columns(j, k)
    if transposed then v = v:t() end
    c[key] = v
  end
  return v
end

-- cols of the whole batch (C·kh·kw × P·n): each part fills and reads its
-- own columns, so the backward finds the forward's windows in place.
function Conv2d:_batch_cols(n) return self.wide:get(self.positions * n).cols end

-- The windows of the part of k samples from sample j (C·kh·kw × k·P), or its
-- transpose: columns of the batch's cols, or on the cpu when the output rows
-- are long (ow ≥ 2·kw) a matrix of the part's own stored row by row (the
-- transpose of a k·P × C·kh·kw matrix), where im2col moves runs of ow
-- positions instead of kw pixels and the GEMMs read it faster. Measured per
-- part of the first conv of scripts/bench/cnn.lua (1→32, 5×5 on 28×28, 36
-- images, 1 thread): im2col + forward GEMM + dW GEMM 0.84 ms against 0.97;
-- for its second (32→64 on 12×12, ow = 8) no better, so it keeps the columns.
function Conv2d:_cols_part(n, j, k, transposed)
  local P = self.positions
  if not self.row_cols then return cols_of(self, self:_batch_cols(n), (j - 1) * P + 1, k * P, transposed) end
  local q = (j - 1) // self.part_max + 1
  local full = self.cols_parts[q]
  if not full then
    full = alloc(self.dev, self.part_max * P, self.channels_in * self.kh * self.kw):t()
    self.cols_parts[q] = full
  end
  local views = self.cols_views[full]
  if not views then views = {}; self.cols_views[full] = views end
  local key = k * 2 + (transposed and 1 or 0)
  local v = views[key]
  if not v then
    v = k == self.part_max and full or full:columns(1, k * P)
    if transposed then v = v:t() end
    views[key] = v
  end
  return v
end

function Conv2d:__tostring()
  local extra = ""
  if self.sh ~= 1 or self.sw ~= 1 then extra = extra .. fmt(", stride %s", self.sh == self.sw and self.sh or self.sh .. "×" .. self.sw) end
  if self.ph ~= 0 or self.pw ~= 0 then extra = extra .. fmt(", pad %s", self.ph == self.pw and self.ph or self.ph .. "×" .. self.pw) end
  return fmt("conv2d(%d→%d, %d×%d%s, %s)", self.channels_in, self.channels_out, self.kh, self.kw, extra, self.activation)
end

Conv2d.take_image = take_image

-- The windows of the part of k samples from sample j where the pass puts
-- them: in training, the batch's own (n, j), kept for the backward; in
-- evaluation mode (net:eval(), nn.evaluate, nn.predict) the first part's
-- place, (k, 1), which every part reuses, so a forward-only pass holds one
-- part's windows (~2 MB) and not the batch's (205 MB for the second conv of
-- scripts/bench/cnn.lua on nn.evaluate's 1,000 images).
function Conv2d:_cols_at(n, j, k, kept, transposed)
  if kept then return self:_cols_part(n, j, k, transposed) end
  return self:_cols_part(k, 1, k, transposed)
end

-- forward: x (C·H·W × n) → a (out·oh·ow × n)
--   cols = im2col(x)             (C·kh·kw) × (P·n)           im2col
--   u    = colsᵀ·Wᵀ              (P·n) × out                 mm (uᵀ = W·cols stated with the long side as rows)
--   z    = to_images(u) + b·1ᵀ   out·P × n, per channel      to_images with the bias
--   a    = act(z)                (in place when act′ needs a only)
-- each a part's columns at a time on the cpu: its z is then still in the cache
-- for act (the first conv's z of a 128-image batch is 9.4 MB, a part's 2.7).
function Conv2d:forward(x, index)
  check_image_input(self, x, index)
  local n = x.cols
  local b = self.buf:get(n)
  if not rawequal(x, self.x) then self._cols = setmetatable({}, {__mode = "k"}) end
  self.x, self.n = x, n
  local act, a = self.activation, b.a or b.z
  if self.direct_forward then  -- z = conv(x) + b, a = act(z): one kernel, or two where act′ needs z
    self.kept, self.a = false, a
    if b.a then
      vela.conv(x, self.w, self.b, b.z, self.g)
      vela[act](b.z, a)
    else
      vela.conv(x, self.w, self.b, b.z, self.g, act)
    end
    return a
  end
  local m = self:_part_size(n)
  local kept = self.training ~= false or m == n  -- one part: its windows cost no more than a part's
  self.kept = kept
  for j = 1, n, m do  -- the batch in parts of m samples (one part but on the cpu)
    local k = math.min(m, n - j + 1)
    local v = self:_part(k)
    local c = self:_cols_at(n, j, k, kept)
    vela.im2col(cols_of(self, x, j, k), c, self.g)
    vela.mm(self:_cols_at(n, j, k, kept, true), self.wt, v.u)
    local z = cols_of(self, b.z, j, k)
    vela.to_images(v.u, z, self.b)
    if act ~= "identity" then vela[act](z, cols_of(self, a, j, k)) end
  end
  self.a = a
  return a
end

-- backward: da = ∂L/∂a (out·P × n) → dx = ∂L/∂x (C·H·W × n), or nothing when
-- need_dx is false:
--   δ     = da ∘ act′            out·P × n           <act>_backward
--   du    = from_images(δ)       (P·n) × out         from_images (into u's buffer)
--   dW    = duᵀ·colsᵀ            out × C·kh·kw       mm
--   db    = duᵀ·1                out                 mv with a ones vector
--   dcols = Wᵀ·duᵀ               C·kh·kw × (P·n)     mm (into cols' buffer: dW has read it)
--   dx    = col2im(dcols)        C·H·W × n           fill 0, col2im (which accumulates)
-- After a forward in evaluation mode each part's windows are made again. δ
-- is made a part at a time, as the forward's act. Where conv_wgrad is fast
-- on the cpu (direct_wgrad), dW and db are one conv_wgrad over the batch's δ
-- and the parts make only du, dcols and dx; where conv_dgrad is (direct_dgrad:
-- AVX2, several input channels) dx is one conv_dgrad over δ instead.
--
-- act_done (nn.sequential's, internal): da already is δ (a max pool after
-- this layer applied its relu′: Pool:takes_act in lua/vela/pool.lua).
function Conv2d:backward(da, need_dx, _, act_done)
  local b = check_grad(self, da, self.outputs, "conv2d")
  local n = self.n
  local act, a = act_done and "identity" or self.activation, b.a or b.z
  if self.direct_wgrad then  -- dW, db from δ over the whole batch, no windows
    local delta = act == "identity" and da or layer.delta(act, da, b.z, a, b.delta)
    vela.conv_wgrad(self.x, delta, self.dw, self.db, self.g)
    if need_dx == false then return end
    if self.direct_dgrad then return vela.conv_dgrad(delta, self.w, b.dx, self.g) end
    local m = self:_part_size(n)
    for j = 1, n, m do  -- dx = col2im(Wᵀ·duᵀ) a part at a time
      local k = math.min(m, n - j + 1)
      local v, c, dx = self:_part(k), self:_cols_at(n, j, k, false), cols_of(self, b.dx, j, k)
      vela.from_images(cols_of(self, delta, j, k), v.u)
      vela.mm(self.wt, v.ut, c)
      vela.fill(dx, 0)
      vela.col2im(c, dx, self.g)
    end
    return b.dx
  end
  local m = self:_part_size(n)
  for j = 1, n, m do
    local k = math.min(m, n - j + 1)
    local v = self:_part(k)
    local beta = j == 1 and 0 or 1  -- dW and db sum over the parts
    local kept = self.kept
    local c = self:_cols_at(n, j, k, kept)  -- this part's windows, from the forward
    if not kept then vela.im2col(cols_of(self, self.x, j, k), c, self.g) end
    local delta = cols_of(self, da, j, k)
    if act ~= "identity" then
      delta = layer.delta(act, delta, cols_of(self, b.z, j, k), cols_of(self, a, j, k), cols_of(self, b.delta, j, k))
    end
    vela.from_images(delta, v.u)
    vela.mm(1, v.ut, self:_cols_at(n, j, k, kept, true), beta, self.dw)
    vela.mv(1, v.ut, v.ones, beta, self.db)
    if need_dx ~= false and not self.direct_dgrad then
      local dx = cols_of(self, b.dx, j, k)
      vela.mm(self.wt, v.ut, c)  -- dcols over the windows (dW has read them)
      vela.fill(dx, 0)
      vela.col2im(c, dx, self.g)
    end
  end
  if need_dx == false then return end
  if self.direct_dgrad then vela.conv_dgrad(layer.backward[act] and b.delta or da, self.w, b.dx, self.g) end
  return b.dx
end

-- float64 for nn.gradcheck: the convolution written out, a = act(Σ W·window + b).
function Conv2d:host_forward(x, P)
  local f = require("vela.gradcheck").activation(self.activation)
  local g, W, b = self.image_in, P.w, P.b
  local oh, ow, n, out = self.image.h, self.image.w, #x[1], {}
  for o = 1, self.channels_out do
    for oy = 0, oh - 1 do
      for ox = 0, ow - 1 do
        local row = {}
        for j = 1, n do
          local s = b[o][1]
          for c = 0, g.c - 1 do
            for ky = 0, self.kh - 1 do
              local iy = oy * self.sh - self.ph + ky
              if iy >= 0 and iy < g.h then
                for kx = 0, self.kw - 1 do
                  local ix = ox * self.sw - self.pw + kx
                  if ix >= 0 and ix < g.w then
                    s = s + W[o][(c * self.kh + ky) * self.kw + kx + 1] * x[(c * g.h + iy) * g.w + ix + 1][j]
                  end
                end
              end
            end
          end
          row[j] = f(s)
        end
        out[((o - 1) * oh + oy) * ow + ox + 1] = row
      end
    end
  end
  return out
end

function Conv2d:describe()
  return {kind = "conv2d", in_ch = self.channels_in, out_ch = self.channels_out, k = {self.kh, self.kw},
          stride = {self.sh, self.sw}, pad = {self.ph, self.pw}, activation = self.activation, init = self.init,
          input = self.image_in and {c = self.image_in.c, h = self.image_in.h, w = self.image_in.w} or nil}
end

-- ---------------------------------------------------------------------------
-- attach: nn.conv2d and its kind for checkpoints
-- ---------------------------------------------------------------------------

function conv.attach(nn)
  nn.conv2d, nn.Conv2d = conv.conv2d, Conv2d
  nn.layer_kinds.conv2d = function(d, dev)
    return conv.conv2d(d.in_ch, d.out_ch, d.k, {stride = d.stride, pad = d.pad, activation = d.activation,
      init = d.init, input = d.input, device = dev, seed = 1})
  end
  return conv
end

return conv

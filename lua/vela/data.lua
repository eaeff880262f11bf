-- vela.data: data sets kept on the device, and batches taken from them there.
--
-- A set is {images = uint8 (pixels)×n, labels = float 1×n of 1-based class
-- indices, n = n, classes = {names}}, resident on one device. A loader
-- shuffles by seed (one permutation uploaded per epoch) and gathers each
-- batch with gather_cols straight into a reused float buffer, scaled to
-- [0, 1]: no per-batch host transfer and no per-batch allocation.
-- data.show and data.show_weights draw digits and learned templates in the
-- terminal.
local vela = require "vela"
local options = require "vela.options"

local data = {}
local fmt = string.format

-- A set's methods: set:to(dev). Every set data's functions make has them.
local Set = {}
Set.__index = Set
data.Set = Set

local function new_set(t) return setmetatable(t, Set) end

-- set:to(dev) -> a copy of the set on dev (images and labels; the original
-- stays where it was), as m:to(dev) for a matrix.
function Set:to(dev)
  if type(self) ~= "table" or not self.images then
    error("set:to: call it on a set, with a colon: set:to('vulkan:0')", 2)
  end
  if dev == nil then error("set:to: expected a device or a device name ('cpu', 'vulkan:0'), got nothing", 2) end
  local ok, images = pcall(self.images.to, self.images, dev)
  if not ok then error("set:to: " .. tostring(images):gsub("^[^:]*:%d+: ", ""), 2) end
  local labels
  if self.labels then
    ok, labels = pcall(self.labels.to, self.labels, dev)
    if not ok then images:release(); error("set:to: " .. tostring(labels):gsub("^[^:]*:%d+: ", ""), 2) end
  end
  local out = {}
  for k, v in pairs(self) do out[k] = v end
  out.images, out.labels = images, labels
  return new_set(out)
end

data.mnist_classes = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}
data.fashion_classes = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                        "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() return true end
  return false
end

-- The IDX file `name` in dir, raw or gzipped.
local function find(dir, name, what)
  for _, p in ipairs{dir .. "/" .. name, dir .. "/" .. name .. ".gz"} do
    if exists(p) then return p end
  end
  error(fmt("%s: no %s in '%s' (looked for %s and %s.gz; scripts/get-data fetches the data sets)",
    what, name, dir, name, name), 0)
end

-- One IDX images/labels pair as a set, the counts checked against each other.
function data.read_set(images_path, labels_path, classes, dev)
  if type(images_path) ~= "string" or type(labels_path) ~= "string" or type(classes) ~= "table" then
    error(fmt("data.read_set: expected (images_path, labels_path, classes [, dev]), got %s, %s, %s",
      type(images_path), type(labels_path), type(classes)), 2)
  end
  local ok, images = pcall(vela.read_idx, images_path, dev)
  if not ok then error("data.read_set: " .. tostring(images):gsub("^[^:]*:%d+: ", ""), 2) end
  local ok2, labels = pcall(vela.read_labels, labels_path, #classes, dev)
  if not ok2 then
    images:release()
    error("data.read_set: " .. tostring(labels):gsub("^[^:]*:%d+: ", ""), 2)
  end
  if images.cols ~= labels.cols then
    error(fmt("data: '%s' holds %d images but '%s' holds %d labels", images_path, images.cols,
      labels_path, labels.cols), 0)
  end
  return new_set{images = images, labels = labels, n = images.cols, classes = classes}
end

-- Both sets, all or nothing: the images must be 28×28 (MNIST's layout, read
-- from the IDX header), and a failure in any file releases what was read.
local function load_pair(dir, classes, what, dev)
  local made = {}
  local function set(prefix)
    local images = find(dir, prefix .. "-images-idx3-ubyte", what)
    local labels = find(dir, prefix .. "-labels-idx1-ubyte", what)
    local s = data.read_set(images, labels, classes, dev)
    made[#made + 1], made[#made + 2] = s.images, s.labels
    -- A raw file's header gives rows and columns; a .gz one is checked by its pixel count.
    local f = not images:match("%.gz$") and io.open(images, "rb")
    local head = f and f:read(16)
    if f then f:close() end
    if head and #head == 16 then
      local _, _, r, c = string.unpack(">I4I4I4I4", head)
      if r ~= 28 or c ~= 28 then
        error(fmt("%s: '%s' holds %d×%d images; %s images are 28×28", what, images, r, c, what), 0)
      end
    end
    if s.images.rows ~= 28 * 28 then
      error(fmt("%s: '%s' holds images of %d pixels; %s images are 28×28 = 784", what, images, s.images.rows, what), 0)
    end
    return s
  end
  local ok, res = pcall(function() return {train = set("train"), test = set("t10k")} end)
  if not ok then
    for i = #made, 1, -1 do pcall(made[i].release, made[i]) end
    local msg = tostring(res):gsub("^[^:]*:%d+: ", "")
    if not msg:find("^" .. what:gsub("%.", "%%.") .. ":") then msg = what .. ": " .. msg end
    error(msg, 3)
  end
  return res
end

-- The default directory of a data set: $VELA_DATA/name, else data/name under
-- the current directory, else under the source tree vela was built from.
local function default_dir(name)
  local env = os.getenv("VELA_DATA")
  if env and env ~= "" then return env .. "/" .. name end
  local here = "data/" .. name
  if exists(here .. "/train-labels-idx1-ubyte") or exists(here .. "/train-labels-idx1-ubyte.gz") then return here end
  return vela.data_dir and (vela.data_dir .. "/" .. name) or here
end

-- data.mnist([dir [, dev]]): the four standard IDX files in dir (default data/mnist).
function data.mnist(dir, dev)
  return load_pair(dir or default_dir("mnist"), data.mnist_classes, "data.mnist", dev)
end

-- data.fashion_mnist([dir [, dev]]): the same layout, default data/fashion-mnist.
function data.fashion_mnist(dir, dev)
  return load_pair(dir or default_dir("fashion-mnist"), data.fashion_classes, "data.fashion_mnist", dev)
end

-- The first n samples from `first` on (1-based), as views: no copy.
function data.subset(set, first, n)
  if type(set) ~= "table" or not set.images or not set.labels then
    error(fmt("data.subset: expected a set {images =, labels =, n =}, got %s", type(set)), 2)
  end
  if math.type(first) ~= "integer" or math.type(n) ~= "integer" then
    error(fmt("data.subset: first and n must be integers, got %s and %s", tostring(first), tostring(n)), 2)
  end
  if first < 1 or n < 0 or first + n - 1 > set.n then
    error(fmt("data.subset: samples %d..%d are outside the set of %d", first, first + n - 1, set.n), 2)
  end
  return new_set{images = set.images:columns(first, n), labels = set.labels:columns(first, n), n = n, classes = set.classes}
end

-- Both sets of a data set moved to dev (each by set:to).
function data.to(sets, dev)
  if type(sets) ~= "table" then error(fmt("data.to: expected a data set {train =, test =} or a set, got %s", type(sets)), 2) end
  if sets.images then return Set.to(sets, dev) end
  local out = {}
  for k, s in pairs(sets) do
    if type(s) == "table" and s.images then
      local ok, c = pcall(Set.to, s, dev)
      if not ok then error((tostring(c):gsub("^[^:]*:%d+: ", ""):gsub("^set:to", "data.to")), 2) end
      out[k] = c
    else
      out[k] = s
    end
  end
  return out
end

-- ---------------------------------------------------------------------------
-- Batches
-- ---------------------------------------------------------------------------

local Loader = {}
Loader.__index = Loader

-- data.loader(set, batch [, opts]): opts.seed (default 1), opts.shuffle
-- (default true), opts.scale (default 1/255 for uint8 images, else 1),
-- opts.shift (default 0: on-device augmentation, each image of a batch moved
-- by up to ±shift pixels each way, zero fill, by Philox from (seed, epoch,
-- batch): random_shift; the images are opts.height × opts.width, square by
-- default, channel-major when there are several channels per column).
-- opts.group (default 1): the shuffle moves runs of `group` consecutive
-- columns as one (the sequences of a text set, one token per column, stay in
-- order); the set's size and the batch must be multiples of it.
-- loader:epoch(e) iterates over (x, y, b, n): x the float (pixels)×n batch,
-- y its 1×n labels, b the batch number; the last batch may be smaller.
local loader_options = {"seed", "shuffle", "scale", "shift", "height", "width", "group"}

function data.loader(set, batch, opts)
  opts = options.check("data.loader", opts, loader_options)
  if type(set) ~= "table" or not set.images then
    error("data.loader: expected a set {images =, labels =, n =}", 2)
  end
  if not set.n then set = {images = set.images, labels = set.labels, n = set.images.cols, classes = set.classes} end
  if math.type(batch) ~= "integer" or batch < 1 then
    error(fmt("data.loader: batch size must be a positive integer, got %s", tostring(batch)), 2)
  end
  if batch > set.n then
    error(fmt("data.loader: batch size %d is larger than the set (%d samples)", batch, set.n), 2)
  end
  local group = opts.group or 1
  if math.type(group) ~= "integer" or group < 1 then
    error(fmt("data.loader: group must be a positive integer (columns that move together), got %s", tostring(group)), 2)
  end
  if set.n % group ~= 0 or batch % group ~= 0 then
    error(fmt("data.loader: group %d must divide the set's %d samples and the batch of %d", group, set.n, batch), 2)
  end
  local dev = set.images:device()
  local scale = opts.scale or (set.images:dtype() == "uint8" and 1 / 255 or 1)
  local self = setmetatable({set = set, batch = batch, dev = dev, scale = scale, group = group,
                             seed = opts.seed or 1, shuffle = opts.shuffle ~= false}, Loader)
  self.nbatches = (set.n + batch - 1) // batch
  self.x = vela.zeros(set.images.rows, batch, "float32", dev)
  self.y = vela.zeros(1, batch, "float32", dev)
  local last = set.n - (self.nbatches - 1) * batch
  self.views = {[batch] = {self.x, self.y}}
  if last ~= batch then self.views[last] = {self.x:columns(1, last), self.y:columns(1, last)} end
  if set.labels and set.labels.cols ~= set.n then
    error(fmt("data.loader: the set has %d labels for %d images", set.labels.cols, set.n), 2)
  end
  local shift = opts.shift or 0
  if math.type(shift) ~= "integer" or shift < 0 or shift > 255 then
    error(fmt("data.loader: shift must be an integer in 0..255 (pixels), got %s", tostring(opts.shift)), 2)
  end
  if shift > 0 then
    local rows = set.images.rows
    local h = opts.height or set.height or math.floor(math.sqrt(rows) + 0.5)
    local w = opts.width or set.width or h
    if math.type(h) ~= "integer" or math.type(w) ~= "integer" or h < 1 or w < 1 or rows % (h * w) ~= 0 then
      error(fmt("data.loader: shift needs images of height×width pixels: %d rows are not channels·%s·%s " ..
        "(give opts.height and opts.width)", rows, tostring(h), tostring(w)), 2)
    end
    self.shift, self.height, self.width = shift, h, w
    -- The gathered batch goes here, then random_shift moves it into x.
    self.raw = vela.zeros(rows, batch, "float32", dev)
    self.raw_views = {[batch] = self.raw}
    if last ~= batch then self.raw_views[last] = self.raw:columns(1, last) end
  end
  return self
end

-- The order of epoch e: a permutation by (seed, e), made on the host and
-- uploaded once (the same on every device), or 1..n unshuffled.
function Loader:order(e)
  -- One order matrix for the loader's life, so the per-batch index views
  -- are made once; each epoch's permutation is copied into it.
  if not self.order_m then self.order_m, self.idx = vela.zeros(1, self.set.n, "float32", self.dev), {} end
  if not self.shuffle then
    if not self.sorted then
      local t = {}
      for i = 1, self.set.n do t[i] = i end
      vela.copy(vela.matrix(1, self.set.n, t, "float32", self.dev), self.order_m)
      self.sorted = true
    end
    return self.order_m
  end
  local g = self.group
  local p = vela.permutation(self.set.n // g, self.seed * 1000003 + (e or 1), g == 1 and self.dev or "cpu")
  if g > 1 then  -- group k of the permutation brings columns (k − 1)·g + 1 … k·g, in order
    local groups, t = p:totable()[1], {}
    for i, k in ipairs(groups) do
      for c = 1, g do t[(i - 1) * g + c] = (k - 1) * g + c end
    end
    p:release()
    p = vela.matrix(1, self.set.n, t, "float32", self.dev)
  end
  vela.copy(p, self.order_m)
  p:release()
  return self.order_m
end

function Loader:epoch(e)
  local order = self:order(e)
  local set, batch, scale = self.set, self.batch, self.scale
  local b = 0
  return function()
    local first = b * batch + 1
    if first > set.n then return nil end
    b = b + 1
    local n = math.min(batch, set.n - first + 1)
    local v = self.views[n]
    local idx = self.idx[b]
    if not idx then idx = order:columns(first, n); self.idx[b] = idx end
    if self.shift then
      -- x ← images(:, order[first..]) / 255, each moved by up to ±shift pixels (Philox: seed, step)
      local raw = self.raw_views[n]
      vela.gather_cols(set.images, idx, raw, scale)
      vela.random_shift(raw, v[1], self.shift, self.height, self.width, self.seed,
        ((e or 1) - 1) * self.nbatches + b)
    else
      vela.gather_cols(set.images, idx, v[1], scale)  -- x ← images(:, order[first..]) / 255
    end
    if set.labels then vela.gather_cols(set.labels, idx, v[2]) end  -- y ← labels(order[first..])
    return v[1], v[2], b, n
  end
end

-- data.batches(set, batch [, opts]): one epoch's batches (opts.epoch picks the shuffle).
function data.batches(set, batch, opts)
  opts = options.check("data.batches", opts, {"epoch", table.unpack(loader_options)})
  local lopts = {}
  for k, v in pairs(opts) do if k ~= "epoch" then lopts[k] = v end end
  return data.loader(set, batch, lopts):epoch(opts.epoch or 1)
end

-- ---------------------------------------------------------------------------
-- Pictures in the terminal
-- ---------------------------------------------------------------------------

local shades = {" ", "░", "▒", "▓", "█"}

-- Two image rows per text line (terminal cells are about twice as tall as
-- wide): each cell shows the darker of the two pixels it covers.
local function render(pix, side, lo, hi)
  local lines = {}
  local range = (hi > lo) and (hi - lo) or 1
  for r = 1, side, 2 do
    local cells = {}
    for c = 1, side do
      local v = pix[(r - 1) * side + c]
      if r + 1 <= side then v = math.max(v, pix[r * side + c]) end
      local k = math.floor((v - lo) / range * (#shades - 1) + 0.5)
      cells[c] = shades[math.max(0, math.min(#shades - 1, k)) + 1]
    end
    lines[#lines + 1] = table.concat(cells)
  end
  return lines
end

local function column(m, j)
  local t = m:col(j):to("cpu"):totable()
  local v = {}
  for i = 1, #t do v[i] = t[i][1] end
  return v
end

local function side_of(rows, what)
  local side = math.floor(math.sqrt(rows) + 0.5)
  if side * side ~= rows then error(fmt("%s: %d pixels is not a square image", what, rows), 3) end
  return side
end

-- data.image_lines(images, i): the lines that draw image i (a column) of
-- images, a set (then with its class first) or a matrix.
function data.image_lines(images, i)
  local set
  if type(images) == "table" then set, images = images, images.images end
  if getmetatable(images) ~= getmetatable(vela.zeros(0, 0, "float32", "cpu")) then
    error(fmt("data.show: images must be a matrix or a set {images =}, got %s", type(images)), 2)
  end
  i = i or 1
  if math.type(i) ~= "integer" then error(fmt("data.show: i must be an integer, got %s", tostring(i)), 2) end
  if i < 1 or i > images.cols then
    error(fmt("data.show: image %d is outside 1..%d", i, images.cols), 3)
  end
  local side = side_of(images.rows, "data.show")
  local pix = column(images, i)
  local lo, hi = math.huge, -math.huge
  for _, v in ipairs(pix) do lo, hi = math.min(lo, v), math.max(hi, v) end
  if images:dtype() == "uint8" then lo, hi = 0, 255 end
  local lines = render(pix, side, lo, hi)
  if set then
    local c = math.floor(set.labels:get(1, i) + 0.5)
    table.insert(lines, 1, fmt("image %d: class %d (%s)", i, c, set.classes and set.classes[c] or "?"))
  end
  return lines, {{pix = pix, lo = lo, hi = hi}}, side
end

-- Prints the lines; in a notebook (vela._display_bundle, src/jupyter) shows
-- the images as a picture, with the lines as its text form.
local function show(lines, images, side, per_row)
  local text = table.concat(lines, "\n")
  if vela._display_bundle then
    local caption = #lines > 0 and lines[1]:match("^image %d+: .*") or nil
    vela._display_bundle{["image/svg+xml"] = require("vela.plot_svg").images(images, side, per_row, caption),
                         ["text/plain"] = text}
  else
    print(text)
  end
end

-- data.show(images, i): prints image i; returns nothing (printed once).
function data.show(images, i)
  local lines, pix, side = data.image_lines(images, i)
  show(lines, pix, side, 1)
end

-- data.weight_lines(layer [, count [, per_row]]): the first `count` rows of a
-- first layer's W drawn as images: the templates each unit learned, each
-- unit's positive weights scaled to its own maximum.
function data.weight_lines(layer, count, per_row)
  local w = layer.w or layer
  if layer.layers then w = layer.layers[1].w end
  count = math.min(count or 10, w.rows)
  per_row = per_row or 5
  local side = side_of(w.cols, "data.show_weights")
  local wt = w:t()
  local out, images = {}, {}
  for start = 1, count, per_row do
    local blocks = {}
    for u = start, math.min(count, start + per_row - 1) do
      -- The excitatory part: where ink raises this unit's output.
      local pix = column(wt, u)
      local hi = 0
      for k, v in ipairs(pix) do pix[k] = math.max(v, 0); hi = math.max(hi, v) end
      blocks[#blocks + 1] = render(pix, side, 0, hi)
      images[#images + 1] = {pix = pix, lo = 0, hi = hi}
    end
    for r = 1, #blocks[1] do
      local parts = {}
      for b = 1, #blocks do parts[b] = blocks[b][r] end
      out[#out + 1] = table.concat(parts, "  ")
    end
    out[#out + 1] = ""
  end
  return out, images, side, per_row
end

-- data.show_weights(layer [, count [, per_row]]): prints them; returns nothing.
function data.show_weights(layer, count, per_row)
  show(data.weight_lines(layer, count, per_row))
end

-- help(nn.fit), ?nn.linear: documentation for the shell's help.
if vela.doc then
  vela.doc("data.mnist", "data.mnist([dir [, dev]]) -> {train =, test =}",
    "MNIST's four IDX files (raw or .gz) from dir (data/mnist): uint8 784×n images and 1×n labels (digit + 1) on the device.", data.mnist)
  vela.doc("data.fashion_mnist", "data.fashion_mnist([dir [, dev]]) -> {train =, test =}",
    "Fashion-MNIST the same way (data/fashion-mnist).", data.fashion_mnist)
  vela.doc("data.loader", "data.loader(set, batch [, {seed =, shuffle = true, shift = 0, height =, width =, group = 1}]) -> loader",
    "loader:epoch(e) iterates (x, y, b, n): batches gathered on the device, scaled to [0, 1], in an order fixed by (seed, e). shift = 2 augments on the device: each image moved by up to ±2 pixels each way (zero fill), drawn by Philox from (seed, epoch, batch), the same on every device (random_shift); images square unless height and width are given. nn.fit{shift = 2} passes it on.", data.loader)
  vela.doc("data.batches", "data.batches(set, batch [, {seed =, epoch =}])",
    "One epoch's batches: for x, y in data.batches(set, 128) do ... end.", data.batches)
  vela.doc("data.subset", "data.subset(set, first, n) -> set",
    "n samples from `first` on, as views.", data.subset)
  vela.doc("data.read_set", "data.read_set(images_path, labels_path, classes [, dev]) -> set",
    "A set from one IDX images file and one IDX labels file (raw or .gz), their counts checked against each other.", data.read_set)
  vela.doc("data.to", "data.to(sets, dev) -> sets",
    "Copies of the sets of a data set ({train =, test =}) on dev: data.to(mnist, 'vulkan:0'). The originals stay where they were. One set: set:to(dev).", data.to)
  vela.doc("set:to", "set:to(dev) -> set",
    "A copy of one set (images and labels) on dev, as m:to(dev): test = mnist.test:to('vulkan:0'). The original stays where it was; data.to moves a whole data set.", Set.to)
  vela.doc("loader:epoch", "loader:epoch(e) -> iterator of x, y, b, n",
    "for x, y, b, n in loader:epoch(e) do ... end: the batches of epoch e (x pixels×n floats in [0, 1], y 1×n labels, b the batch number, n its size), gathered on the device in an order fixed by (seed, e).", Loader.epoch)
  vela.doc("loader:order", "loader:order(e) -> 1×n",
    "The sample order of epoch e on the device: a permutation by (seed, e), or 1..n without shuffle.", Loader.order)
  vela.doc("data.show", "data.show(images, i)",
    "Prints image i (of a set, with its class, or of a matrix of one image per column) in the terminal, or shows it as a picture in a notebook; returns nothing. data.show(mnist.train, 2).", data.show)
  vela.doc("data.image_lines", "data.image_lines(images, i) -> {lines}",
    "The lines data.show prints, without printing them.", data.image_lines)
  vela.doc("data.show_weights", "data.show_weights(layer [, count [, per_row]])",
    "Prints a first layer's learned templates (count 10, per_row 5), or shows them as a picture in a notebook; returns nothing. data.show_weights(net, 10).", data.show_weights)
  vela.doc("data.weight_lines", "data.weight_lines(layer [, count [, per_row]]) -> {lines}",
    "The lines data.show_weights prints, without printing them.", data.weight_lines)
end

-- data.text: character-level text sets for sequence models (lua/vela/text.lua).
data.text = require("vela.text").load

return data

-- vela.parallel: data-parallel training over several devices of one process,
-- and the step nn.fit takes with {devices =} or {dist = true} (docs/dist.md).
--
-- A replica of the net lives on each device (the first is the net itself).
-- One step: the batch is split into contiguous shares (dist.shard's rule);
-- every replica runs forward and backward on its share, the Vulkan devices
-- queued and started first, the cpu (which runs as it is called) last, so the
-- devices overlap; the gradients are summed into the first replica, each
-- weighted by its share of the batch, in device order; the optimizer steps
-- once, there; the new parameters are copied to every other replica. The
-- replicas are bit-identical after every step by construction (copies):
-- stepping each replica on its own device would not keep them so, since the
-- devices round differently.
local vela = require "vela"
local dist = require "vela.dist"
local native = require "vela.dist_native"

local parallel = {}
local fmt = string.format

-- A device (or spec) as a device, the current device left as it was.
local function resolve(fn, spec, i)
  if type(spec) ~= "string" and not (type(spec) == "userdata" and pcall(spec.name, spec)) then
    error(fmt("%s: devices[%d] must be a device or a name such as \"cpu\" or \"vulkan:0\", got %s", fn, i, type(spec)), 4)
  end
  if type(spec) ~= "string" then return spec end
  local cur = vela.device()
  local ok, d = pcall(vela.device, spec)
  vela.device(cur)
  if not ok then error(fmt("%s: devices[%d]: %s", fn, i, (tostring(d):gsub("^[^:]*:%d+: ", ""))), 4) end
  return d
end

-- A copy of net on dev: every layer copied by its own :to (which makes new
-- parameters, gradients, state and buffers and leaves the original alone).
local function replica(net, dev)
  local layers = {}
  for i, l in ipairs(net.layers) do
    local c = setmetatable({}, getmetatable(l))
    for k, v in pairs(l) do c[k] = v end
    layers[i] = c:to(dev)
  end
  local r = setmetatable({layers = layers, inputs = net.inputs, outputs = net.outputs, training = net.training},
    getmetatable(net))
  r:_collect()
  return r
end

local DP = {}
DP.__index = DP

-- parallel.replicate(net, devices) → dp: replicas of net on each device of
-- the list (net itself on the first, where it must already be).
function parallel.replicate(net, devices)
  local fn = "parallel.replicate"
  if type(net) ~= "table" or not net.layers or type(net.params) ~= "function" then
    error(fmt("%s: bad argument #1 (a net from nn.sequential expected, got %s)", fn, type(net)), 2)
  end
  if type(devices) ~= "table" or #devices == 0 then
    error(fmt("%s: bad argument #2 (a list of devices expected, such as {\"cpu\", \"vulkan:0\"}, got %s)", fn,
      type(devices)), 2)
  end
  local devs = {}
  for i, d in ipairs(devices) do devs[i] = resolve(fn, d, i) end
  if not rawequal(net:device(), devs[1]) then
    error(fmt("%s: the net is on %s but devices[1] is %s (the first device holds the net: net:to(\"%s\") first)",
      fn, net:device():name(), devs[1]:name(), devs[1]:name()), 2)
  end
  local self = setmetatable({net = net, devices = devs, replicas = {net}, losses = {}, order = {}, buf = {}}, DP)
  for i = 2, #devs do self.replicas[i] = replica(net, devs[i]) end
  -- Queue order: Vulkan devices first (they record and start), the cpu last.
  for i, d in ipairs(devs) do if d:name() ~= "cpu" then self.order[#self.order + 1] = i end end
  for i, d in ipairs(devs) do if d:name() == "cpu" then self.order[#self.order + 1] = i end end
  return self
end

function DP:__tostring()
  local names = {}
  for i, d in ipairs(self.devices) do names[i] = d:name() end
  return fmt("data parallel over %s (%d replicas)", table.concat(names, ", "), #names)
end

-- The loss object of replica i: one per device, made from lossfn's class
-- (a loss keeps buffers on the device it last ran on).
local function loss_for(self, i, lossfn)
  local l = self.losses[i]
  if not l or l.proto ~= lossfn then
    l = {proto = lossfn, fn = i == 1 and lossfn or setmetatable({}, getmetatable(lossfn))}
    self.losses[i] = l
  end
  return l.fn
end

-- dp:split(x, y) → shares {x, y, first, count} per replica: contiguous columns
-- in replica order, copied to the replica's device where it is another.
function DP:split(x, y)
  local n, k, g = x.cols, #self.replicas, self.group or 1
  if n < k * g then
    error(g == 1 and fmt("dp:split: a batch of %d is smaller than the %d devices", n, k)
      or fmt("dp:split: a batch of %d holds %d runs of %d (group), fewer than the %d devices", n, n // g, g, k), 2)
  end
  local shares = {}
  for i, dev in ipairs(self.devices) do
    local first, count = dist.shard(n, i - 1, k, g)
    local xs, ys = x:columns(first, count), y:columns(first, count)
    local moved = not rawequal(x:device(), dev)
    if moved then xs, ys = xs:to(dev), ys:to(dev) end
    shares[i] = {x = xs, y = ys, first = first, count = count, moved = moved}
  end
  return shares
end

-- dp:forward_backward(x, y, lossfn) → z, loss (the whole batch's, on the first
-- device): every replica's forward and backward on its share, then the
-- gradients reduced into the first replica (its gradients become the whole
-- batch's: Σ count_i/n · g_i, in device order).
function DP:forward_backward(x, y, lossfn)
  local shares = self:split(x, y)
  local n = x.cols
  for _, i in ipairs(self.order) do
    local s, r, lf = shares[i], self.replicas[i], loss_for(self, i, lossfn)
    s.z = r:forward(s.x)
    s.loss = lf:forward(s.z, s.y)
    r:backward(lf:backward())
    native.flush(s.z)  -- start this device before queueing the next
  end
  local dev1 = self.devices[1]
  local g1 = self.net:params()
  for _, p in ipairs(g1) do vela.scal(shares[1].count / n, p[2]) end
  for i = 2, #self.replicas do
    local w = shares[i].count / n
    for j, p in ipairs(self.replicas[i]:params()) do
      local g = p[2]
      if not rawequal(self.devices[i], dev1) then g = g:to(dev1) end
      vela.axpy(w, g, g1[j][2])
      if g ~= p[2] then g:release() end
    end
  end
  -- The whole batch's outputs and losses on the first device (nn.fit counts them).
  local z1 = shares[1].z
  local b = self.buf[n]
  if not b then
    b = {z = vela.zeros(z1.rows, n, "float32", dev1), loss = vela.zeros(1, n, "float32", dev1)}
    self.buf[n] = b
  end
  for i, s in ipairs(shares) do
    local z, l = s.z, s.loss
    if not rawequal(self.devices[i], dev1) then z, l = z:to(dev1), l:to(dev1) end
    vela.copy(z, b.z:columns(s.first, s.count))
    vela.copy(l, b.loss:columns(s.first, s.count))
    if s.moved then s.x:release(); s.y:release() end
  end
  return b.z, b.loss
end

-- dp:broadcast(): the first replica's parameters copied into every other.
function DP:broadcast()
  local ps, dev1 = self.net:params(), self.devices[1]
  for i = 2, #self.replicas do
    for j, p in ipairs(self.replicas[i]:params()) do
      if rawequal(self.devices[i], dev1) then
        vela.copy(ps[j][1], p[1])
      else
        local t = ps[j][1]:to(self.devices[i])
        vela.copy(t, p[1])
        t:release()
      end
    end
  end
end

-- dp:step(x, y, lossfn, opt) → z, loss: one training step over every device.
function DP:step(x, y, lossfn, opt)
  local z, loss = self:forward_backward(x, y, lossfn)
  opt:step(self.net:params())
  self:broadcast()
  return z, loss
end

-- dp:hashes() → the parameter hash of each replica (equal: bit-identical).
function DP:hashes()
  local h = {}
  for i, r in ipairs(self.replicas) do h[i] = dist.param_hash(r) end
  return h
end

-- ---------------------------------------------------------------------------
-- nn.fit's hook
-- ---------------------------------------------------------------------------

local Step = {}
Step.__index = Step

-- parallel.fit_step(net, train, opts) → nil when opts has neither devices nor
-- dist, else a step for nn.fit: step:step(x, y, lossfn, opt) → z, y, loss of
-- this rank's share; step.quiet on ranks other than 0.
function parallel.fit_step(net, train, opts)
  if opts.devices == nil and not opts.dist then return nil end
  if opts.dist ~= nil and type(opts.dist) ~= "boolean" then
    error(fmt("nn.fit: dist must be true or false, got %s", type(opts.dist)), 3)
  end
  local self = setmetatable({net = net, views = {}, group = opts.group or 1}, Step)
  if opts.devices ~= nil then
    if type(opts.devices) ~= "table" or #opts.devices == 0 then
      error(fmt("nn.fit: devices must be a list of devices such as {\"cpu\", \"vulkan:0\"}, got %s", type(opts.devices)), 3)
    end
    local ok, dp = pcall(parallel.replicate, net, opts.devices)
    if not ok then error("nn.fit: " .. tostring(dp):gsub("^[^:]*:%d+: ", ""):gsub("^parallel.replicate: ", ""), 3) end
    if not rawequal(train.images:device(), dp.devices[1]) then
      error(fmt("nn.fit: the set is on %s but devices[1] is %s (data.mnist(dir, dev) or set:to(dev) puts it there)",
        train.images:device():name(), dp.devices[1]:name()), 3)
    end
    self.dp = dp
    dp.group = self.group  -- shares of whole sequences
  end
  if opts.dist and dist.size() > 1 then
    self.dist = true
    self.quiet = dist.rank() > 0
    local parts = {}
    for i, p in ipairs(net:params()) do parts[i] = p[1] end
    dist.broadcast(parts, 0)  -- every rank starts from rank 0's weights
    if self.dp then self.dp:broadcast() end
  end
  return self
end

function Step:step(x, y, lossfn, opt, check)
  local n, xs, ys, count = x.cols, x, y, x.cols
  if self.dist then
    local v = self.views[n]
    if not v or not rawequal(v.x, x) or not rawequal(v.y, y) then  -- views made once per batch matrix
      local first, c = dist.shard(n, nil, nil, self.group)
      if c == 0 then
        error(fmt("nn.fit: a batch of %d is smaller than the %d ranks%s", n, dist.size(),
          self.group > 1 and fmt(" (in runs of %d: group)", self.group) or ""), 0)
      end
      v = {x:columns(first, c), y:columns(first, c), c, x = x, y = y}
      self.views[n] = v
    end
    xs, ys, count = v[1], v[2], v[3]
  end
  local z, loss
  if self.dp then
    z, loss = self.dp:forward_backward(xs, ys, lossfn)
  else
    z = self.net:forward(xs)
    loss = lossfn:forward(z, ys)
    self.net:backward(lossfn:backward())
  end
  if check then check(loss) end  -- nn.fit's loss check, before any update
  if self.dist then dist.reduce_grads(self.net, count, n) end
  opt:step(self.net:params())
  if self.dp then self.dp:broadcast() end
  return z, ys, loss
end

if vela.doc then
  vela.doc("parallel.replicate", "parallel.replicate(net, devices) -> dp",
    "Data parallel over the devices of one process: replicas of net (on devices[1]) on every device. dp:step(x, y, lossfn, opt) splits the batch, runs forward and backward on every device (queued on all before waiting on any), sums the gradients into net weighted by each share, steps the optimizer once and copies the weights to every replica (bit-identical: dp:hashes()). The steps one by one: dp:split(x, y), dp:forward_backward(x, y, lossfn), opt:step(net), dp:broadcast(). nn.fit(net, set, {devices = {...}}) trains this way. Example: dp = parallel.replicate(net, {\"cpu\", \"vulkan:0\"}); dp:step(x, y, nn.softmax_xent(), optim.sgd{lr = 0.1})", parallel.replicate)
  vela.doc("dp:step", "dp:step(x, y, lossfn, opt) -> z, loss",
    "One training step over every replica's device; z and loss are the whole batch's, on the first device. Example: dp:step(x, y, nn.softmax_xent(), opt)", DP.step)
  vela.doc("dp:split", "dp:split(x, y) -> shares", "The batch's contiguous shares, one per replica ({x, y, first, count}), copied to each replica's device (dist.shard's rule). Example: dp:split(x, y)[2].count", DP.split)
  vela.doc("dp:forward_backward", "dp:forward_backward(x, y, lossfn) -> z, loss",
    "Forward and backward of every replica on its share (all devices queued before any is waited on), then the gradients summed into the first replica, each weighted by its share. Example: dp:forward_backward(x, y, nn.softmax_xent()); opt:step(net); dp:broadcast()", DP.forward_backward)
  vela.doc("dp:broadcast", "dp:broadcast()", "The first replica's parameters copied into every other replica. Example: dp:broadcast()", DP.broadcast)
  vela.doc("parallel.fit_step", "parallel.fit_step(net, train, opts) -> step or nil",
    "What nn.fit uses for {devices =} and {dist = true}: step:step(x, y, lossfn, opt) -> z, y, loss (this rank's share). nil when opts has neither. Example: parallel.fit_step(net, set, {devices = {\"cpu\", \"cpu\"}})", parallel.fit_step)
  vela.doc("fit_step:step", "step:step(x, y, lossfn, opt [, check]) -> z, y, loss",
    "One step of nn.fit over the devices and ranks: this rank's share forward and backward, check(loss) if given (an error there stops the step before any update), gradients reduced over devices then ranks, one optimizer step, replicas updated. Example: step:step(x, y, nn.softmax_xent(), opt)", Step.step)
  vela.doc("dp:hashes", "dp:hashes() -> {hex, ...}", "dist.param_hash of every replica: all equal when the replicas are bit-identical. Example: dp:hashes()", DP.hashes)
end

return parallel

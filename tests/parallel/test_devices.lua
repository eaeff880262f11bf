-- Data parallel over the devices of one process (lua/vela/parallel.lua): the
-- cpu and every usable Vulkan device (scripts/test.sh's pass 3 shows lavapipe
-- and SwiftShader at once; VELA_TEST_DRIVERS=a,b there requires both). After
-- every one of 50 steps the replicas' parameters hash the same; the loss after
-- 50 steps is within the stated bound of one cpu's training on the whole
-- batch (docs/dist.md); nn.fit{devices =} trains the same way; bad lists are
-- errors that name the problem.
local t = dofile("tests/lua/t.lua")
local vela = require "vela"
local nn, optim, data = require "vela.nn", require "vela.optim", require "vela.data"
local parallel = require "vela.parallel"

-- The bounds measured (docs/dist.md): one device split in equal shares, and
-- cpu + lavapipe + SwiftShader, each against the cpu on the whole batch.
local SAME_DEVICE_BOUND, MIXED_BOUND = 1e-6, 1e-4

local devs = {"cpu"}
for _, d in ipairs(vela.devices()) do
  if d.usable and d.id ~= "cpu" then devs[#devs + 1] = d.id end
end
local want = os.getenv("VELA_TEST_DRIVERS")
if want and want:find(",") then
  local n = select(2, want:gsub(",", ",")) + 1
  assert(#devs - 1 >= n, ("VELA_TEST_DRIVERS=%s names %d drivers but %d Vulkan devices are usable"):format(want, n, #devs - 1))
end

vela.device("cpu")
local sets = data.mnist()
local train = data.subset(sets.train, 1, 3000)

local function mlp()
  vela.device("cpu")
  return nn.sequential{nn.linear(784, 64, "relu", {seed = 5}), nn.linear(64, 10, nil, {seed = 6})}
end

-- 50 steps of batch 60 (an equal split in 2 or 3); the mean loss of step 50.
local function train50(devices)
  local net = mlp()
  local dp = devices and parallel.replicate(net, devices)
  local lossfn, opt = nn.softmax_xent(), optim.sgd{lr = 0.05, momentum = 0.9}
  local loader = data.loader(train, 60, {seed = 3})
  local step, last = 0, nil
  for x, y in loader:epoch(1) do
    step = step + 1
    local loss
    if dp then
      _, loss = dp:step(x, y, lossfn, opt)
      local h = dp:hashes()
      for i = 2, #h do
        assert(h[i] == h[1], ("step %d: replica %d (%s) differs from replica 1: %s vs %s"):format(
          step, i, dp.devices[i]:name(), h[i], h[1]))
      end
    else
      loss = lossfn:forward(net:forward(x), y)
      net:backward(lossfn:backward())
      opt:step(net)
    end
    if step == 50 then last = vela.sum(loss) / #loss break end
  end
  return last, net
end

local single = train50(nil)

t.test("cpu split in two: replicas bit-identical, loss within " .. SAME_DEVICE_BOUND, function()
  local l = train50({"cpu", "cpu"})
  print(("parallel: cpu×2 loss after 50 steps %.9g, one cpu %.9g, difference %.3g"):format(l, single, math.abs(l - single)))
  t.near(l, single, SAME_DEVICE_BOUND, "loss after 50 steps")
end)

t.test(table.concat(devs, " + ") .. ": replicas bit-identical, loss within " .. MIXED_BOUND, function()
  if #devs < 2 then return end
  local l = train50(devs)
  print(("parallel: %s loss after 50 steps %.9g, one cpu %.9g, difference %.3g"):format(
    table.concat(devs, "+"), l, single, math.abs(l - single)))
  t.near(l, single, MIXED_BOUND, "loss after 50 steps")
end)

t.test("nn.fit{devices =}: trains as one device does", function()
  local small = data.subset(sets.train, 1, 600)
  local a = nn.fit(mlp(), small, {epochs = 1, batch = 60, progress = false, devices = devs})
  local b = nn.fit(mlp(), small, {epochs = 1, batch = 60, progress = false})
  t.near(a.loss[1], b.loss[1], MIXED_BOUND, "epoch loss")
  assert(math.abs(a.train_accuracy[1] - b.train_accuracy[1]) <= 0.01, "train accuracy")
end)

t.test("bad device lists are errors naming the problem", function()
  local net = mlp()
  t.raises(function() parallel.replicate(net, {}) end, "parallel.replicate", "#2", "list of devices")
  t.raises(function() parallel.replicate(net, {"cpu", "vulkan:99"}) end, "devices[2]")
  t.raises(function() parallel.replicate(net, {"cpu", 3}) end, "devices[2] must be a device")
  if #devs > 1 then
    t.raises(function() parallel.replicate(net, {devs[2], "cpu"}) end, "the net is on cpu but devices[1] is")
    t.raises(function() nn.fit(net, train, {devices = {devs[2]}, progress = false}) end, "nn.fit", "devices[1]")
  end
  t.raises(function() nn.fit(net, train, {devices = "cpu", progress = false}) end, "nn.fit: devices must be a list")
  local dp = parallel.replicate(net, {"cpu", "cpu"})
  t.raises(function() dp:split(vela.zeros(784, 1), vela.zeros(1, 1)) end, "smaller than the 2 devices")
  assert(tostring(dp):find("data parallel over cpu, cpu"), tostring(dp))
end)

t.test("every function of vela.dist and vela.parallel is documented", function()
  local dist = require "vela.dist"
  local missing = {}
  local function check(prefix, tbl)
    for k, v in pairs(tbl) do
      if type(v) == "function" and not k:match("^_") and not vela.doc(v) then missing[#missing + 1] = prefix .. k end
    end
  end
  check("dist.", dist)
  check("parallel.", parallel)
  local dp = parallel.replicate(mlp(), {"cpu"})
  check("dp:", getmetatable(dp))
  check("step:", getmetatable(parallel.fit_step(mlp(), train, {devices = {"cpu"}})))
  assert(#missing == 0, "undocumented: " .. table.concat(missing, ", "))
end)

t.done()

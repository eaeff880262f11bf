-- The same seed on the cpu and on every Vulkan device: identical initial
-- weights, the loss after 100 identical steps within 1e-3 relative, test
-- accuracy within 0.2 points, and no host wait inside a training step on a
-- Vulkan device (the loss stays on the device). A small net and subset keep
-- it short; examples/compare_devices.lua does the full-size run.
local t = dofile("tests/lua/t.lua")
local nn, optim, data = require "vela.nn", require "vela.optim", require "vela.data"

local others = {}
for _, d in ipairs(devices()) do
  if d.usable and d.id ~= "cpu" then others[#others + 1] = d.id end
end

local function run(id)
  device(id)
  local sets = data.mnist()
  local train, test = data.subset(sets.train, 1, 2000), data.subset(sets.test, 1, 500)
  local net = nn.sequential{nn.linear(784, 64, "relu", {seed = 5}), nn.linear(64, 10, nil, {seed = 6})}
  local w0 = net.layers[1].w:to("cpu")
  local lossfn, opt = nn.softmax_xent(), optim.sgd{lr = 0.05, momentum = 0.9}
  local loader = data.loader(train, 32, {seed = 3})
  local step, e, loss100, waits = 0, 0, nil, 0
  while step < 100 do
    e = e + 1
    for x, y in loader:epoch(e) do
      step = step + 1
      -- From an idle device, so a full ring of command buffers (the host
      -- running ahead of a slow device, throttled) does not count.
      if step % 10 == 0 then sync() end
      local before = stats().host_waits
      local l = lossfn:forward(net:forward(x), y)
      net:backward(lossfn:backward())
      opt:step(net)
      if step % 10 == 0 then waits = waits + stats().host_waits - before end
      if step == 100 then loss100 = sum(l) / #l break end
    end
  end
  -- Device memory in use before and after 20 more steps (one epoch boundary
  -- included): the steps reuse every buffer.
  sync()
  local used0 = mem(device()).used
  local more = 0
  for x, y in loader:epoch(e + 1) do
    lossfn:forward(net:forward(x), y); net:backward(lossfn:backward()); opt:step(net)
    more = more + 1
    if more == 20 then break end
  end
  sync()
  local grown = mem(device()).used - used0
  return {w0 = w0, loss = loss100, acc = nn.evaluate(net, test), waits = waits, grown = grown}
end

if #others == 0 then
  t.test("only the cpu is present: nothing to compare", function() end)
end

local ref = #others > 0 and run("cpu")
for _, id in ipairs(others) do
  local r = run(id)
  t.test(id .. ": identical initial weights", function()
    t.near(nrm2(r.w0 - ref.w0), 0, 0, "‖W₁(" .. id .. ") − W₁(cpu)‖")
  end)
  t.test(id .. ": loss after 100 steps within 1e-3 relative of the cpu", function()
    t.near(r.loss, ref.loss, 1e-3, "loss at step 100")
  end)
  t.test(id .. ": test accuracy within 0.2 points of the cpu", function()
    assert(math.abs(r.acc - ref.acc) <= 0.002, ("%.4f vs %.4f"):format(r.acc, ref.acc))
  end)
  t.test(id .. ": training steps allocate no device memory", function()
    t.near(r.grown, 0, 0, "bytes of device memory gained over 20 steps")
  end)
  t.test(id .. ": a training step never waits for the device", function()
    t.near(r.waits, 0, 0, "host waits in 10 steps each started on an idle device")
  end)
end

t.done()

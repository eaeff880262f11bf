-- compare_devices.lua — one seed, the same 784-256-10 MLP trained on the cpu
-- and on vulkan:0 (or any devices named): the initial weights compared
-- (Philox by seed: identical on every device), the loss after 100 steps of
-- identical batches, then a table of time per epoch and test accuracy.
--
--   build/vela examples/compare_devices.lua [epochs=3] [devices=cpu,vulkan:0,vulkan:1] [batch=128]
local vela = require "vela"
local nn, optim, data = require "vela.nn", require "vela.optim", require "vela.data"

local opts = require("vela.options").parse(arg,
  "build/vela examples/compare_devices.lua [epochs=3] [devices=cpu,vulkan:0] [batch=128]", {
  {"epochs", 3, "epochs to train on each device", min = 1},
  {"devices", "cpu,vulkan:0", "the devices to compare, comma separated"},
  {"device", nil, "compare the cpu with this one device (devices=cpu,DEVICE)"},
  {"batch", 128, "batch size"},
  {"seed", 1, "seed of the weights and the shuffle"},
})
if opts.device then opts.devices = "cpu," .. opts.device end
local devs = {}
for d in tostring(opts.devices):gmatch("[^,]+") do
  if pcall(vela.device, d) then devs[#devs + 1] = d else print("skipping " .. d .. ": not available") end
end

local function build()
  return nn.sequential{nn.linear(784, 256, "relu", {seed = opts.seed}), nn.linear(256, 10, nil, {seed = opts.seed + 1})}
end

-- Host copy of a matrix as one flat list.
local function flat(m)
  local out = {}
  for _, r in ipairs(m:to("cpu"):totable()) do for _, v in ipairs(r) do out[#out + 1] = v end end
  return out
end

local results = {}
for _, id in ipairs(devs) do
  vela.device(id)
  local sets = data.mnist()
  local r = {id = id}
  -- Fidelity: initial weights, and the loss of step 100.
  local net = build()
  r.w1 = flat(net.layers[1].w)
  local lossfn, opt = nn.softmax_xent(), optim.sgd{lr = 0.05, momentum = 0.9}
  local loader = data.loader(sets.train, opts.batch, {seed = opts.seed})
  local step, e = 0, 0
  local waits0
  while step < 100 do
    e = e + 1
    for x, y in loader:epoch(e) do
      step = step + 1
      if step == 100 then vela.sync(); waits0 = vela.stats().host_waits end
      local l = lossfn:forward(net:forward(x), y)
      net:backward(lossfn:backward())
      opt:step(net)
      if step == 100 then
        r.step_waits = vela.stats().host_waits - waits0   -- host waits inside one training step
        r.loss100 = vela.sum(l) / #l
        break
      end
    end
  end
  -- Time per epoch and accuracy, from a fresh net with the same seed.
  print(("\n%s: training %d epochs"):format(id, opts.epochs))
  r.hist = nn.fit(build(), sets.train, {epochs = opts.epochs, batch = opts.batch, seed = opts.seed,
                                       test = sets.test, optimizer = optim.sgd{lr = 0.05, momentum = 0.9}})
  results[#results + 1] = r
end

print()
local head = {("%-6s"):format("epoch")}
for _, r in ipairs(results) do head[#head + 1] = ("%20s"):format(r.id .. " s / test") end
print(table.concat(head, "  "))
for e = 1, opts.epochs do
  local cells = {("%-6d"):format(e)}
  for _, r in ipairs(results) do
    cells[#cells + 1] = ("%11.2f / %5.2f%%"):format(r.hist.seconds[e], 100 * r.hist.test_accuracy[e])
  end
  print(table.concat(cells, "  "))
end
for _, r in ipairs(results) do
  print(("%s: loss at step 100 %.6f, host waits in a step %d"):format(r.id, r.loss100, r.step_waits))
end
-- Every device against the first (cpu, vulkan:0, vulkan:1: two lines).
if #results >= 2 then print() end
for k = 2, #results do
  local a, b = results[1], results[k]
  local dw = 0
  for i = 1, #a.w1 do dw = math.max(dw, math.abs(a.w1[i] - b.w1[i])) end
  local rel = math.abs(a.loss100 - b.loss100) / math.abs(a.loss100)
  local da = 100 * math.abs(a.hist.test_accuracy[opts.epochs] - b.hist.test_accuracy[opts.epochs])
  print(("%s vs %s: initial weights max |Δ| = %g; loss at step 100 differs by %.2e relative; "
    .. "final test accuracy differs by %.2f points"):format(a.id, b.id, dw, rel, da))
end

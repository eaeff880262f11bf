-- Fills the disk caches with the kernels a training step uses, so that the
-- next process's first step on a Vulkan device finds them compiled: one step
-- (forward, loss, backward, SGD with momentum) of the examples' 784-256-10
-- MLP at batch 128, and an evaluation batch of 1,000, on each usable Vulkan
-- device. lavapipe keeps what LLVM compiled in Mesa's shader cache
-- ($XDG_CACHE_HOME/mesa_shader_cache); SwiftShader keeps nothing on disk, so
-- there it only shows the time. Prints each device's seconds (wall, cpu).
--
--   build/vela scripts/warm_cache.lua [vulkan:0 ...]
-- A training run's products start on the 2×4 register block that stands in
-- for the one chosen for them, which is made once they have run 2^27
-- multiply-adds (docs/vulkan.md, first use): the step runs twice, here and
-- in a child with VELA_MM_STAND_IN=0, so that both kinds of block are compiled
-- (with VELA_MM_STAND_IN set, only the pass it asks for).
if not os.getenv("VELA_MM_STAND_IN") then
  local args = {}
  for i = 1, #arg do args[#args + 1] = ("%q"):format(arg[i]) end
  if not os.execute(("VELA_MM_STAND_IN=0 %q %q %s"):format(arg[-1], arg[0], table.concat(args, " "))) then
    os.exit(1)
  end
end
local blocks = os.getenv("VELA_MM_STAND_IN") == "0" and "chosen blocks" or "first-use blocks"
local vela = require "vela"
local nn, optim = require "vela.nn", require "vela.optim"
local ids = {}
for i = 1, #arg do ids[#ids + 1] = arg[i] end
if #ids == 0 then
  ids = require("vela.bench_native").devices()
  table.remove(ids, 1)  -- "cpu": nothing to compile
end
for _, id in ipairs(ids) do
  local d = vela.device(id)
  local w0, c0 = vela.clock(), os.clock()
  local net = nn.sequential{nn.linear(784, 256, "relu", {seed = 1}), nn.linear(256, 10, nil, {seed = 2})}:to(d)
  local opt = optim.sgd{lr = 0.05, momentum = 0.9}
  local lossfn = nn.softmax_xent()
  for _, n in ipairs{128, 1000} do
    local x = vela.rand(784, n, 1, d)
    local labels = {}
    for j = 1, n do labels[j] = j % 10 + 1 end
    local y = vela.matrix(1, n, labels):to(d)
    local l = lossfn:forward(net:forward(x), y)
    if n == 128 then
      net:backward(lossfn:backward())
      opt:step(net)
    end
    vela.sum(l)
  end
  print(string.format("%-10s a training step's kernels ready (%s): %.2f s wall, %.2f s cpu", id, blocks,
    vela.clock() - w0, os.clock() - c0))
end

-- Data-parallel training across ranks (CTest: mpi.identity, mpirun -np 2):
-- after every step the hash of all parameters is the same on every rank (an
-- MLP and a small CNN, on the cpu and vulkan:0, or on the devices that
-- VELA_MPI_DEVICES names); the parameters after 20 steps match one process's training on the
-- whole batch within float32 rounding (the gradient average is right); and
-- nn.fit{dist = true} trains, returns the same history on every rank and
-- leaves bit-identical parameters, also with each rank over two devices; a
-- checkpoint from rank 0 loads the same on every rank and resumes in step.
local t = dofile("tests/lua/t.lua")
local vela = require "vela"
local nn, optim, data = require "vela.nn", require "vela.optim", require "vela.data"
local dist = require "vela.dist"
local parallel = require "vela.parallel"

-- The hash as four 16-bit integers (exact in float32); max and −max over the
-- ranks equal to our own on every rank means every rank has the same hash.
local function same_everywhere(hex)
  local parts = {}
  for k = 1, 4 do parts[k] = tonumber(hex:sub(4 * k - 3, 4 * k), 16) end
  local hi = vela.matrix(1, 4, parts, "float32", "cpu")
  local lo = vela.matrix(1, 4, {-parts[1], -parts[2], -parts[3], -parts[4]}, "float32", "cpu")
  dist.allreduce(hi, "max")
  dist.allreduce(lo, "max")
  for k = 1, 4 do
    if hi:get(1, k) ~= parts[k] or -lo:get(1, k) ~= parts[k] then return false end
  end
  return true
end

-- A synthetic set: 256 float images of 64 pixels (8×8), labels 1..10, on dev.
local function synthetic(dev)
  local images = vela.rand(vela.zeros(64, 256, "float32", dev), 11)
  local u = vela.rand(vela.zeros(1, 256, "float32", "cpu"), 12):totable()[1]
  local labels = {}
  for j = 1, 256 do labels[j] = math.floor(u[j] * 10) + 1 end
  return {images = images, labels = vela.matrix(1, 256, labels, "float32", dev), n = 256, height = 8, width = 8}
end

-- A temporary file name chosen on rank 0 and sent to every rank.
local function rank_zero_path()
  local name = dist.rank() == 0 and os.tmpname() or ""
  os.remove(name)  -- os.tmpname creates the file; nn.save writes its own
  local codes = {}
  for k = 1, 64 do codes[k] = name:byte(k) or 0 end
  local m = vela.matrix(1, 64, codes, "float32", "cpu")
  dist.broadcast(m, 0)
  local chars = {}
  for _, c in ipairs(m:totable()[1]) do if c > 0 then chars[#chars + 1] = string.char(math.tointeger(c)) end end
  return table.concat(chars) .. ".npz"
end

local nets = {
  mlp = function(dev)
    vela.device(dev)
    return nn.sequential{nn.linear(64, 32, "relu", {seed = 1}), nn.linear(32, 10, nil, {seed = 2})}
  end,
  cnn = function(dev)
    vela.device(dev)
    return nn.sequential{nn.conv2d(1, 4, 3, {activation = "relu", input = {h = 8, w = 8}, seed = 3}),
      nn.maxpool2d(2), nn.flatten(), nn.linear(4 * 3 * 3, 10, nil, {seed = 4})}
  end,
}

local devs = {}
if os.getenv("VELA_MPI_DEVICES") then
  for d in os.getenv("VELA_MPI_DEVICES"):gmatch("[^,]+") do devs[#devs + 1] = d end
else
  -- The cpu and vulkan:0 (scripts/test.sh: lavapipe in pass 1, SwiftShader in pass 2).
  devs[1] = "cpu"
  for _, d in ipairs(vela.devices()) do
    if d.usable and d.id == "vulkan:0" then devs[#devs + 1] = d.id end
  end
end

for _, dev in ipairs(devs) do
  for _, kind in ipairs{"mlp", "cnn"} do
    t.test(dev .. " " .. kind .. ": bit-identical parameters on every rank after every step", function()
      local set = synthetic(dev)
      local net = nets[kind](dev)
      local ref = nets[kind](dev)  -- the one-process reference, trained on whole batches
      local opt, ref_opt = optim.sgd{lr = 0.1, momentum = 0.9}, optim.sgd{lr = 0.1, momentum = 0.9}
      local lossfn, ref_loss = nn.softmax_xent(), nn.softmax_xent()
      local step = parallel.fit_step(net, set, {dist = true})
      local loader = data.loader(set, 32, {seed = 5})
      local steps = 0
      for e = 1, 3 do
        for x, y in loader:epoch(e) do
          if step then step:step(x, y, lossfn, opt) else
            lossfn:forward(net:forward(x), y); net:backward(lossfn:backward()); opt:step(net)
          end
          ref_loss:forward(ref:forward(x), y); ref:backward(ref_loss:backward()); ref_opt:step(ref)
          steps = steps + 1
          local h = dist.param_hash(net)
          assert(same_everywhere(h), ("the ranks' parameters differ after step %d (rank %d: %s)"):format(steps, dist.rank(), h))
          if steps == 20 then break end
        end
        if steps == 20 then break end
      end
      -- The gradient average equals the whole batch's gradient up to rounding.
      local worst = 0
      for i, p in ipairs(net:params()) do
        local a, b = p[1]:to("cpu"):totable(), ref:params()[i][1]:to("cpu"):totable()
        for r = 1, #a do for c = 1, #a[r] do worst = math.max(worst, math.abs(a[r][c] - b[r][c])) end end
      end
      print(("rank %d, %s %s: largest parameter difference from one process after 20 steps %.3g"):format(dist.rank(), dev, kind, worst))
      assert(worst < 1e-4, ("after 20 steps the parameters differ from one process's by %.3g (bound 1e-4)"):format(worst))
    end)
  end
end

t.test("nn.fit{dist = true}: the same history and parameters on every rank", function()
  local set = synthetic("cpu")
  local net = nets.mlp("cpu")
  local hist = nn.fit(net, set, {epochs = 2, batch = 32, dist = true, progress = false, seed = 7})
  assert(same_everywhere(dist.param_hash(net)), "parameters differ between ranks after nn.fit")
  assert(hist.loss[2] == hist.loss[2] and hist.loss[2] < hist.loss[1] + 0.5, "nn.fit trained")
  t.raises(function() nn.fit(net, set, {dist = "yes", progress = false}) end, "nn.fit: dist must be true or false")
end)

t.test("a checkpoint written by rank 0 loads bit-identically on every rank, and training resumes in step", function()
  local set = synthetic("cpu")
  local net, opt = nets.mlp("cpu"), optim.sgd{lr = 0.1, momentum = 0.9}
  nn.fit(net, set, {epochs = 1, batch = 32, dist = true, progress = false, optimizer = opt, seed = 4})
  -- One path for every rank: rank 0 names it, the others receive it (as 1×k character codes).
  local path = rank_zero_path()
  if dist.rank() == 0 then nn.save(path, net, opt, {epoch = 1}) end
  dist.barrier()
  local back, opt2 = nn.load(path, "cpu")
  assert(dist.param_hash(back) == dist.param_hash(net), "the loaded parameters differ from the saved ones")
  assert(same_everywhere(dist.param_hash(back)), "ranks loaded different parameters")
  nn.fit(back, set, {epochs = 2, start = 2, batch = 32, dist = true, progress = false, optimizer = opt2, seed = 4})
  nn.fit(net, set, {epochs = 2, start = 2, batch = 32, dist = true, progress = false, optimizer = opt, seed = 4})
  assert(dist.param_hash(back) == dist.param_hash(net), "the resumed run differs from the uninterrupted one")
  dist.barrier()
  if dist.rank() == 0 then os.remove(path) end
end)

t.test("both levels: two ranks, each over two devices", function()
  local two = {"cpu", devs[2] or "cpu"}
  local set = synthetic("cpu")
  local net = nets.mlp("cpu")
  local hist = nn.fit(net, set, {epochs = 1, batch = 32, dist = true, devices = two, progress = false, seed = 9})
  assert(same_everywhere(dist.param_hash(net)), "parameters differ between ranks")
  assert(hist.loss[1] == hist.loss[1], "the loss is a number")
end)

t.done()

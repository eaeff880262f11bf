-- Checkpoints: nn.save(path, net, opt, extra) then nn.load(path, dev) and one
-- more step gives the loss the uninterrupted run gives at that step, for SGD
-- with momentum and for Adam (whose step count matters), on the cpu and on
-- each Vulkan device, and saved on one device, resumed on another. Also: a
-- file of the older net:save format (built here byte by byte) still loads,
-- and bad files are errors naming the file.
local t = dofile("tests/lua/t.lua")
local nn, optim = require "vela.nn", require "vela.optim"

local ids = t.devices()
device("cpu")
local dir = os.tmpname()
os.remove(dir)
assert(os.execute("mkdir -p " .. dir))

local labels = {{1, 2, 3, 4, 1, 2, 3, 4, 2, 3}}
local function make_opt(kind)
  if kind == "sgd" then return optim.sgd{lr = 0.1, momentum = 0.9} end
  return optim.adam{lr = 0.01}
end

-- k steps on a fixed batch; returns the loss of each step.
local function train(net, opt, dev, k)
  local x, y = rand(6, 10, 11):to(dev), from(labels):to(dev)
  local lf, losses = nn.softmax_xent(), {}
  for i = 1, k do
    losses[i] = nn.mean(lf:forward(net:forward(x), y))
    net:backward(lf:backward())
    opt:step(net)
  end
  return losses
end

local function fresh(dev)
  return nn.sequential{nn.linear(6, 5, "tanh", {seed = 3, device = dev}), nn.linear(5, 4, nil, {seed = 4, device = dev})}
end

for _, kind in ipairs{"sgd", "adam"} do
  for _, from_id in ipairs(ids) do
    -- The uninterrupted run: 8 steps.
    local ref = train(fresh(from_id), make_opt(kind), from_id, 8)
    -- The same run stopped after 5 steps and saved (the seed sequence moved on by a draw).
    local net, opt = fresh(from_id), make_opt(kind)
    train(net, opt, from_id, 5)
    seed(77)
    local drawn = rand(1, 1)
    local path = dir .. "/" .. kind .. ".npz"
    nn.save(path, net, opt, {epoch = 5, tag = kind, nested = {1, 2}})
    local after_save = rand(1, 1):get(1, 1)
    for _, to_id in ipairs(ids) do
      t.test(kind .. ": saved on " .. from_id .. ", resumed on " .. to_id .. " with the same next losses", function()
        local net2, opt2, extra = nn.load(path, to_id)
        assert(device():name() == "cpu", "nn.load(path, dev) leaves the current device alone")
        assert(tostring(net2):find("on " .. to_id, 1, true), tostring(net2))
        assert(extra.epoch == 5 and extra.tag == kind and extra.nested[2] == 2)
        assert(opt2.name == kind and opt2.steps == 5, tostring(opt2.steps))
        -- The seed sequence is where it was at the save.
        t.near(rand(1, 1):get(1, 1), after_save, 0, "next rand after load")
        local more = train(net2, opt2, to_id, 3)
        local tol = from_id == to_id and 1e-6 or 1e-4
        for i = 1, 3 do t.near(more[i], ref[5 + i], tol, ("loss of step %d"):format(5 + i)) end
      end)
    end
    assert(drawn)
  end
end

-- nn.fit stopped after epoch 1, saved, loaded elsewhere and resumed with
-- start = 2 ends with the losses of the run that never stopped.
local data = require "vela.data"
local sets = data.mnist()
for _, to_id in ipairs(ids) do
  t.test("nn.fit resumed on " .. to_id .. " from a checkpoint gives the uninterrupted losses", function()
    device("cpu")
    local train = data.subset(sets.train, 1, 400)
    local function fresh_net() return nn.sequential{nn.linear(784, 16, "relu", {seed = 1}), nn.linear(16, 10, nil, {seed = 2})} end
    local fit_opts = function(opt, e, start) return {epochs = e, start = start, batch = 100, optimizer = opt,
      schedule = optim.step_lr(0.1, 1, 0.5), progress = false} end
    local ref = nn.fit(fresh_net(), train, fit_opts(optim.sgd{lr = 0.1, momentum = 0.9}, 3))
    local net, opt = fresh_net(), optim.sgd{lr = 0.1, momentum = 0.9}
    nn.fit(net, train, fit_opts(opt, 1))
    nn.save(dir .. "/fit.npz", net, opt, {epoch = 1})
    local net2, opt2, extra = nn.load(dir .. "/fit.npz", to_id)
    local moved = data.to({train = train}, to_id).train
    local rest = nn.fit(net2, moved, fit_opts(opt2, 3, extra.epoch + 1))
    for e = 2, 3 do t.near(rest.loss[e], ref.loss[e], to_id == "cpu" and 1e-6 or 1e-4, "loss of epoch " .. e) end
    assert(rest.lr[3] == ref.lr[3])
  end)
end

t.test("net:save files of format 1 (VELANN) still load", function()
  -- 2→1 identity layer, W = (0.5, -2), b = 0.25, written by hand.
  local s = "VELANN\r\n" .. string.pack("<I4I4", 1, 1) .. string.pack("<I4I4I4I4", 1, 2, 1, 0)
    .. string.pack("<fff", 0.5, -2, 0.25) .. "VELAEND\n"
  local path = dir .. "/old.vela"
  local f = assert(io.open(path, "wb")) f:write(s) f:close()
  local net = nn.load(path)
  local out = net:forward(from{{2}, {1}})
  t.near(out:get(1, 1), 0.5 * 2 - 2 * 1 + 0.25, 0, "old net output")
end)

t.test("bad checkpoints are errors naming the file; a failed save keeps the old file", function()
  local net, opt = fresh("cpu"), make_opt("sgd")
  local path = dir .. "/c.npz"
  nn.save(path, net, opt)
  local good = assert(io.open(path, "rb")):read("a")
  local function write(bytes) t.write_file(path, bytes) end
  write(good:sub(1, #good // 2))
  t.raises(function() nn.load(path) end, "nn.load", path, "not a vela net or checkpoint")
  write("garbage")
  t.raises(function() nn.load(path) end, "nn.load", path, "not a vela net or checkpoint")
  vela.save(path, {w = zeros(2, 2)})
  t.raises(function() nn.load(path) end, path, "without a vela_checkpoint")
  write(good)
  t.raises(function() nn.save(path, net, opt, {f = print}) end, "nn.save", "extra.f is a function")
  t.raises(function() nn.save(path, {}, opt) end, "nn.save", "net must be")
  t.raises(function() nn.save(dir .. "/none/x.npz", net, opt) end, "nn.save", "none/x.npz", "create")
  assert(assert(io.open(path, "rb")):read("a") == good, "the old checkpoint is intact")
  local back = nn.load(path)
  assert(back.layers[2].outputs == 4)
end)

os.execute("rm -rf " .. dir)
t.done()

-- nn and optim: layers, errors, optimizers against hand-computed updates,
-- schedules, save/load, moving between devices, and a short training run on
-- a small subset of MNIST (the full 10-epoch runs are examples, not tests).
local t = dofile("tests/lua/t.lua")
local nn, optim, data = require "vela.nn", require "vela.optim", require "vela.data"

local ids = t.devices()

local host = t.host

local function max_diff(a, b)
  local ha, hb, d = host(a), host(b), 0
  for i = 1, #ha do for j = 1, #ha[i] do d = math.max(d, math.abs(ha[i][j] - hb[i][j])) end end
  return d
end

for _, id in ipairs(ids) do
  device(id)

  t.test(id .. ": linear initialises by seed, He and Xavier scales", function()
    local a = nn.linear(300, 200, "relu", {seed = 7})
    local b = nn.linear(300, 200, "relu", {seed = 7})
    local c = nn.linear(300, 200, "relu", {seed = 8})
    t.near(max_diff(a.w, b.w), 0, 0, "same seed, same weights")
    assert(max_diff(a.w, c.w) > 0.01, "another seed gives other weights")
    -- The sample standard deviation of 60,000 weights is within 2% of the scale.
    local n = 300 * 200
    t.near(nrm2(a.w) / math.sqrt(n), math.sqrt(2 / 300), 0.02, "He: √(2/inputs)")
    local x = nn.linear(300, 200, "tanh", {seed = 7})
    t.near(nrm2(x.w) / math.sqrt(n), math.sqrt(2 / 500), 0.02, "Xavier: √(2/(inputs+outputs))")
    t.near(asum(a.b), 0, 0, "biases start at zero")
  end)

  t.test(id .. ": forward is act(W·x + b), checked by hand", function()
    local l = nn.linear(2, 2, "relu", {seed = 1})
    copy(from{{1, -2}, {0.5, 1}}, l.w)
    copy(from{0.5, -1}, l.b)
    local a = l:forward(from{{1, 2}, {3, -1}})
    -- z = W·x + b = [[1-6+0.5, 2+2+0.5], [0.5+3-1, 1-1-1]] = [[-4.5, 4.5], [2.5, -1]]
    local h = host(a)
    t.near(h[1][1], 0, 0); t.near(h[1][2], 4.5, 1e-6); t.near(h[2][1], 2.5, 1e-6); t.near(h[2][2], 0, 0)
  end)

  t.test(id .. ": buffers are reused from batch to batch", function()
    local net = nn.sequential{nn.linear(4, 3, "relu", {seed = 1}), nn.linear(3, 2, nil, {seed = 2})}
    local x = rand(4, 5, 1)
    local y1 = net:forward(x)
    local y2 = net:forward(rand(4, 5, 2))
    assert(rawequal(y1, y2), "the same output matrix for the same batch size")
    local small = net:forward(rand(4, 3, 3))
    t.near(small.cols, 3, 0, "a smaller batch is a view")
  end)

  t.test(id .. ": wrong sizes are errors naming the layer", function()
    local net = nn.sequential{nn.linear(4, 3, "relu", {seed = 1}), nn.linear(3, 2, nil, {seed = 2})}
    t.raises(function() net:forward(rand(5, 2, 1)) end, "layer 1", "linear(4→3, relu)", "5×2", "takes 4 rows")
    t.raises(function() nn.sequential{nn.linear(4, 3), nn.linear(2, 2)} end,
      "layer 2", "takes 2 inputs", "layer 1", "gives 3 outputs")
    t.raises(function() nn.linear(4, 3, "swish") end, "unknown activation 'swish'")
    local lossfn = nn.softmax_xent()
    t.raises(function() lossfn:forward(net:forward(rand(4, 2, 1)), from{{1, 2, 3}}) end,
      "nn.softmax_xent", "1×3", "2 columns")
    t.raises(function() lossfn:forward(net:forward(rand(4, 2, 1)), from{{11, 1}}) end,
      "nn.softmax_xent: labels at position 1 is not a class index (an integer in 1..2)")
    t.raises(function() nn.quadratic():forward(net:forward(rand(4, 2, 1)), from{{1, 0}}) end,
      "nn.quadratic: labels at position 2 is not a class index (an integer in 1..2)")
    -- The net survives and still works.
    t.near(net:forward(rand(4, 2, 1)).cols, 2, 0)
  end)

  t.test(id .. ": sgd, momentum and adam match hand-computed updates", function()
    local w0, g = {1, -2, 3}, {0.5, 0.25, -1}
    local function param()
      local w, gm = from(w0), from(g)
      return {{w, gm, {}}}, w
    end
    -- sgd: w − lr·g
    local ps, w = param()
    optim.sgd{lr = 0.1}:step(ps)
    for i = 1, 3 do t.near(w:get(i), w0[i] - 0.1 * g[i], 1e-6, "sgd") end
    -- momentum, two steps with the same g: v1 = g, v2 = g + 0.9·g
    ps, w = param()
    local m = optim.momentum{lr = 0.1, momentum = 0.9}
    m:step(ps); m:step(ps)
    for i = 1, 3 do t.near(w:get(i), w0[i] - 0.1 * g[i] - 0.1 * 1.9 * g[i], 1e-6, "momentum") end
    -- adam, two steps, float64 reference of the textbook form
    ps, w = param()
    local a = optim.adam{lr = 0.01}
    a:step(ps); a:step(ps)
    for i = 1, 3 do
      local mm_, vv, x = 0, 0, w0[i]
      for step = 1, 2 do
        mm_ = 0.9 * mm_ + 0.1 * g[i]
        vv = 0.999 * vv + 0.001 * g[i] ^ 2
        x = x - 0.01 * (mm_ / (1 - 0.9 ^ step)) / (math.sqrt(vv / (1 - 0.999 ^ step)) + 1e-8)
      end
      t.near(w:get(i), x, 1e-6, "adam")
    end
  end)

  t.test(id .. ": save and load round-trip; bad files are clear errors", function()
    local net = nn.sequential{nn.linear(6, 5, "tanh", {seed = 3}), nn.linear(5, 4, "sigmoid", {seed = 4})}
    local path = os.tmpname()
    net:save(path)
    local back = nn.load(path)
    local x = rand(6, 3, 9)
    t.near(max_diff(net:forward(x), back:forward(x)), 0, 0, "identical outputs")
    assert(tostring(back):find("linear(5→4, sigmoid)", 1, true), tostring(back))
    local f = io.open(path, "rb"); local s = f:read("a"); f:close()
    local function write(bytes) local g = io.open(path, "wb"); g:write(bytes); g:close() end
    write("PK\3\4" .. s:sub(5))
    t.raises(function() nn.load(path) end, path, "not a vela net")
    write(s:sub(1, 8) .. string.pack("<I4", 99) .. s:sub(13))
    t.raises(function() nn.load(path) end, "format version 99", "reads version 1")
    write(s:sub(1, #s - 20))
    t.raises(function() nn.load(path) end, path, "truncated")
    write(s .. "x")
    t.raises(function() nn.load(path) end, "trailing")
    os.remove(path)
    t.raises(function() nn.load(path) end, "nn.load")
  end)
end

t.test("schedules", function()
  local s = optim.step_lr(0.1, 3, 0.5)
  t.near(s(1), 0.1); t.near(s(3), 0.1); t.near(s(4), 0.05); t.near(s(7), 0.025)
  local c = optim.cosine(0.1, 5, 0.01)
  t.near(c(1), 0.1); t.near(c(5), 0.01); t.near(c(3), 0.055)
end)

t.test("net:to moves parameters, gradients and optimizer state, and back", function()
  device("cpu")
  local net = nn.sequential{nn.linear(4, 3, "relu", {seed = 1}), nn.linear(3, 2, nil, {seed = 2})}
  local opt = optim.momentum{lr = 0.1}
  local x, y = rand(4, 5, 1), from{{1, 2, 1, 2, 1}}
  local lossfn = nn.softmax_xent()
  lossfn:forward(net:forward(x), y); net:backward(lossfn:backward()); opt:step(net)
  local target = ids[#ids]  -- vulkan:0 where present, else the cpu itself
  local w_before = net.layers[1].w:copy()
  net:to(target)
  assert(tostring(net.layers[1].w:device()):find(target, 1, true), "weights moved")
  assert(tostring(net:params()[1][3].v:device()):find(target, 1, true), "momentum moved")
  -- Carry on there: data must be moved too, and mixing is an error naming the layer.
  if target ~= "cpu" then
    t.raises(function() net:forward(x) end, "layer 1", "input is on cpu", "layer is on " .. target)
  end
  local xd, yd = x:to(target), y:to(target)
  lossfn:forward(net:forward(xd), yd); net:backward(lossfn:backward()); opt:step(net)
  net:to("cpu")
  assert(max_diff(net.layers[1].w, w_before) > 0, "a step was taken")
end)

t.test("fit trains a small MNIST subset; evaluate, predict and confusion agree", function()
  device("cpu")
  local sets = data.mnist()
  local train, test = data.subset(sets.train, 1, 1000), data.subset(sets.test, 1, 500)
  local net = nn.sequential{nn.linear(784, 32, "relu", {seed = 1}), nn.linear(32, 10, nil, {seed = 2})}
  local h = nn.fit(net, train, {epochs = 3, batch = 50, test = test, progress = false,
                                optimizer = optim.sgd{lr = 0.1, momentum = 0.9}})
  assert(#h.loss == 3 and #h.test_accuracy == 3 and #h.seconds == 3, "one entry per epoch")
  assert(h.loss[3] < h.loss[1], ("the loss falls: %g then %g"):format(h.loss[1], h.loss[3]))
  assert(h.test_accuracy[3] > 0.75, "test accuracy " .. h.test_accuracy[3])
  local acc = nn.evaluate(net, test)
  t.near(acc, h.test_accuracy[3], 1e-12, "evaluate")
  -- predict against a host argmax of the outputs, and confusion's diagonal.
  local pred = host(nn.predict(net, test))[1]
  local counts = nn.confusion(net, test, true)
  local right, total = 0, 0
  for i = 1, 10 do for j = 1, 10 do total = total + counts[i][j] end right = right + counts[i][i] end
  t.near(total, 500, 0); t.near(right / 500, acc, 1e-12, "confusion diagonal")
  local labels = host(test.labels)[1]
  local r = 0
  for s = 1, 500 do if pred[s] == labels[s] then r = r + 1 end end
  t.near(r / 500, acc, 1e-12, "predict")
end)

t.test("fit with the quadratic loss and adam also learns", function()
  device("cpu")
  local sets = data.mnist()
  local train = data.subset(sets.train, 1, 600)
  local net = nn.sequential{nn.linear(784, 32, "sigmoid", {seed = 1}), nn.linear(32, 10, "sigmoid", {seed = 2})}
  local h = nn.fit(net, train, {epochs = 3, batch = 30, loss = "quadratic", progress = false,
                                optimizer = optim.adam{lr = 0.01}})
  assert(h.loss[3] < h.loss[1] and h.train_accuracy[3] > 0.6, ("loss %g → %g, accuracy %g"):format(h.loss[1], h.loss[3], h.train_accuracy[3]))
end)

t.done()

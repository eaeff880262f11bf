-- The layer base (lua/vela/layer.lua): every kind of layer has layer:to,
-- layer:params, layer:train / layer:eval and layer(x) from one class, and a
-- layer's optimizer state moves with it between devices (the state of
-- nn.layernorm and nn.embedding stayed on the old device before the base).
local t = dofile("tests/lua/t.lua")
local nn, optim = require "vela.nn", require "vela.optim"
device("cpu")  -- the inputs below are made on the current device; a GPU machine starts on its GPU

-- One of each kind with an input it takes (columns: samples or tokens).
local function kinds(dev)
  local opts = {device = dev, seed = 3}
  return {
    {nn.linear(6, 4, "tanh", opts), rand(6, 5, 1)},
    {nn.conv2d(1, 2, 3, {input = 4, device = dev, seed = 3}), rand(16, 3, 2)},
    {nn.maxpool2d(2, {input = {c = 1, h = 4, w = 4}, device = dev}), rand(16, 3, 3)},
    {nn.avgpool2d(2, {input = {c = 1, h = 4, w = 4}, device = dev}), rand(16, 3, 4)},
    {nn.flatten({device = dev}), rand(7, 2, 5)},
    {nn.dropout(0.5, opts), rand(6, 5, 6)},
    {nn.batchnorm(6, {device = dev}), rand(6, 5, 7)},
    {nn.layernorm(6, {device = dev}), rand(6, 5, 8)},
    {nn.embedding(9, 4, opts), from{{1, 9, 3, 3}}},
  }
end

t.test("every kind of layer: layer(x) is layer:forward(x); to, params, train, eval return what they say", function()
  for _, k in ipairs(kinds("cpu")) do
    local l, x = k[1], k[2]
    local name = tostring(l)
    assert(type(l:params()) == "table", name .. ": params")
    assert(rawequal(l:to("cpu"), l), name .. ": to returns the layer")
    assert(rawequal(l:train(), l) and rawequal(l:eval(), l), name .. ": train/eval return the layer")
    l:train()
    local a = l:forward(x):to("cpu"):totable()
    local b = l(x):to("cpu"):totable()
    if l.p == nil then  -- a dropout draws a new mask each training forward
      for i = 1, #a do for j = 1, #a[1] do assert(a[i][j] == b[i][j], name .. ": layer(x) ~= layer:forward(x)") end end
    else
      assert(#b == #a and #b[1] == #a[1], name .. ": layer(x) has the forward's shape")
    end
  end
end)

t.test("layer:train switches the mode of the layers that have one, and only theirs", function()
  local d, bn, lin = nn.dropout(0.5), nn.batchnorm(4), nn.linear(4, 4)
  assert(d.training == true and bn.training == true)
  d:eval(); bn:eval(); lin:eval()
  assert(d.training == false and bn.training == false, "eval")
  assert(lin.training == nil, "a linear layer has no mode")
  d:train(); bn:train(false)
  assert(d.training == true and bn.training == false, "train(on)")
  -- evaluation: dropout passes x itself
  local x = rand(4, 3, 1)
  d:eval()
  assert(rawequal(d:forward(x), x), "dropout in evaluation returns x")
end)

t.test("the classes share the base's methods", function()
  assert(nn.Linear.to == nn.Conv2d.to and nn.Conv2d.to == nn.LayerNorm.to and nn.Dropout.to == nn.Embedding.to)
  assert(nn.Linear.train == nn.BatchNorm.train and nn.Pool.params == nn.Flatten.params)
  t.raises(function() return nn.Linear(784, 10) end, "nn.Linear: vela spells it nn.linear(inputs, outputs")
  t.raises(function() return nn.Sequential() end, "nn.Sequential: vela spells it nn.sequential{layer, ...}")
  t.raises(function() return nn.ReLU() end, "nn.ReLU: activations are an argument of the layer")
end)

local vk
for _, d in ipairs(devices()) do
  if d.usable and d.id ~= "cpu" then vk = vk or d.id end
end

if vk then
  t.test("every layer with parameters moves its optimizer state with it (cpu → " .. vk .. ")", function()
    device("cpu")
    for _, k in ipairs(kinds("cpu")) do
      local l, x = k[1], k[2]
      if #l:params() > 0 then
        local name = tostring(l)
        local opt = optim.adam{lr = 0.01}
        local y = l:forward(x)
        l:backward(fill(zeros(y.rows, y.cols), 0.5), false)
        opt:step(l:params())
        local before = {}
        for i, p in ipairs(l:params()) do
          before[i] = {}
          for key, m in pairs(p[3]) do
            if type(m) ~= "number" then before[i][key] = m:to("cpu"):totable() end
          end
        end
        l:to(vk)
        for i, p in ipairs(l:params()) do
          assert(p[1]:device():name() == l.dev:name() and p[2]:device():name() == l.dev:name(), name .. ": parameter")
          local n = 0
          for key, m in pairs(p[3]) do
            if type(m) ~= "number" then
              n = n + 1
              assert(rawequal(m:device(), l.dev), string.format("%s: state %s.%s stayed on %s", name, p.name, key, m:device():name()))
              local h, want = m:to("cpu"):totable(), before[i][key]
              for r = 1, #want do for c = 1, #want[1] do assert(h[r][c] == want[r][c], name .. ": state value") end end
            end
          end
          assert(n > 0, name .. ": Adam keeps state")
        end
        -- and a step on the new device runs
        local xv = x:to(vk)
        local yv = l:forward(xv)
        l:backward(fill(zeros(yv.rows, yv.cols, "float32", l.dev), 0.5), false)
        opt:step(l:params())
        sync()
      end
    end
  end)
end

t.done()

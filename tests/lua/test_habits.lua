-- What a Torch7, PyTorch or NumPy user types first (issue 25): option tables
-- of nn, data, train, conv and the layers checked key by key; net(x);
-- nn.predict on a matrix; set:to(dev); nn.summary; the small surprises
-- (a trailing nil, a printed nil, a loss's backward before its forward).
-- Results are checked against hand-computed values, never the code under test.
local t = dofile("tests/lua/t.lua")
local nn, data, optim = require "vela.nn", require "vela.data", require "vela.optim"

local function nres(...) return select("#", ...) end

-- A tiny net whose outputs are known: W picks rows, so argmax is the row of the largest input.
local function picker()
  local l = nn.linear(3, 3, "identity", {seed = 1})
  vela.copy(from{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, l.w)
  vela.fill(l.b, 0)
  return nn.sequential{l}
end

t.test("unknown options name the function, the key, the nearest and the list", function()
  t.raises(function() nn.linear(3, 2, "relu", {sed = 1}) end,
    "nn.linear: unknown option 'sed' (did you mean 'seed'?); options: seed, init, device, f, df, name")
  t.raises(function() nn.conv2d(1, 2, 3, {strides = 2}) end,
    "nn.conv2d: unknown option 'strides' (did you mean 'stride'?); options: stride, pad, activation, input")
  t.raises(function() nn.maxpool2d(2, {padding = 1}) end, "nn.maxpool2d: unknown option 'padding' (did you mean 'pad'?)")
  t.raises(function() nn.maxpool2d(2, 2, {inptu = 28}) end, "nn.maxpool2d: unknown option 'inptu' (did you mean 'input'?)")
  t.raises(function() nn.flatten{dev = "cpu"} end, "nn.flatten: unknown option 'dev' (did you mean 'device'?); options: device")
  t.raises(function() nn.dropout(0.5, {sead = 2}) end, "nn.dropout: unknown option 'sead' (did you mean 'seed'?)")
  t.raises(function() nn.batchnorm(4, {epsilon = 1e-3}) end,
    "nn.batchnorm: unknown option 'epsilon' (did you mean 'eps'?)", "(epsilon is Torch7's name for eps)")
  t.raises(function() nn.gradcheck(picker(), ones(3, 2), {tolerance = 1}) end, "nn.gradcheck: unknown option 'tolerance'")
  local set = {images = ones(3, 4), labels = ones(1, 4), n = 4}
  t.raises(function() data.loader(set, 2, {suffle = false}) end,
    "data.loader: unknown option 'suffle' (did you mean 'shuffle'?); options: seed, shuffle, scale, shift, height, width")
  t.raises(function() data.batches(set, 2, {epochs = 1}) end, "data.batches: unknown option 'epochs' (did you mean 'epoch'?)")
  -- the issue's own example: epoch and batchsize silently trained 10 epochs at batch 128
  local err = t.raises(function() nn.fit(picker(), set, {epoch = 1, batchsize = 32}) end,
    "nn.fit: unknown option '", "options: epochs, batch, optimizer")
  assert(err:find("'epoch' (did you mean 'epochs'?)", 1, true) or err:find("'batchsize' (did you mean 'batch'?)", 1, true), err)
  t.raises(function() nn.fit(picker(), set, {batchSize = 2}) end, "(batchSize is Torch7's name for batch)")
  t.raises(function() nn.evaluate(picker(), set, {bacth = 2}) end,
    "nn.evaluate: unknown option 'bacth' (did you mean 'batch'?); options: batch, loss")
  t.raises(function() nn.fit(picker(), set, 3) end, "nn.fit: opts must be a table of options {epochs = ...}, got a number")
  t.raises(function() nn.fit(picker(), set, {epochs = 0}) end, "nn.fit: epochs must be a positive integer, got 0")
  -- the accepted keys still work
  local d = data.loader(set, 2, {seed = 3, shuffle = false})
  assert(d.batch == 2)
end)

t.test("net(x) is net:forward(x); layer(x) too", function()
  local net = picker()
  local x = from{{1, 5}, {3, 2}, {2, 9}}
  assert(rawequal(net(x), net:forward(x)))
  local got = net(x):totable()
  assert(got[1][2] == 5 and got[3][2] == 9, "the identity net gives x back")
  local l = nn.linear(3, 1, "identity", {seed = 2})
  assert(l(x).rows == 1)
  assert(nn.flatten()(x) ~= nil)
end)

t.test("nn.predict on a matrix: 1-based class indices; a bad batch is an error", function()
  local net = picker()
  local x = from{{1, 5, 0}, {3, 2, 0}, {2, 9, 7}}   -- largest rows: 2, 3, 3
  local p = nn.predict(net, x):totable()[1]
  assert(p[1] == 2 and p[2] == 3 and p[3] == 3, table.concat(p, " "))
  local p2 = nn.predict(net, {images = x, n = 3}, 2):totable()[1]
  assert(p2[1] == 2 and p2[3] == 3)
  t.raises(function() nn.predict(net, "x") end, "nn.predict: images must be a matrix (one sample per column) or a set")
  t.raises(function() nn.predict(net, x, 0) end, "nn.predict: batch must be a positive integer, got 0")
end)

t.test("nn.evaluate returns one value without a loss, two with", function()
  local net = picker()
  local set = {images = from{{1, 5}, {3, 2}, {2, 9}}, labels = from{{2, 3}}, n = 2}
  assert(nres(nn.evaluate(net, set)) == 1)
  local acc, loss = nn.evaluate(net, set, {loss = nn.softmax_xent()})
  assert(acc == 1, acc)
  assert(type(loss) == "number")
end)

t.test("layer:backward(da, false) returns nothing; a loss's backward before forward is an error", function()
  for _, l in ipairs{nn.linear(3, 2, "relu", {seed = 1}), nn.dropout(0.5)} do
    if l.bind then l:bind(3) end
    local out = l:forward(ones(3, 2))
    assert(nres(l:backward(ones(out.rows, 2), false)) == 0, tostring(l))
  end
  t.raises(function() nn.softmax_xent():backward() end, "nn.softmax_xent: backward before forward")
  t.raises(function() nn.quadratic():backward() end, "nn.quadratic: backward before forward")
  local q = nn.quadratic()
  q:forward(from{{1}, {0}}, from{{1}})
  assert(q:backward() ~= nil)
end)

t.test("nn.confusion's table fits 80 columns with ten named classes", function()
  local net = nn.sequential{nn.linear(3, 10, "identity", {seed = 4})}
  local labels = {}
  for j = 1, 20 do labels[j] = (j - 1) % 10 + 1 end
  local set = {images = rand(3, 20, 5), labels = matrix(1, 20, labels), n = 20, classes = data.fashion_classes}
  local text = tostring(nn.confusion(net, set))
  for line in text:gmatch("[^\n]+") do assert(utf8.len(line) <= 80, ("%d columns: %s"):format(utf8.len(line), line)) end
  assert(text:find("T-shi", 1, true) and text:find("Ankle", 1, true), text)
end)

t.test("nn.fit's history prints in lines of at most 80 columns", function()
  local set = {images = from{{1, 5}, {3, 2}, {2, 9}}, labels = from{{2, 3}}, n = 2}
  local out = io.open(os.tmpname(), "w")
  local h = nn.fit(picker(), set, {epochs = 10, batch = 2, progress = false, test = set, output = out})
  out:close()
  local text = tostring(h)
  assert(text:find("history of 10 epochs (1..10)", 1, true), text)
  for line in text:gmatch("[^\n]+") do assert(utf8.len(line) <= 80, line) end
end)

t.test("set:to(dev) and data.to copy a set; the original stays", function()
  local set = data.subset({images = from{{1, 2, 3}}, labels = from{{1, 2, 1}}, n = 3}, 1, 3)
  local c = set:to("cpu")
  assert(c ~= set and c.n == 3 and c.images:get(1, 3) == 3 and c.labels:get(1, 2) == 2)
  assert(c.images:device():name() == "cpu")
  assert(getmetatable(c) == data.Set and type(c.to) == "function")
  local both = data.to({train = set, test = set, name = "x"}, "cpu")
  assert(both.train.images:get(1, 2) == 2 and both.name == "x")
  t.raises(function() set:to() end, "set:to: expected a device or a device name")
  t.raises(function() set:to("nosuch:3") end, "set:to:")
end)

t.test("nn.summary: the layers, shapes per sample, parameter counts, devices", function()
  local net = nn.sequential{nn.conv2d(1, 8, 5, {activation = "relu", input = 28}), nn.maxpool2d(2), nn.flatten(),
    nn.linear(8 * 12 * 12, 10)}
  local s = net:summary()
  -- by hand: conv 8·(1·5·5) + 8 = 208; linear 1152·10 + 10 = 11,530
  assert(s[1].params == 208 and s[2].params == 0 and s[4].params == 11530 and s.params == 11738)
  assert(s[1].output == "8×24×24" and s[1].rows == 4608 and s[2].output == "8×12×12" and s[4].output == "10")
  assert(s[1].device == device():name())
  local text = tostring(s)
  for _, part in ipairs{"conv2d(1→8, 5×5, relu)", "8×24×24 = 4608", "11,530", "total", "11,738"} do
    assert(text:find(part, 1, true), part .. " missing from\n" .. text)
  end
  for line in text:gmatch("[^\n]+") do assert(utf8.len(line) <= 80, "wider than 80: " .. line) end
  assert(tostring(nn.summary(net, 64)):find("rows × 64)", 1, true))
  t.raises(function() nn.summary(ones(2, 2)) end, "nn.summary: net must be a net")
  t.raises(function() net:summary(0) end, "nn.summary: batch must be a positive integer")
end)

t.test("vela.save: an empty table and an unknown extension are refused", function()
  local dir = os.tmpname()
  os.remove(dir)
  os.execute("mkdir -p " .. dir)
  t.raises(function() vela.save(dir .. "/e.npz", {}) end, "save: '" .. dir .. "/e.npz': the table is empty")
  t.raises(function() vela.save(dir .. "/x.txt", ones(2, 2)) end,
    "save: '" .. dir .. "/x.txt': a matrix is written as NumPy .npy")
  assert(not io.open(dir .. "/x.txt", "rb"), "nothing written")
  os.execute("rm -rf " .. dir)
end)

-- A set on one device and the net on another: the error names set:to and data.to.
local other
for _, d in ipairs(devices()) do if d.usable and d.id ~= "cpu" then other = d.id break end end
if other then
  t.test("trace counts the download inside sum(l); profile rows say a transfer's direction", function()
    device(other)
    local l = ones(1, 100)
    local r = trace(function() return sum(l) end)
    assert(#r == 1 and r[1].downloads == 1 and r[1].download_bytes >= 4, tostring(r))
    local a = rand(10, 10, 1)
    local p = profile(function() return a:to("cpu") end)
    local dir
    for _, row in ipairs(p) do if row.kernel == "download" and row.device == other then dir = row.direction end end
    assert(dir == other .. " → host", tostring(p))
    assert(tostring(p):find(other .. " → host", 1, true))
    device("cpu")
  end)

  t.test("a set on another device than the net names set:to and data.to", function()
    local net = picker():to(other)
    local set = {images = ones(3, 2, "float32", "cpu"), labels = ones(1, 2, "float32", "cpu"), n = 2}
    t.raises(function() nn.fit(net, set, {epochs = 1, batch = 2, progress = false}) end,
      "nn.fit: the set is on cpu but the net is on " .. other, "set:to('" .. other .. "')", "data.to(sets, '")
    t.raises(function() nn.evaluate(net, set) end, "nn.evaluate: the set is on cpu")
    t.raises(function() nn.predict(net, set.images) end, "nn.predict: the images are on cpu", "x:to('" .. other .. "')")
  end)
end

t.done()

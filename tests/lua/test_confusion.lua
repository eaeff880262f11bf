-- nn.confusion from predictions: nn.fit keeps the predicted classes of its
-- last test evaluation (hist.test_predictions), and nn.confusion(pred, set)
-- tabulates them without another pass over the set, so the examples' final
-- accuracy and confusion table come from one pass. References: counts made
-- by hand, and the argmax of the net's outputs taken on the host.
local t = dofile("tests/lua/t.lua")
local nn, optim = require "vela.nn", require "vela.optim"

local ids = t.devices()

local host = t.host

-- A set of n samples of 4 features whose class is 1 + the index of the
-- largest of the first three (a linear net learns most of it).
local function make_set(n, seed, dev)
  local images = rand(4, n, seed, dev)
  local x = host(images)
  local labels = {}
  for j = 1, n do
    local best = 1
    for i = 2, 3 do if x[i][j] > x[best][j] then best = i end end
    labels[j] = best
  end
  return {images = images, labels = matrix(1, n, labels, "float32", dev), n = n}
end

t.test("nn.confusion(pred, set) counts hand-made predictions", function()
  device("cpu")
  local set = {images = zeros(2, 5), labels = from{{1, 2, 3, 3, 1}}, n = 5}
  local c = nn.confusion(from{{1, 2, 2, 3, 3}}, set)
  local want = {{1, 0, 1}, {0, 1, 0}, {0, 1, 1}}
  assert(#c == 3, "3 classes (the largest index), got " .. #c)
  for i = 1, 3 do for j = 1, 3 do
    assert(c[i][j] == want[i][j], ("counts[%d][%d] = %d, expected %d"):format(i, j, c[i][j], want[i][j]))
  end end
  assert(tostring(c):find("overall 60.00% of 5", 1, true), tostring(c))
  -- the set's class names fix the number of classes
  set.classes = {"a", "b", "c", "d"}
  c = nn.confusion(from{{1, 2, 2, 3, 3}}, set)
  assert(#c == 4 and c[4][4] == 0 and c[3][2] == 1)
  -- wrong shapes and values are errors naming the function and what was expected
  t.raises(function() nn.confusion(from{{1, 2, 3}}, set) end, "nn.confusion:", "1×3", "5 samples", "1×5")
  t.raises(function() nn.confusion(from{{1, 2.5, 3, 3, 1}}, set) end, "nn.confusion:", "position 2", "2.5")
  t.raises(function() nn.confusion(from{{1, 2, 3, 5, 1}}, set) end, "nn.confusion:", "position 4", "1..4")
  t.raises(function() nn.confusion(from{{1, 2, 3, 3, 1}}, from{{1}}) end, "nn.confusion:", "expected a set")
  set.classes = nil
  set.labels = from{{1, 2, 0, 3, 1}}
  t.raises(function() nn.confusion(from{{1, 2, 3, 3, 1}}, set) end, "nn.confusion:", "labels at position 3")
end)

for _, id in ipairs(ids) do
  t.test(id .. ": nn.fit keeps its last test pass's predictions; the table from them needs no other pass", function()
    device(id)
    local train, test = make_set(600, 1, id), make_set(2100, 2, id)  -- 3 evaluation batches: 1000, 1000, 100
    local net = nn.sequential{nn.linear(4, 3, nil, {seed = 3, device = id})}
    local forwards = 0
    local forward = net.forward
    net.forward = function(self, x) forwards = forwards + 1 return forward(self, x) end
    local h = nn.fit(net, train, {epochs = 2, batch = 50, test = test, progress = false,
                                  optimizer = optim.sgd{lr = 0.5, momentum = 0.9}})
    assert(forwards == 2 * 12 + 2 * 3, "fit's forwards: " .. forwards)
    local pred = h.test_predictions
    assert(pred and pred.rows == 1 and pred.cols == 2100, "hist.test_predictions is 1×2100")
    -- the predictions are the argmax of the trained net's outputs, taken here on the host
    local z = host(forward(net, test.images))
    local p = host(pred)[1]
    for j = 1, 2100 do
      local best = 1
      for i = 2, 3 do if z[i][j] > z[best][j] then best = i end end
      assert(p[j] == best, ("sample %d: predicted %s, the outputs' argmax is %d"):format(j, tostring(p[j]), best))
    end
    forwards = 0
    local c = nn.confusion(pred, test)
    assert(forwards == 0, "nn.confusion(pred, set) ran the net " .. forwards .. " times")
    local labels = host(test.labels)[1]
    local right, want = 0, {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}}
    for j = 1, 2100 do want[labels[j]][p[j]] = want[labels[j]][p[j]] + 1 end
    for i = 1, 3 do
      right = right + c[i][i]
      for j = 1, 3 do assert(c[i][j] == want[i][j], ("counts[%d][%d]"):format(i, j)) end
    end
    -- the table's accuracy is the history's last test accuracy: the same pass
    t.near(right / 2100, h.test_accuracy[2], 1e-12, "confusion diagonal against hist.test_accuracy")
    assert(h.test_accuracy[2] > 0.8, "the net learned: " .. h.test_accuracy[2])
  end)
end

t.done()

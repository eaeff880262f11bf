-- Convolutional layers and kernels from Lua on every device: im2col, col2im,
-- maxpool and avgpool through their Lua bindings against float64 loops
-- written here; nn.conv2d, nn.maxpool2d, nn.avgpool2d and nn.flatten through
-- nn.gradcheck (float64 central differences) within 1e-3; image shapes in
-- nn.sequential and their errors; net:to, checkpoints (nn.save/nn.load), a
-- seeded 50-step SGD run whose losses agree across devices within 1e-4, and
-- nn.fit / nn.evaluate.
local t = dofile("tests/lua/t.lua")
local nn, optim = require "vela.nn", require "vela.optim"

local ids = t.devices()

local host = t.host

local values = t.values  -- deterministic float32 values in [-2, 2)

local function close(got, want, tol, what)
  for i = 1, #want do
    for j = 1, #want[i] do
      local g, w = got[i][j], want[i][j]
      assert(math.abs(g - w) <= tol * math.max(1, math.abs(w)),
        ("%s: (%d, %d) is %.9g, want %.9g"):format(what, i, j, g, w))
    end
  end
end

-- ---- the kernels from Lua ---------------------------------------------------

-- Pixel (c, y, x) (0-based) of column j of a host image table, 0 outside.
local function px(x, g, j, c, y, xx)
  if y < 0 or y >= g.h or xx < 0 or xx >= g.w then return 0 end
  return x[(c * g.h + y) * g.w + xx + 1][j]
end

for _, id in ipairs(ids) do
  device(id)
  t.test(id .. ": im2col and col2im from Lua against float64 loops (k, stride, pad as {h, w})", function()
    local g = {c = 2, h = 5, w = 6, k = {3, 2}, stride = {2, 1}, pad = {1, 0}}
    local n, kh, kw, sh, sw, ph, pw = 3, 3, 2, 2, 1, 1, 0
    local oh, ow = (g.h + 2 * ph - kh) // sh + 1, (g.w + 2 * pw - kw) // sw + 1
    local X = values(g.c * g.h * g.w, n, 7)
    local x = from(X)
    local cols = zeros(g.c * kh * kw, oh * ow * n)
    im2col(x, cols, g)
    local want = {}
    for c = 0, g.c - 1 do
      for ky = 0, kh - 1 do
        for kx = 0, kw - 1 do
          local row = {}
          for j = 1, n do
            for oy = 0, oh - 1 do
              for ox = 0, ow - 1 do
                row[(j - 1) * oh * ow + oy * ow + ox + 1] = px(X, g, j, c, oy * sh - ph + ky, ox * sw - pw + kx)
              end
            end
          end
          want[(c * kh + ky) * kw + kx + 1] = row
        end
      end
    end
    close(host(cols), want, 0, "im2col")
    -- col2im is im2col's adjoint: <im2col(x), C> = <x, col2im(C)> for any C.
    local C = values(g.c * kh * kw, oh * ow * n, 9)
    local back = col2im(from(C), zeros(g.c * g.h * g.w, n), g)
    local lhs, rhs, B = 0, 0, host(back)
    for i = 1, #C do for j = 1, #C[1] do lhs = lhs + want[i][j] * C[i][j] end end
    for i = 1, #X do for j = 1, n do rhs = rhs + X[i][j] * B[i][j] end end
    t.near(rhs, lhs, 1e-5, "adjoint")
  end)

  t.test(id .. ": maxpool and avgpool from Lua against float64 loops; stride defaults to k", function()
    local g = {c = 3, h = 6, w = 6, k = 2}
    local X = values(108, 2, 3)
    local x = from(X)
    local y, idx = maxpool(x, zeros(27, 2), zeros(27, 2), g)
    local a = avgpool(x, zeros(27, 2), g)
    local Y, I, A = host(y), host(idx), host(a)
    for c = 0, 2 do
      for oy = 0, 2 do
        for ox = 0, 2 do
          local o = (c * 3 + oy) * 3 + ox + 1
          for j = 1, 2 do
            local m, at, s = -math.huge, nil, 0
            for ky = 0, 1 do
              for kx = 0, 1 do
                local r = (c * 6 + 2 * oy + ky) * 6 + 2 * ox + kx + 1
                s = s + X[r][j]
                if X[r][j] > m then m, at = X[r][j], r end
              end
            end
            t.near(Y[o][j], m, 1e-6, "max")
            assert(I[o][j] == at, ("idx (%d, %d) is %g, want %d"):format(o, j, I[o][j], at))
            t.near(A[o][j], s / 4, 1e-6, "average")
          end
        end
      end
    end
  end)
end
device("cpu")

t.test("conv kernels: geometry errors name the function and the field", function()
  local x = zeros(16, 2)
  t.raises(function() im2col(x, zeros(9, 8), {h = 4, w = 4}) end, "im2col: the geometry has no 'k'")
  t.raises(function() im2col(x, zeros(9, 8), {h = 4, w = 4, k = 3, size = 2}) end, "im2col: the geometry has an unknown field 'size'")
  t.raises(function() maxpool(x, zeros(4, 2), zeros(4, 2), {h = 4, w = 4, k = 2.5}) end,
    "maxpool: geometry field 'k' must be an integer or {height, width}")
  t.raises(function() avgpool(x, zeros(4, 2), {h = 4, w = 4, k = {2, 2, 2}}) end, "avgpool: geometry field 'k' must be {height, width}")
  t.raises(function() im2col(x, zeros(9, 8), 3) end, "im2col: argument #3 must be the geometry")
  t.raises(function() im2col(zeros(15, 2), zeros(9, 8), {h = 4, w = 4, k = 3}) end, "im2col: x is 15×2 but must have 16 rows")
  t.raises(function() to_images(zeros(6, 2), zeros(7, 2)) end, "to_images: y is 7×2")
end)

-- ---- the layers through nn.gradcheck ---------------------------------------

local function gradcheck_ok(what, net, x)
  local r = nn.gradcheck(net, x, {entries = 24})
  assert(r.ok, what .. "\n" .. tostring(r))
  assert(r.worst <= 1e-3, what)
end

for _, id in ipairs(ids) do
  device(id)
  t.test(id .. ": nn.conv2d's backward agrees with float64 central differences (strides, padding, activations)", function()
    local cases = {
      {1, 3, 3, {activation = "relu", input = 6}, 36},
      {2, 3, {3, 2}, {stride = {2, 1}, pad = {1, 0}, activation = "tanh", input = {h = 5, w = 6}}, 60},
      {3, 2, 2, {stride = 2, activation = "gelu", input = {h = 4, w = 4}}, 48},
      {2, 4, 1, {input = {h = 3, w = 3}}, 18},
    }
    for k, c in ipairs(cases) do
      local layer = nn.conv2d(c[1], c[2], c[3], c[4])
      local x = randn(c[5], 3, 10 + k)
      gradcheck_ok(tostring(layer), layer, x)
    end
  end)

  t.test(id .. ": nn.maxpool2d, nn.avgpool2d and a LeNet-like net agree with float64 central differences", function()
    gradcheck_ok("maxpool", nn.maxpool2d(2, {input = {c = 2, h = 6, w = 6}}), randn(72, 3, 21))
    gradcheck_ok("maxpool stride 1, pad 1", nn.maxpool2d(3, 1, {pad = 1, input = {c = 1, h = 5, w = 4}}), randn(20, 2, 22))
    gradcheck_ok("avgpool pad", nn.avgpool2d({2, 3}, {1, 2}, {pad = {1, 1}, input = {c = 2, h = 4, w = 5}}), randn(40, 2, 23))
    local net = nn.sequential{
      nn.conv2d(1, 3, 3, {activation = "relu", input = 8, seed = 1}),
      nn.maxpool2d(2),
      nn.conv2d(3, 4, 2, {activation = "tanh", pad = 1, seed = 2}),
      nn.avgpool2d(2),
      nn.flatten(),
      nn.linear(16, 3, {seed = 3}),
    }
    gradcheck_ok(tostring(net), net, randn(64, 4, 24))
    -- net:backward, where the max pool applies the first conv's relu′, gives the same bits
    dofile("tests/lua/helpers/pool_act.lua")(net, randn(64, 4, 24), randn(3, 4, 25), tostring(net))
  end)
end
device("cpu")

-- On the cpu a batch of 28×28 images goes through the convolution in parts
-- of a few samples (its cols stays in the cache): the batch's dW and db must
-- be the sums of the per-sample ones, and dx and the output the per-sample ones.
for _, id in ipairs(ids) do
  device(id)
  t.test(id .. ": nn.conv2d on a batch equals the sum of its samples (parts of the batch on the cpu)", function()
    local layer = nn.conv2d(2, 3, 5, {activation = "tanh", pad = 1, input = 28, seed = 4})
    local n = 20
    local X = values(2 * 28 * 28, n, 31)
    local x, dy = from(X), randn(layer.outputs, n, 32)
    local a = host(layer:forward(x))
    local dx = host(layer:backward(dy))
    local dw, db = host(layer.dw), host(layer.db)
    -- sa: the sum of the samples' |dW|, the scale of the float32 rounding in a sum
    -- whose order differs (an H100 differed by 1.2e-4 on a weight of 0.06)
    local sw, sb, sa = {}, {}, {}
    for i = 1, #dw do sw[i], sa[i] = {}, {} for k = 1, #dw[1] do sw[i][k], sa[i][k] = 0, 0 end sb[i] = {0} end
    for j = 1, n do
      local xj, dyj = x:columns(j, 1), dy:columns(j, 1)
      local aj = host(layer:forward(xj))
      local dxj = host(layer:backward(dyj))
      for i = 1, #aj do t.near(aj[i][1], a[i][j], 1e-5, "output") end
      for i = 1, #dxj do t.near(dxj[i][1], dx[i][j], 1e-4, "dx") end
      local w1, b1 = host(layer.dw), host(layer.db)
      for i = 1, #w1 do
        for k = 1, #w1[1] do sw[i][k], sa[i][k] = sw[i][k] + w1[i][k], sa[i][k] + math.abs(w1[i][k]) end
        sb[i][1] = sb[i][1] + b1[i][1]
      end
    end
    for i = 1, #dw do
      for k = 1, #dw[1] do
        assert(math.abs(dw[i][k] - sw[i][k]) <= 1e-5 * math.max(1, sa[i][k]),
          ("dW: (%d, %d) is %.9g, want %.9g (scale %.3g)"):format(i, k, dw[i][k], sw[i][k], sa[i][k]))
      end
    end
    close(db, sb, 1e-4, "db")
  end)
end
device("cpu")

-- In evaluation mode the cpu keeps no windows for a backward: every part
-- reuses one part's (see Conv2d:_cols_at). The output must be the training
-- mode's, and a backward after such a forward (which makes the windows again)
-- must give the training mode's gradients; the training path itself is held to
-- the per-sample sums above and to nn.gradcheck.
for _, id in ipairs(ids) do
  device(id)
  t.test(id .. ": nn.conv2d in evaluation mode gives the training mode's output, and its gradients after a backward", function()
    for _, spec in ipairs{{2, 3, 5, {activation = "tanh", pad = 1, input = 28, seed = 5}},   -- windows stored by row
                          {4, 3, 3, {activation = "relu", input = {h = 20, w = 5}, seed = 6}}} do  -- by column
      local layer = nn.conv2d(spec[1], spec[2], spec[3], spec[4])
      local n = 40
      local x, dy = randn(layer.inputs, n, 41), randn(layer.outputs, n, 42)
      local a = host(layer:forward(x))
      local dx, dw, db = host(layer:backward(dy)), host(layer.dw), host(layer.db)
      layer:eval()
      local what = tostring(layer) .. " in evaluation mode: "
      close(host(layer:forward(x)), a, 0, what .. "output")
      close(host(layer:backward(dy)), dx, 0, what .. "dx")
      close(host(layer.dw), dw, 0, what .. "dW")
      close(host(layer.db), db, 0, what .. "db")
      layer:train()
      close(host(layer:forward(x)), a, 0, tostring(layer) .. " back in training: output")
    end
  end)
end
device("cpu")

-- nn.evaluate's 1,000-image batches used to make every conv's windows for the
-- whole batch (R × P·1000) and the backward's δ and dx at that size: 1.4× the
-- peak memory of the same CNN in PyTorch (issue 29). A forward-only pass now
-- holds each layer's outputs (the pool's indices beside its y) and a few parts'
-- windows; the growth of the cpu's memory over one evaluation is held to that.
t.test("cpu: nn.evaluate of a CNN on 1,000 images makes only the forward's buffers", function()
  device("cpu")
  local net = nn.sequential{
    nn.conv2d(1, 8, 5, {activation = "relu", input = 28, seed = 1}), nn.maxpool2d(2),
    nn.conv2d(8, 16, 5, {activation = "relu", seed = 2}), nn.maxpool2d(2),
    nn.flatten(), nn.linear(256, 10, nil, {seed = 3}),
  }
  local n = 1000
  local labs = {}
  for j = 1, n do labs[j] = j % 10 + 1 end
  local set = {images = rand(784, n, 51), labels = from({labs}), n = n}
  local loss = nn.softmax_xent()
  local x, y = set.images:columns(1, 16), set.labels:columns(1, 16)
  loss:forward(net:forward(x), y)
  net:backward(loss:backward())  -- the training buffers, at 16 samples
  collectgarbage(); collectgarbage()
  local before = vela.mem("cpu").used
  nn.evaluate(net, set)
  collectgarbage(); collectgarbage()
  local grown = vela.mem("cpu").used - before
  local outs = 0
  for _, l in ipairs(net.layers) do outs = outs + l.outputs end
  local bound = 2 * outs * n * 4 + (8 << 20)  -- two output-sized matrices a layer, 8 MB for windows and the loader
  assert(grown <= bound, ("nn.evaluate grew the cpu's memory by %.1f MB, more than %.1f MB"):format(grown / 2^20, bound / 2^20))
end)

-- ---- shapes in nn.sequential -------------------------------------------------

t.test("nn.sequential hands the image shapes along; flatten ends them", function()
  local net = nn.sequential{
    nn.conv2d(1, 6, 5, {input = {h = 28, w = 28}, activation = "relu"}),
    nn.maxpool2d(2),
    nn.conv2d(6, 16, 5, {activation = "relu"}),
    nn.maxpool2d(2),
    nn.flatten(),
    nn.linear(256, 10),
  }
  local L = net.layers
  assert(L[1].image.c == 6 and L[1].image.h == 24 and L[1].image.w == 24)
  assert(L[2].image.h == 12 and L[3].image.c == 16 and L[3].image.h == 8 and L[4].image.h == 4)
  assert(L[5].image == nil and L[5].outputs == 256 and net.inputs == 784 and net.outputs == 10)
  local y = net:forward(rand(784, 5))
  assert(y.rows == 10 and y.cols == 5)
  -- a non-square image and a dropout between image layers keep the shape
  local net2 = nn.sequential{nn.conv2d(2, 3, {3, 1}, {input = {h = 7, w = 5}}), nn.dropout(0.5), nn.avgpool2d({5, 5}),
    nn.flatten(), nn.linear(3, 2)}
  assert(net2.layers[3].image.h == 1 and net2.layers[3].image.w == 1)
end)

t.test("image shape errors say what was expected", function()
  t.raises(function() nn.sequential{nn.conv2d(1, 4, 3), nn.flatten()} end,
    "layer 1 (conv2d(1→4, 3×3, identity)) does not know the size of its images", "input = {h =, w =}")
  t.raises(function() nn.sequential{nn.conv2d(1, 4, 3, {input = 8}), nn.conv2d(3, 2, 3)} end,
    "conv2d(3→2, 3×3, identity) takes 3-channel images but gets 4×6×6")
  t.raises(function() nn.sequential{nn.conv2d(1, 4, 3, {input = 8}), nn.maxpool2d(2), nn.flatten(), nn.linear(100, 2)} end,
    "takes 100 inputs but layer 3 (flatten(4×3×3→36)) gives 36 outputs")
  t.raises(function() nn.sequential{nn.conv2d(1, 4, 9, {input = 8})} end, "nn.conv2d: the 9×9 window")
  t.raises(function() nn.conv2d(1, 4, 0) end, "nn.conv2d: k must be a positive integer or {height, width}, got 0")
  t.raises(function() nn.conv2d(1, 4, 3, {activation = "swish"}) end, "nn.conv2d: unknown activation 'swish'")
  t.raises(function() nn.maxpool2d(2, {pad = 2}) end, "nn.maxpool2d: pad 2×2 is more than half the 2×2 window")
  local l = nn.conv2d(1, 2, 3, {input = 5})
  t.raises(function() l:forward(rand(24, 2)) end, "input is 24×2 but the layer takes 25 rows (1×5×5 images")
end)

-- ---- devices, checkpoints, training ----------------------------------------

local function lenet(seed)
  return nn.sequential{
    nn.conv2d(1, 4, 3, {activation = "relu", input = 10, seed = seed}),
    nn.maxpool2d(2),
    nn.conv2d(4, 6, 2, {activation = "relu", seed = seed + 1}),
    nn.avgpool2d(3),
    nn.flatten(),
    nn.linear(6, 5, {seed = seed + 2}),
  }
end

-- A fixed batch of 10×10 "images" and labels on the host.
local X = values(100, 16, 5)
local labels = {}
for j = 1, 16 do labels[j] = (j * 7) % 5 + 1 end

-- Losses of `steps` SGD steps on dev from the same start.
local function run(dev, steps, net)
  device(dev)
  net = net or lenet(3)
  local out, opt = t.sgd_losses(net, from(X), from({labels}), steps)
  return out, net, opt
end

t.test("50 SGD steps of a conv net: the same losses on every device (within 1e-4 relative)", function()
  local ref = run("cpu", 50)
  assert(ref[50] < ref[1], ("the loss did not fall: %g → %g"):format(ref[1], ref[50]))
  for _, id in ipairs(ids) do
    if id ~= "cpu" then
      local got = run(id, 50)
      for s = 1, 50 do t.near(got[s], ref[s], 1e-4, id .. " step " .. s) end
    end
  end
  device("cpu")
end)

t.test("net:to moves a conv net mid-training; nn.save/nn.load resume with the same next loss", function()
  local _, net, opt = run("cpu", 5)
  local path = os.tmpname() .. ".npz"
  nn.save(path, net, opt)
  local cont = run("cpu", 3, net)
  for _, id in ipairs(ids) do
    local loaded, lopt = nn.load(path, id)
    assert(tostring(loaded):find("conv2d(1→4, 3×3, relu), maxpool2d(2×2), conv2d(4→6, 2×2, relu), avgpool2d(3×3)", 1, true),
      tostring(loaded))
    device(id)
    local x, y = from(X), from({labels})
    local loss = nn.softmax_xent()
    for s = 1, 3 do
      local l = nn.mean(loss:forward(loaded:forward(x), y))
      t.near(l, cont[s], 1e-4, id .. " resumed step " .. s)
      loaded:backward(loss:backward())
      lopt:step(loaded)
    end
  end
  os.remove(path)
  device("cpu")
  -- net:to there and back: the same outputs
  local net2 = lenet(9)
  local x = from(X)
  local want = host(net2:forward(x))
  for _, id in ipairs(ids) do
    net2:to(id)
    close(host(net2:forward(x:to(id))), want, 1e-5, "net:to " .. id)
  end
  net2:to("cpu")
end)

t.test("nn.fit and nn.evaluate train a conv net", function()
  device("cpu")
  local imgs, labs = {}, {}
  for i = 1, 100 do imgs[i] = {} end
  -- two classes: a bright left half or a bright right half, 10×10, with noise
  local noise = values(100, 64, 13)
  for j = 1, 64 do
    local cls = j % 2 + 1
    labs[j] = cls
    for r = 0, 9 do
      for c = 0, 9 do
        local on = (cls == 1 and c < 5) or (cls == 2 and c >= 5)
        imgs[r * 10 + c + 1][j] = (on and 1 or 0) + 0.1 * noise[r * 10 + c + 1][j]
      end
    end
  end
  local set = {images = from(imgs), labels = from({labs}), n = 64}
  local net = lenet(1)
  local hist = nn.fit(net, set, {epochs = 8, batch = 16, optimizer = optim.sgd{lr = 0.1, momentum = 0.9},
    loss = nn.softmax_xent(), seed = 1, progress = false})
  assert(hist)
  local acc = nn.evaluate(net, set)
  assert(acc >= 0.95, "accuracy " .. acc)
end)

t.test("compare, diverge and profile take a conv net", function()
  for _, id in ipairs(ids) do
    if id == "cpu" and #ids == 1 then break end  -- diverge needs a second device
    device(id)
    local net = lenet(7)
    local x, y = from(X), from({labels})
    local loss = nn.softmax_xent()
    local r = diverge(function() loss:forward(net:forward(x), y); net:backward(loss:backward()) end,
      {ref = id == "cpu" and ids[2] or "cpu"})
    assert(not r.diverged, id .. ": diverged at " .. tostring(r.kernel))
    assert(r.kernels >= 15, id .. ": diverge saw " .. tostring(r.kernels) .. " kernels")
    local rows = compare(function() return net:forward(x) end, {inputs = {net, x}})
    for _, row in ipairs(rows) do assert(not row.max_rel or row.max_rel < 1e-5, row.device .. " " .. tostring(row.max_rel)) end
    local p = profile(function() net:forward(x) end)
    local seen = {}
    for _, row in ipairs(p) do seen[row.kernel] = true end
    -- the cpu runs these unpadded stride-1 forwards as conv (no windows) on AVX2 and the first (one channel) everywhere
    local windows = seen.im2col and seen.to_images
    assert((windows or id == "cpu" and seen.conv) and seen.maxpool and seen.avgpool, id .. ": profile names the conv kernels")
  end
  device("cpu")
end)

t.test("help: the conv kernels and layers are documented", function()
  for _, name in ipairs{"im2col", "col2im", "maxpool", "maxpool_backward", "avgpool", "avgpool_backward",
      "to_images", "from_images", "layout", "nn.conv2d", "nn.maxpool2d", "nn.avgpool2d", "nn.flatten"} do
    local sig, text = vela.doc(name)
    assert(sig and text and #text > 20, "no help for " .. name)
  end
end)

t.done()

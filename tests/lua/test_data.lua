-- data: the MNIST files, bad IDX files, batches gathered on the device (each
-- sample once per epoch, scaled to [0, 1], the order fixed by the seed), and
-- the terminal pictures.
local t = dofile("tests/lua/t.lua")
local data, plot = require "vela.data", require "vela.plot"

local ids = t.devices()

local dir = os.tmpname()
os.remove(dir)
assert(os.execute("mkdir -p " .. dir))

local function write(name, bytes) return t.write_file(dir .. "/" .. name, bytes) end
local function idx(magic, dims, payload)
  local s = string.pack(">I4", magic)
  for _, d in ipairs(dims) do s = s .. string.pack(">I4", d) end
  return s .. payload
end
-- n r×c images (28×28 unless given) whose pixels all equal the image's number (1..n), labels given.
local function tiny_set(name, n, labels, r, c)
  r, c = r or 28, c or 28
  local px = {}
  for j = 1, n do px[j] = string.rep(string.char(j), r * c) end
  write(name .. "-images-idx3-ubyte", idx(0x803, {n, r, c}, table.concat(px)))
  write(name .. "-labels-idx1-ubyte", idx(0x801, {#labels}, string.char(table.unpack(labels))))
end

t.test("the MNIST files of scripts/get-data", function()
  device("cpu")
  local m = data.mnist()
  t.near(m.train.n, 7996, 0); t.near(m.test.n, 2004, 0)
  assert(m.train.images:dtype() == "uint8" and m.train.labels:dtype() == "float32")
  t.near(m.train.images.rows, 784, 0)
  -- Labels are classes 1..10 (digit + 1): per-class counts of the test split.
  local counts = {}
  for _, v in ipairs(m.test.labels:totable()[1]) do counts[v] = (counts[v] or 0) + 1 end
  local want = {201, 226, 199, 207, 196, 173, 203, 214, 189, 196}
  for c = 1, 10 do t.near(counts[c], want[c], 0, "class " .. c) end
  -- Pixels are grey levels 0..255: the brightest pixel of the set is 255.
  local mx = 0
  for _, r in ipairs(m.test.images:columns(1, 5):totable()) do for _, v in ipairs(r) do mx = math.max(mx, v) end end
  t.near(mx, 255, 0)
end)

t.test("Fashion-MNIST from Debian's package", function()
  device("cpu")
  local f = data.fashion_mnist()
  t.near(f.train.n, 60000, 0); t.near(f.test.n, 10000, 0)
  assert(f.train.classes[10] == "Ankle boot")
end)

t.test("bad data sets are clear errors", function()
  tiny_set("train", 3, {0, 1, 2})
  tiny_set("t10k", 2, {1, 0})
  local ok = data.mnist(dir)
  t.near(ok.train.n, 3, 0)
  -- counts that disagree
  write("t10k-labels-idx1-ubyte", idx(0x801, {3}, "\0\1\2"))
  t.raises(function() data.mnist(dir) end, "t10k-images-idx3-ubyte' holds 2 images", "holds 3 labels")
  -- labels out of range
  write("t10k-labels-idx1-ubyte", idx(0x801, {2}, "\0\12"))
  t.raises(function() data.mnist(dir) end, "t10k-labels-idx1-ubyte", "label 12 of sample 2", "0..9")
  -- wrong magic (images and labels swapped)
  write("t10k-labels-idx1-ubyte", idx(0x803, {2, 2, 2}, string.rep("\0", 8)))
  t.raises(function() data.mnist(dir) end, "t10k-labels-idx1-ubyte", "3 dimensions")
  write("t10k-labels-idx1-ubyte", "GIF89a....")
  t.raises(function() data.mnist(dir) end, "t10k-labels-idx1-ubyte", "not an IDX file")
  -- truncated
  write("t10k-labels-idx1-ubyte", idx(0x801, {2}, "\1"))
  t.raises(function() data.mnist(dir) end, "truncated", "holds 1")
  -- missing
  t.raises(function() data.mnist(dir .. "/nowhere") end, "data.mnist", "train-images-idx3-ubyte", "scripts/get-data")
  -- images that are not 28×28 (the pixel count 783 is not 784 either), raw and gzipped, on every device
  tiny_set("t10k", 2, {1, 0}, 27, 29)
  for _, d in ipairs(devices()) do
    t.raises(function() data.mnist(dir, d.id) end, "data.mnist:", "27×29 images", "28×28")
    t.raises(function() data.fashion_mnist(dir, d.id) end, "data.fashion_mnist:", "27×29")
  end
  if os.execute("gzip -f " .. dir .. "/t10k-images-idx3-ubyte") then
    t.raises(function() data.mnist(dir) end, "data.mnist:", "783 pixels", "28×28")
    -- a truncated .gz says so (not "0 bytes, shorter than the 4-byte magic")
    local f = io.open(dir .. "/t10k-images-idx3-ubyte.gz", "rb")
    local z = f:read("a"); f:close()
    write("t10k-images-idx3-ubyte.gz", z:sub(1, 12))
    t.raises(function() data.mnist(dir) end, "truncated or corrupt gzip")
    t.raises(function() read_idx(dir .. "/t10k-images-idx3-ubyte.gz") end, "read_idx:", "truncated or corrupt gzip")
    os.remove(dir .. "/t10k-images-idx3-ubyte.gz")
  end
end)

t.test("IDX headers whose sizes overflow are errors, not wrapped numbers", function()
  -- 20 bytes: 0 samples of 2^31 × 2^31 × 2^31 (the product overflows 64 bits; the count hides it)
  write("bad20.idx", idx(0x804, {0, 2^31, 2^31, 2^31}, ""))
  local f = io.open(dir .. "/bad20.idx", "rb"); t.near(#f:read("a"), 20, 0); f:close()
  for _, d in ipairs(devices()) do
    t.raises(function() read_idx(dir .. "/bad20.idx", d.id) end, "read_idx:", "more than 2^40")
  end
  write("big.idx", idx(0x803, {1, 2^31, 2^31}, ""))
  t.raises(function() read_idx(dir .. "/big.idx") end, "read_idx:", "more than 2^40")
end)

for _, id in ipairs(ids) do
  t.test(id .. ": batches cover the set once per epoch, scaled, in a seeded order", function()
    device(id)
    local n = 10
    local px, labels = {}, {}
    for j = 1, n do px[j] = string.rep(string.char(j * 20), 4); labels[j] = j % 10 end
    local ip = write("b-images", idx(0x803, {n, 2, 2}, table.concat(px)))
    local lp = write("b-labels", idx(0x801, {n}, string.char(table.unpack(labels))))
    local set = data.read_set(ip, lp, data.mnist_classes)
    local function order(seed, epoch)
      local loader = data.loader(set, 4, {seed = seed})
      local seen, sizes = {}, {}
      for x, y, b, bn in loader:epoch(epoch) do
        assert(x:device() == y:device() and tostring(x:device()):find(id, 1, true), "the batch stays on " .. id)
        sizes[b] = bn
        local hx, hy = x:to("cpu"):totable(), y:to("cpu"):totable()
        for j = 1, bn do
          local k = math.floor(hx[1][j] * 255 / 20 + 0.5)  -- the image number, from its scaled pixel
          t.near(hx[1][j], k * 20 / 255, 1e-6, "scaled to [0, 1]")
          t.near(hx[4][j], hx[1][j], 0)
          t.near(hy[1][j], k % 10 + 1, 0, "the label travels with its image")
          seen[#seen + 1] = k
        end
      end
      assert(table.concat(sizes, ",") == "4,4,2", "batch sizes " .. table.concat(sizes, ","))
      local sorted = {table.unpack(seen)}
      table.sort(sorted)
      for j = 1, n do t.near(sorted[j], j, 0, "each sample once") end
      return table.concat(seen, ",")
    end
    local a, b, c = order(5, 1), order(5, 1), order(5, 2)
    assert(a == b, "the same seed and epoch give the same order")
    assert(a ~= c, "another epoch gives another order")
    local plain = {}
    for x in data.loader(set, 5, {shuffle = false}):epoch(1) do
      for _, v in ipairs(x:to("cpu"):totable()[1]) do plain[#plain + 1] = math.floor(v * 255 / 20 + 0.5) end
    end
    assert(table.concat(plain, ",") == "1,2,3,4,5,6,7,8,9,10", "unshuffled: " .. table.concat(plain, ","))
    t.raises(function() data.loader(set, 11) end, "batch size 11 is larger than the set (10 samples)")
  end)
end

t.test("permutation is a permutation, the same for a seed", function()
  local p = permutation(1000, 42):totable()[1]
  local q = permutation(1000, 42):totable()[1]
  local seen = {}
  for i, v in ipairs(p) do
    assert(v == q[i])
    assert(v >= 1 and v <= 1000 and not seen[v], "value " .. v)
    seen[v] = true
  end
end)

t.test("show, show_weights and plot draw in the terminal", function()
  device("cpu")
  local m = data.mnist()
  local lines = data.image_lines(m.test, 1)
  t.near(#lines, 15, 0, "a header and 14 lines")
  assert(lines[1]:find("image 1: class %d+"), lines[1])
  t.near(utf8.len(lines[2]), 28, 0, "28 cells wide")
  local inked = 0
  for i = 2, #lines do for _, c in utf8.codes(lines[i]) do if c ~= 32 then inked = inked + 1 end end end
  assert(inked > 30, "the digit has ink: " .. inked)
  local nn = require "vela.nn"
  local w = data.weight_lines(nn.linear(784, 6, "relu", {seed = 1}), 6, 3)
  t.near(#w, 2 * 15, 0, "two rows of 14 lines and a gap")
  t.near(utf8.len(w[1]), 3 * 28 + 2 * 2, 0)
  local p = plot.lines({3, 2, 1.5, 1.2, 1.1}, {height = 4})
  t.near(#p, 6, 0)
  assert(p[1]:find("3 ┤█", 1, true), p[1])
  t.raises(function() plot({1, 0 / 0}) end, "plot: value 2")
  -- nn.fit's history (a resumed run starts at a later epoch) plots its loss per epoch.
  local hp = plot.lines(setmetatable({loss = {[2] = 3, [3] = 1}, first = 2, last = 3}, {}), {height = 2})
  t.near(#hp, 4, 0, "two rows, the axis, the labels")
  assert(hp[1]:find("3 ┤█", 1, true) and hp[2]:find("1 ┤█▁", 1, true), hp[1] .. "\n" .. hp[2])
  t.raises(function() data.show(m.test.images, 3000) end, "data.show", "outside 1..2004")
  -- The drawing functions print once and return nothing (the prompt prints no second copy).
  t.near(select("#", data.show(m.test, 1)), 0, 0, "data.show returns nothing")
  t.near(select("#", data.show_weights(nn.linear(784, 2, "relu", {seed = 1}), 2)), 0, 0, "show_weights returns nothing")
  t.near(select("#", plot({1, 2})), 0, 0, "plot returns nothing")
end)

t.test("data.loader{group = T} shuffles runs of T columns whole, the same on every device; nn.fit passes it", function()
  -- column i holds i: a shuffled epoch must show 4 runs k·3+1, k·3+2, k·3+3, each once
  local cols = {}
  for i = 1, 12 do cols[i] = i end
  local orders = {}
  for _, id in ipairs(ids) do
    local set = {images = matrix(1, 12, cols):to(id), labels = zeros(1, 12, id), n = 12}
    local seen = {}
    for x in data.loader(set, 6, {group = 3, seed = 5}):epoch(1) do
      for _, v in ipairs(x:to("cpu"):totable()[1]) do seen[#seen + 1] = v end
    end
    local runs = {}
    for r = 0, 3 do
      local first = seen[r * 3 + 1]
      assert((first - 1) % 3 == 0, id .. ": a run starts at k·3 + 1, got " .. first)
      assert(seen[r * 3 + 2] == first + 1 and seen[r * 3 + 3] == first + 2, id .. ": a run stays in order")
      assert(not runs[first], id .. ": each run once")
      runs[first] = true
    end
    orders[#orders + 1] = table.concat(seen, " ")
  end
  for i = 2, #orders do assert(orders[i] == orders[1], "the same order on every device") end
  assert(orders[1] ~= "1.0 2.0 3.0 4.0 5.0 6.0 7.0 8.0 9.0 10.0 11.0 12.0", "shuffled")
  local set = {images = matrix(1, 12, cols), labels = zeros(1, 12), n = 12}
  t.raises(function() data.loader(set, 4, {group = 3}) end, "data.loader: group 3 must divide", "batch of 4")
  t.raises(function() data.loader(set, 6, {group = 0}) end, "data.loader: group must be a positive integer")
  t.raises(function() data.loader(set, 6, {group = 5}) end, "group 5 must divide the set's 12 samples")
  local nn = require "vela.nn"
  t.raises(function() nn.fit(nn.sequential{nn.linear(1, 2)}, set, {group = 5, batch = 6, epochs = 1, progress = false}) end,
    "group 5 must divide")
end)

t.test("nn.fit{group = T, devices =} shares each batch in whole sequences: the same weights as one device", function()
  local dist = require "vela.dist"
  -- hand-computed shares: 3 runs of 8 over 2 ranks -> 2 runs, then 1
  local f0, c0 = dist.shard(24, 0, 2, 8)
  local f1, c1 = dist.shard(24, 1, 2, 8)
  assert(f0 == 1 and c0 == 16 and f1 == 17 and c1 == 8, ("shards %d+%d, %d+%d"):format(f0, c0, f1, c1))
  t.raises(function() dist.shard(24, 0, 2, 5) end, "dist.shard: g must be a positive integer that divides n = 24, got 5")
  local nn, optim = require "vela.nn", require "vela.optim"
  local T, n, tok, nxt = 8, 48, {}, {}
  for i = 1, n do tok[i], nxt[i] = (i * 7) % 5 + 1, (i * 3) % 5 + 1 end
  local set = {images = matrix(1, n, tok), labels = matrix(1, n, nxt), n = n}
  local function net()
    return nn.sequential{nn.embedding(5, 16, {seed = 1}), nn.posembed(T, 16, {seed = 2}),
      nn.block(16, 2, {context = T, seed = 3}), nn.layernorm(16), nn.linear(16, 5, {seed = 4})}
  end
  local function fit(devices)
    local m = net()
    -- batch 24 = 3 sequences: plain halves of 12 would cut one (the attention refuses 12 columns)
    nn.fit(m, set, {group = T, batch = 24, epochs = 2, progress = false, devices = devices,
                    optimizer = optim.sgd{lr = 0.1}})
    return m
  end
  local one, two = fit(nil), fit({"cpu", "cpu"})
  local worst = 0
  for i, p in ipairs(one:params()) do
    local a, b = p[1]:totable(), two:params()[i][1]:totable()
    for r = 1, #a do for c = 1, #a[r] do worst = math.max(worst, math.abs(a[r][c] - b[r][c])) end end
  end
  -- float32 sums in another order (16 + 8 columns vs 24), 4 steps: within 1e-5
  assert(worst < 1e-5, "devices = {cpu, cpu} vs one device: largest difference " .. worst)
  assert(one:params()[1][1]:get(1, 1) ~= net():params()[1][1]:get(1, 1), "the weights moved")
end)

os.execute("rm -rf " .. dir)
t.done()

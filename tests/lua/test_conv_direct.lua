-- conv and conv_wgrad (the whole convolution without im2col's windows; on the
-- cpu direct loops) on every device against float64 loops written here: the
-- cpu's fast paths (stride 1, no padding) with output rows of 24 columns (full
-- register tiles), 9, 11, 14 and 30 (masked tails, two runs), 8 (3 rows per
-- AVX2 tile), 18 (AVX-512 vectors across row breaks), 1 to 3 blocks of output
-- channels, every activation form (fused relu, identity, one applied after),
-- no bias; conv_wgrad's tiles for one input channel (3 to 11 output
-- channels) and for several (1 to 5 blocks of 16 output channels); the
-- general path (channels, strides, padding); dw as a transposed view; the
-- errors. On a CPU with AVX-512 the cpu runs its v4 tiles here, and a child
-- (this file again, the cpu only, under VELA_CPU_ISA=v3) runs the same cases
-- on the AVX2 tiles, each against the float64 loops, and hands back its
-- results' bits, which must equal the v4 ones (the same sums in the same
-- order). Run with VELA_CPU_ISA=base too for the scalar path (the test says
-- which path ran).
local t = dofile("tests/lua/t.lua")
local nn = require "vela.nn"

-- The child: the cpu only, under the VELA_CPU_ISA its parent set.
local as_child = os.getenv("VELA_CONV_DIRECT_CHILD") == "1"
local ids = as_child and {"cpu"} or t.devices()
local host = t.host
local loops = device("cpu"):info().limits.loops  -- "x86-64-v4 (AVX-512 + FMA, 16 lanes): detected"
local on_v4 = loops:find("^x86%-64%-v4") ~= nil

-- FNV-1a over a host table's float32 bits: the cases' results, compared between
-- this process and the child.
local function bits(h, m)
  for _, row in ipairs(host(m)) do
    for _, v in ipairs(row) do
      for c in string.pack("f", v):gmatch(".") do h = (h ~ c:byte()) * 0x100000001b3 end
    end
  end
  return h
end
local hashes = {}  -- case name .. " conv" / " conv_wgrad" → ("%016x") of the cpu's results

local values = t.values  -- deterministic float32 values in [-2, 2)

local check = dofile("tests/lua/helpers/conv_check.lua")
local geo = check.geo  -- the geometry's numbers

-- 0-based pixel of a host image, 0 in the padding.
local function window(X, g, j, r, oy, ox)
  local c, kh, kw, sh, sw, ph, pw = geo(g)
  local ch, ky, kx = r // (kh * kw), r // kw % kh, r % kw
  local y, x = oy * sh - ph + ky, ox * sw - pw + kx
  if y < 0 or y >= g.h or x < 0 or x >= g.w then return 0 end
  return X[(ch * g.h + y) * g.w + x + 1][j]
end

local acts = {identity = function(v) return v end, relu = function(v) return math.max(v, 0) end,
              tanh = math.tanh}

-- float64: y(o·P + p, j) = act(Σ_r W(o, r)·window + b(o)).
local function want_conv(X, W, B, g, n, act)
  local c, kh, kw, _, _, _, _, oh, ow = geo(g)
  local R, out = c * kh * kw, #W
  local Y = {}
  for o = 0, out - 1 do
    for oy = 0, oh - 1 do
      for ox = 0, ow - 1 do
        local row = {}
        for j = 1, n do
          local s = B and B[o + 1][1] or 0
          for r = 0, R - 1 do s = s + W[o + 1][r + 1] * window(X, g, j, r, oy, ox) end
          row[j] = acts[act](s)
        end
        Y[(o * oh + oy) * ow + ox + 1] = row
      end
    end
  end
  return Y
end

local function want_wgrad(X, D, g, n, out)
  local c, kh, kw, _, _, _, _, oh, ow = geo(g)
  local R, P = c * kh * kw, oh * ow
  local dW, dB = {}, {}
  for o = 0, out - 1 do
    dW[o + 1], dB[o + 1] = {}, {0}
    for r = 0, R - 1 do dW[o + 1][r + 1] = 0 end
    for j = 1, n do
      for p = 0, P - 1 do
        local d = D[o * P + p + 1][j]
        dB[o + 1][1] = dB[o + 1][1] + d
        for r = 0, R - 1 do dW[o + 1][r + 1] = dW[o + 1][r + 1] + d * window(X, g, j, r, p // ow, p % ow) end
      end
    end
  end
  return dW, dB
end

-- Relative to the sum of the terms' sizes (float32 accumulation of R or n·P terms).
local function close(got, want, scale, tol, what)
  check.close(got, want, function() return tol * scale end, what)
end

local cases = {
  {name = "one channel, 28×28, 5×5 (full tiles)", g = {c = 1, h = 28, w = 28, k = 5}, out = 6, n = 3},
  {name = "one channel, 13×11, 5×3 (masked tails)", g = {c = 1, h = 13, w = 11, k = {5, 3}}, out = 5, n = 9},
  {name = "one channel, 7×36, 3×7 (a full tile and a tail)", g = {c = 1, h = 7, w = 36, k = {3, 7}}, out = 3, n = 2},
  {name = "3 channels, 12×12, 5×5 (8-column rows, 3 rows per tile: the second conv's form)",
   g = {c = 3, h = 12, w = 12, k = 5}, out = 5, n = 2},
  {name = "2 channels, 7×13, 3×3 (runs of 8 and 3: masked; a last tile of 1 run)", g = {c = 2, h = 7, w = 13, k = 3},
   out = 5, n = 3},
  {name = "2 channels, 4×5, 3×3, 16 outputs, 17 samples (conv_wgrad's tile for several channels: 2 chunks)",
   g = {c = 2, h = 4, w = 5, k = 3}, out = 16, n = 17},
  -- conv_wgrad on the cpu only (its tile for several channels; conv's does not depend on kw or out):
  {name = "2 channels, 6×9, 5×5, 32 outputs, 5 samples (that tile, 5 window columns, 2 blocks of 16 outputs; 10 positions: 8 moved by the transpose, 2 after)",
   g = {c = 2, h = 6, w = 9, k = 5}, out = 32, n = 5, wgrad_only = true},
  {name = "2 channels, 3×6, 2×4, 16 outputs, 3 samples (that tile, 4 window columns)",
   g = {c = 2, h = 3, w = 6, k = {2, 4}}, out = 16, n = 3, wgrad_only = true},
  -- the cpu only (its AVX-512 tiles; the other devices' conv does not depend on these shapes):
  {name = "one channel, 6×17, 2×7, 11 outputs, 9 samples (conv_wgrad's AVX-512 one-channel tile: 8 + 3 channels, 2 blocks of window columns, a run of 8 and a tail of 3, 2 chunks)",
   g = {c = 1, h = 6, w = 17, k = {2, 7}}, out = 11, n = 9, cpu_only = true},
  {name = "2 channels, 4×17, 2×4, 40 outputs (14-column rows: two runs of 7; AVX-512: blocks of 32 and 8 channels)",
   g = {c = 2, h = 4, w = 17, k = {2, 4}}, out = 40, n = 2, cpu_only = true},
  {name = "2 channels, 5×20, 3×3, 11 outputs (18-column rows: AVX-512 vectors of 16 positions across row breaks, a tail of 6)",
   g = {c = 2, h = 5, w = 20, k = 3}, out = 11, n = 2, cpu_only = true},
  {name = "2 channels, 3×7, 2×5, 80 outputs, 17 samples (conv_wgrad's several-channel tile: 5 blocks of 16, 4 + 1 per AVX-512 pass; 2 chunks)",
   g = {c = 2, h = 3, w = 7, k = {2, 5}}, out = 80, n = 17, wgrad_only = true, cpu_only = true},
  {name = "two channels, stride 2, pad 1 (the general path)", g = {c = 2, h = 7, w = 6, k = 3, stride = {2, 1}, pad = 1},
   out = 3, n = 4},
}

for _, id in ipairs(ids) do
  device(id)
  -- A Vulkan device keeps conv's and conv_wgrad's windows, GEMM matrix and ones
  -- in buffers reused from call to call and replaced by larger ones when a call
  -- needs more (kernels_conv.cpp): calls of three sizes queued back to back with
  -- no read between, and a matrix uploaded while they are queued (it would take
  -- the memory of a replaced buffer freed too soon, and queued work would then
  -- write over it); each checked against float64 loops. First on the device,
  -- so that its calls find the buffers empty and grow them.
  if not as_child then t.test(id .. ": convs of different sizes queued back to back, no read between, against float64 loops", function()
    local function make(g, out, n, seed)
      local c, kh, kw, _, _, _, _, oh, ow = geo(g)
      local R, P = c * kh * kw, oh * ow
      return {g = g, out = out, n = n, R = R, P = P, X = values(c * g.h * g.w, n, seed),
              W = values(out, R, seed + 1), B = values(out, 1, seed + 2), D = values(out * P, n, seed + 3)}
    end
    local small = make({c = 2, h = 9, w = 8, k = 3}, 3, 2, 21)
    local large = make({c = 3, h = 14, w = 13, k = {4, 3}, pad = 1}, 4, 3, 31)
    local mid = make({c = 2, h = 11, w = 10, k = 3, stride = 2}, 5, 4, 41)
    local function run(cs, act)
      cs.y, cs.dw, cs.db = zeros(cs.out * cs.P, cs.n), zeros(cs.out, cs.R), zeros(cs.out, 1)
      cs.x = from(cs.X)
      conv(cs.x, from(cs.W), from(cs.B), cs.y, cs.g, act)
    end
    run(small, "relu")
    run(large, "identity")  -- the buffers grow: the small ones are replaced while queued
    -- matrices of the replaced buffers' sizes, written by the host at once
    local F1, F2 = values(small.R, small.P * small.n, 51), values(small.P * small.n, small.out, 52)
    local f1, f2 = from(F1), from(F2)
    run(mid, "tanh")
    for _, cs in ipairs{small, large, mid} do conv_wgrad(cs.x, from(cs.D), cs.dw, cs.db, cs.g) end
    for _, cs in ipairs{{small, "relu"}, {large, "identity"}, {mid, "tanh"}} do
      local c, act = cs[1], cs[2]
      close(host(c.y), want_conv(c.X, c.W, c.B, c.g, c.n, act), 4 * c.R, 1e-6, "conv " .. act)
      local dW, dB = want_wgrad(c.X, c.D, c.g, c.n, c.out)
      close(host(c.dw), dW, 4 * c.n * c.P, 1e-6, "dw " .. act)
      close(host(c.db), dB, 2 * c.n * c.P, 1e-6, "db " .. act)
    end
    close(host(f1), F1, 1, 0, "a matrix uploaded while the convs were queued")
    close(host(f2), F2, 1, 0, "a matrix uploaded while the convs were queued")
  end) end

  for _, cs in ipairs(cases) do
    if (cs.wgrad_only or cs.cpu_only) and id ~= "cpu" then goto next_case end
    local g, out, n = cs.g, cs.out, cs.n
    local c, kh, kw, _, _, _, _, oh, ow = geo(g)
    local R, P = c * kh * kw, oh * ow
    local X, W, B = values(c * g.h * g.w, n, 3), values(out, R, 5), values(out, 1, 7)
    -- (the child: relu, the fused form, alone)
    for _, act in ipairs(cs.wgrad_only and {} or as_child and {"relu"} or {"relu", "identity", "tanh"}) do
      t.test(("%s: conv, %s, %s, against float64 loops"):format(id, cs.name, act), function()
        local y = zeros(out * P, n)
        local r = conv(from(X), from(W), from(B), y, g, act)
        assert(rawequal(r, y), "conv returns y")
        -- each output sums R products of values below 2 in size
        close(host(y), want_conv(X, W, B, g, n, act), 4 * R, 1e-6, "conv")
        if id == "cpu" and act == "relu" then hashes[cs.name .. " conv"] = ("%016x"):format(bits(0, y)) end
      end)
    end
    if not cs.wgrad_only and not as_child then t.test(("%s: conv without a bias, %s"):format(id, cs.name), function()
      local y = zeros(out * P, n)
      conv(from(X), from(W), nil, y, g)
      close(host(y), want_conv(X, W, nil, g, n, "identity"), 4 * R, 1e-6, "conv, no bias")
    end) end
    t.test(("%s: conv_wgrad, %s, dw as a transposed view, against float64 loops"):format(id, cs.name), function()
      local D = values(out * P, n, 11)
      local dW, dB = want_wgrad(X, D, g, n, out)
      local dwt, db = zeros(R, out), zeros(out, 1)
      fill(dwt, 5); fill(db, 5)  -- overwritten, not added to
      conv_wgrad(from(X), from(D), dwt:t(), db, g)
      close(host(dwt:t()), dW, 4 * n * P, 1e-6, "dw")
      close(host(db), dB, 2 * n * P, 1e-6, "db")
      if id == "cpu" then hashes[cs.name .. " conv_wgrad"] = ("%016x"):format(bits(bits(0, dwt), db)) end
      local dw = zeros(out, R)
      conv_wgrad(from(X), from(D), dw, nil, g)
      close(host(dw), dW, 4 * n * P, 1e-6, "dw, no db")
    end)
    ::next_case::
  end
  if as_child then goto next_device end

  t.test(id .. ": conv_wgrad over 0 samples gives zeros; conv's errors name the argument", function()
    local g = {c = 1, h = 6, w = 6, k = 3}
    local dw, db = zeros(2, 9), zeros(2, 1)
    fill(dw, 3); fill(db, 3)
    conv_wgrad(zeros(36, 0), zeros(32, 0), dw, db, g)
    for _, v in ipairs(host(dw)[1]) do assert(v == 0) end
    assert(host(db)[1][1] == 0)
    local x, w, y = zeros(36, 2), zeros(2, 9), zeros(32, 2)
    t.raises(function() conv(x, zeros(2, 8), nil, y, g) end, "conv: w is")
    t.raises(function() conv(x, w, nil, zeros(31, 2), g) end, "conv: y is")
    t.raises(function() conv(x, w, zeros(3, 1), y, g) end, "conv: b is")
    t.raises(function() conv(x, w, nil, y, g, "nope") end, "nope")
    t.raises(function() conv(zeros(35, 2), w, nil, y, g) end, "conv: x is")
    t.raises(function() conv(x, zeros(1, 1), nil, x, {c = 1, h = 6, w = 6, k = 1}) end, "aliases")
    t.raises(function() conv_wgrad(x, y, zeros(2, 8), nil, g) end, "conv_wgrad: dw is")
    t.raises(function() conv_wgrad(x, zeros(32, 3), w, nil, g) end, "conv_wgrad: dz is")
    t.raises(function() conv_wgrad(x, y, w, zeros(3, 1), g) end, "conv_wgrad: db is")
  end)

  -- nn.conv2d takes conv / conv_wgrad for a one-channel layer on the cpu: its
  -- gradients through nn.gradcheck (float64 central differences), as test_conv.lua's.
  t.test(id .. ": nn.conv2d with one input channel (the direct path on the cpu) passes nn.gradcheck", function()
    local net = nn.sequential{
      nn.conv2d(1, 3, 3, {activation = "relu", input = {h = 9, w = 10}, seed = 1}),
      nn.maxpool2d(2),
      nn.flatten(),
      nn.linear(3 * 3 * 4, 2, nil, {seed = 2}),
    }
    local r = nn.gradcheck(net, from(values(90, 3, 13)), {entries = 24})
    assert(r.ok, tostring(r))
    assert(r.worst <= 1e-3, tostring(r.worst))
  end)

  -- A second conv (4 channels in, 16 out): conv and conv_wgrad on the cpu, dx
  -- through the windows; gradients through nn.gradcheck, and the same bits
  -- on 1 and 2 threads for a batch of 19 (odd, over two chunks of conv_wgrad).
  t.test(id .. ": nn.conv2d with 4 input channels (conv, conv_wgrad on the cpu): gradcheck, same bits on 1 and 2 threads", function()
    local function net_of()
      return nn.sequential{
        nn.conv2d(1, 4, 3, {activation = "relu", input = {h = 5, w = 13}, seed = 3}),
        nn.conv2d(4, 16, 3, {activation = "relu", seed = 4}),
        nn.flatten(),
        nn.linear(16 * 1 * 9, 2, nil, {seed = 5}),
      }
    end
    local r = nn.gradcheck(net_of(), from(values(65, 3, 17)), {entries = 24})
    assert(r.ok, tostring(r))
    assert(r.worst <= 1e-3, tostring(r.worst))
    if id ~= "cpu" then return end
    local before, got = threads(), {}
    for i, n in ipairs{1, 2} do
      threads(n)
      local net, x = net_of(), from(values(65, 19, 19))
      local a = net:forward(x)
      net:backward(from(values(2, 19, 23)))
      got[i] = {host(a), host(net.layers[2].dw), host(net.layers[1].dw)}
    end
    threads(before)
    for k = 1, 3 do
      for i = 1, #got[1][k] do
        for j = 1, #got[1][k][i] do
          assert(got[1][k][i][j] == got[2][k][i][j], ("output %d (%d, %d): %.9g on 1 thread, %.9g on 2"):format(
            k, i, j, got[1][k][i][j], got[2][k][i][j]))
        end
      end
    end
  end)
  ::next_device::
end

if as_child then  -- the results' bits, for the parent
  for name, h in pairs(hashes) do print("bits " .. h .. " " .. name) end
elseif on_v4 then
  t.test("cpu: the same cases on the AVX2 tiles (a child under VELA_CPU_ISA=v3) pass, with the bits of AVX-512's", function()
    local child = dofile("tests/lua/helpers/child.lua")
    local status, out = child.run('dofile("tests/lua/test_conv_direct.lua")',
                                  "env VELA_CPU_ISA=v3 VELA_CONV_DIRECT_CHILD=1 timeout 120")
    child.done()
    assert(status == 0, out)
    assert(out:find("(cpu path: x86-64-v3 (AVX2 + FMA, 8 lanes): VELA_CPU_ISA=v3)", 1, true), out)
    local seen = 0
    for h, name in out:gmatch("bits (%x+) ([^\n]+)") do
      assert(hashes[name], "the child ran a case this process did not: " .. name)
      assert(h == hashes[name], ("%s: bits %s on v3, %s on v4"):format(name, h, hashes[name]))
      seen = seen + 1
    end
    local want = 0  -- every case's conv_wgrad, and its conv
    for _, cs in ipairs(cases) do want = want + (cs.wgrad_only and 1 or 2) end
    assert(seen == want, ("%d results compared, %d expected: %s"):format(seen, want, out))
  end)
end


print(("(cpu path: %s)"):format(loops))
t.done()

-- conv_dgrad (a convolution's input gradient without im2col's windows) on
-- every device against a float64 loop written here: the cpu's AVX2 or AVX-512
-- path (stride 1, no padding; the CPU's best) with 8-column dz rows (full
-- runs), 10 and 14 columns (a full run and a masked one), 3 (masked only),
-- kw = 7 (two groups of window columns), kh ≠ kw, channel counts 1, 3, 4 → 16
-- and 32 → 64, odd batches (a tile of one sample); the scalar loops (stride, padding, views); dx
-- overwritten; the errors; the same bits on 1 and 2 threads; and nn.conv2d's
-- backward, which takes it on the cpu, through nn.gradcheck; the AVX-512
-- path's bits against a child's on the AVX2 path. Run with VELA_CPU_ISA=v3
-- and base too for those paths everywhere.
local t = dofile("tests/lua/t.lua")
local nn = require "vela.nn"

local host, values = t.host, t.values

local check = dofile("tests/lua/helpers/conv_check.lua")
local geo = check.geo

-- float64: each dz(o, p, j)·W(o, r) scattered to the pixel under offset r of
-- output p's window; also Σ|terms| per pixel (for the float32 error bound).
local function want_dgrad(D, W, g, n)
  local c, kh, kw, sh, sw, ph, pw, oh, ow = geo(g)
  local X, A = {}, {}
  for i = 1, c * g.h * g.w do
    X[i], A[i] = {}, {}
    for j = 1, n do X[i][j], A[i][j] = 0, 0 end
  end
  for o = 0, #W - 1 do
    for oy = 0, oh - 1 do
      for ox = 0, ow - 1 do
        local drow = D[(o * oh + oy) * ow + ox + 1]
        for r = 0, c * kh * kw - 1 do
          local ch, ky, kx = r // (kh * kw), r // kw % kh, r % kw
          local y, x = oy * sh - ph + ky, ox * sw - pw + kx
          if y >= 0 and y < g.h and x >= 0 and x < g.w then
            local i, wr = (ch * g.h + y) * g.w + x + 1, W[o + 1][r + 1]
            for j = 1, n do
              local v = wr * drow[j]
              X[i][j], A[i][j] = X[i][j] + v, A[i][j] + math.abs(v)
            end
          end
        end
      end
    end
  end
  return X, A
end

-- Recursive float32 summation of K terms: within K·2⁻²⁴·Σ|terms| of the exact sum.
local function close(got, want, abs, K, what)
  check.close(got, want, function(i, j) return K * 2 ^ -24 * abs[i][j] end, what)
end

local cases = {
  {name = "1 → 1 channel, 6×7, 3×3 (dz rows of 5: masked only)", g = {c = 1, h = 6, w = 7, k = 3}, out = 1, n = 2},
  {name = "3 → 5 channels, 12×12, 5×5 (8-column dz rows: the CNN's form), 3 samples",
   g = {c = 3, h = 12, w = 12, k = 5}, out = 5, n = 3},
  {name = "4 → 16 channels, 13×11, 3×2 (kh ≠ kw; a full run and a masked one), 5 samples",
   g = {c = 4, h = 13, w = 11, k = {3, 2}}, out = 16, n = 5},
  {name = "2 → 3 channels, 9×20, 2×7 (two groups of window columns; runs of 8 and 6)",
   g = {c = 2, h = 9, w = 20, k = {2, 7}}, out = 3, n = 2},
  {name = "32 → 64 channels, 6×6, 3×3, 3 samples", g = {c = 32, h = 6, w = 6, k = 3}, out = 64, n = 3},
  {name = "2 → 3 channels, stride {2, 1}, pad 1 (the scalar loops)",
   g = {c = 2, h = 7, w = 6, k = 3, stride = {2, 1}, pad = 1}, out = 3, n = 3},
  {name = "1 → 2 channels, stride 2, pad {0, 2}, 4×3 window", g = {c = 1, h = 9, w = 8, k = {4, 3}, stride = 2,
   pad = {0, 2}}, out = 2, n = 2},
}

for _, cs in ipairs(cases) do  -- the float64 results once, for every device
  local c, kh, kw, _, _, _, _, oh, ow = geo(cs.g)
  cs.D, cs.W = values(cs.out * oh * ow, cs.n, 3), values(cs.out, c * kh * kw, 5)
  cs.X, cs.A = want_dgrad(cs.D, cs.W, cs.g, cs.n)
end

for _, id in ipairs(t.devices()) do
  device(id)
  for _, cs in ipairs(cases) do
    local g, out, n, D, W, X, A = cs.g, cs.out, cs.n, cs.D, cs.W, cs.X, cs.A
    local c, kh, kw = geo(g)
    t.test(("%s: conv_dgrad, %s, against a float64 loop"):format(id, cs.name), function()
      local dx = zeros(c * g.h * g.w, n)
      fill(dx, 5)  -- overwritten, not added to
      local r = conv_dgrad(from(D), from(W), dx, g)
      assert(rawequal(r, dx), "conv_dgrad returns dx")
      close(host(dx), X, A, out * kh * kw, "dx")
    end)
  end

  t.test(id .. ": conv_dgrad with dz, w and dx as transposed views (stride 1: the scalar loops)", function()
    local g, out, n = {c = 3, h = 7, w = 10, k = 3}, 4, 3
    local D, W = values(out * 40, n, 7), values(out, 27, 9)
    local X, A = want_dgrad(D, W, g, n)
    local function tr(M)  -- the host transpose (no copy kernel: one pipeline fewer to build)
      local T = {}
      for j = 1, #M[1] do
        T[j] = {}
        for i = 1, #M do T[j][i] = M[i][j] end
      end
      return T
    end
    local dz, w = from(tr(D)), from(tr(W))
    local dxt = zeros(n, 210)
    conv_dgrad(dz:t(), w:t(), dxt:t(), g)
    close(host(dxt:t()), X, A, out * 9, "dx view")
  end)

  t.test(id .. ": conv_dgrad's errors name the argument", function()
    local g = {c = 2, h = 6, w = 6, k = 3}
    local dz, w, dx = zeros(3 * 16, 2), zeros(3, 18), zeros(72, 2)
    t.raises(function() conv_dgrad(dz, zeros(3, 17), dx, g) end, "conv_dgrad: w is")
    t.raises(function() conv_dgrad(zeros(3 * 16 + 1, 2), w, dx, g) end, "conv_dgrad: dz is")
    t.raises(function() conv_dgrad(dz, w, zeros(71, 2), g) end, "conv_dgrad: dx is")
    local m = zeros(16, 2)
    t.raises(function() conv_dgrad(m, zeros(1, 1), m, {c = 1, h = 4, w = 4, k = 1}) end, "aliases")
    t.raises(function() conv_dgrad(dz, w, dx, {c = 2, h = 6, w = 6}) end, "conv_dgrad: the geometry has no 'k'")
    t.raises(function() conv_dgrad(dz, w, dx, {c = 2, h = 6, w = 6, k = 3, bad = 1}) end, "unknown field 'bad'")
    t.raises(function() conv_dgrad(dz, w, dx) end, "conv_dgrad")
    t.raises(function() conv_dgrad(dz, 3, dx, g) end, "conv_dgrad")
  end)

  if id == "cpu" then
    -- nn.conv2d's backward takes conv_dgrad here (stride 1, no padding, AVX2;
    -- on Vulkan nn.conv2d keeps its windows: nothing new to check there).
    t.test("cpu: nn.conv2d 3 → 8 channels, 3×2 window (dx by conv_dgrad) passes nn.gradcheck", function()
      local net = nn.sequential{
        nn.conv2d(1, 3, 1, {activation = "relu", input = {h = 5, w = 7}, seed = 6}),
        nn.conv2d(3, 8, {3, 2}, {activation = "tanh", seed = 7}),
        nn.flatten(),
        nn.linear(8 * 3 * 6, 2, nil, {seed = 8}),
      }
      local r = nn.gradcheck(net, from(values(35, 3, 29)), {entries = 16})
      assert(r.ok, tostring(r))
      assert(r.worst <= 1e-3, tostring(r.worst))
    end)
  end

  if id == "cpu" then
    t.test("cpu: conv_dgrad gives the same bits on 1 and 2 threads (4 → 16 channels, 11 samples)", function()
      local g = {c = 4, h = 10, w = 11, k = 3}
      local D, W = from(values(16 * 72, 11, 31)), from(values(16, 36, 33))
      local before, got = threads(), {}
      for i, k in ipairs{1, 2} do
        threads(k)
        got[i] = host(conv_dgrad(D, W, zeros(440, 11), g))
      end
      threads(before)
      for i = 1, #got[1] do
        for j = 1, #got[1][i] do
          assert(got[1][i][j] == got[2][i][j], ("(%d, %d): %.9g on 1 thread, %.9g on 2"):format(
            i, j, got[1][i][j], got[2][i][j]))
        end
      end
    end)
  end
end

-- The v4 path (AVX-512: 2 samples per vector, groups of 8) sums each dx
-- element as the v3 (AVX2) path does: a child under VELA_CPU_ISA=v3 gets the
-- same bits, at 4 → 16 channels, 9 × 11 → dz rows of 9 (a full run and a
-- masked one), 11 samples (a full group of 8 and one of 3); both against
-- float64. A CPU without AVX-512 runs v3 in both.
if (os.getenv("VELA_CPU_ISA") or "") == "" then  -- this process on the detected path, as the first child
  local child = dofile("tests/lua/helpers/child.lua")
  t.test("cpu: conv_dgrad's v4 and v3 paths give the same bits (11 samples, dz rows of 9)", function()
    -- The inputs' values, one formula for the child and the float64 reference here.
    local vals_src = [==[
      local function vals(r, c, seed)
        local m = {}
        for i = 1, r do
          m[i] = {}
          for j = 1, c do m[i][j] = ((i * 37 + j * 101 + seed * 7919) % 1999) / 999.5 - 1 end
        end
        return m
      end
    ]==]
    local code = vals_src .. [==[
      vela.device("cpu")
      local g = {c = 4, h = 9, w = 11, k = 3}
      local dx = conv_dgrad(from(vals(16 * 63, 11, 1)), from(vals(16, 36, 2)), zeros(396, 11), g)
      local out = {}
      for i = 1, 396 do for j = 1, 11 do out[#out + 1] = ("%a"):format(dx:get(i, j)) end end
      print(vela.device("cpu"):info().limits.loops)
      print(table.concat(out, " "))
    ]==]
    local runs = {}
    for _, isa in ipairs{"unset", "v3"} do
      local status, out = child.run(code, (isa == "unset" and "env -u VELA_CPU_ISA" or "env VELA_CPU_ISA=v3") ..
                                    " timeout 60")
      assert(status == 0, out)
      local loops, values = out:match("^([^\n]*)\n(.*)$")
      runs[isa] = {loops = loops, values = {}}
      for w in values:gmatch("%S+") do table.insert(runs[isa].values, w) end
    end
    assert(runs.v3.loops:find("x86-64-v3", 1, true) == 1, runs.v3.loops)
    -- the unset child takes this process's path: v4 where the CPU has AVX-512
    assert(runs.unset.loops == device("cpu"):info().limits.loops, runs.unset.loops)
    print("  (conv_dgrad: " .. runs.unset.loops .. " against x86-64-v3)")
    local a, b = runs.unset.values, runs.v3.values
    assert(#a == 396 * 11 and #b == 396 * 11, ("%d and %d values"):format(#a, #b))
    -- the same values in float64
    local vals = load(vals_src .. " return vals")()
    local g = {c = 4, h = 9, w = 11, k = 3}
    local D, W = vals(16 * 63, 11, 1), vals(16, 36, 2)
    -- float32 inputs, as the child's matrices hold them
    local function f32(m)
      for _, row in ipairs(m) do for j, v in ipairs(row) do row[j] = string.unpack("f", string.pack("f", v)) end end
      return m
    end
    local X, A = want_dgrad(f32(D), f32(W), g, 11)
    local got = {}
    for i = 1, 396 do
      got[i] = {}
      for j = 1, 11 do
        local k = (i - 1) * 11 + j
        assert(a[k] == b[k], ("dx(%d, %d): %s on %s, %s on v3"):format(i, j, a[k], runs.unset.loops, b[k]))
        got[i][j] = tonumber(a[k])
      end
    end
    close(got, X, A, 16 * 9, "dx")
  end)
  child.done()
end

print(("(cpu path: %s)"):format(os.getenv("VELA_CPU_ISA") == "base" and "scalar loops" or "the CPU's best"))
t.done()

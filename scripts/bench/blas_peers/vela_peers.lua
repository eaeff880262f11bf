-- vela's own side of run.sh: its mm at the shapes of shapes.txt (the same
-- transposes as lua/vela/nn.lua and lua/vela/conv.lua, so the same OpenBLAS
-- calls, cut across vela's pool), its direct conv kernels at the CNN's two
-- conv layers, the second conv's dx path (from_images, mm, fill, col2im in
-- parts of 10 images, as Conv2d:backward), and the FMA peak, in the lines
-- run.sh reads. Median of `reps` timings of calls lasting >= ms each.
--
--   build/vela scripts/bench/blas_peers/vela_peers.lua THREADS [ms=60] [reps=5] [peak]
local vela = require "vela"
local native = require "vela.bench_native"
local threads = math.tointeger(tonumber(arg[1] or "")) or error("vela_peers.lua: THREADS must be an integer", 0)
local shapes_path = (arg[0]:match("^(.*)/[^/]*$") or ".") .. "/shapes.txt"
local ms, reps = tonumber(arg[2] or 60), math.tointeger(tonumber(arg[3] or 5))
vela.device("cpu")
vela.threads(threads)
print(("kernels vela %s"):format(vela.device("cpu"):info().limits["blas core"]))
if arg[4] == "peak" then
  local peak, isa, per_cpu = native.fma_peak(threads)
  print(("peak vela %d %.1f %.1f %s"):format(threads, peak, per_cpu, isa))
end

local function median(t)
  table.sort(t)
  return t[(#t + 1) // 2]
end

local function time_it(f, flops)
  f()
  vela.sync()
  local t0 = vela.clock()
  f()
  local calls = math.max(1, math.floor(ms / 1e3 / math.max(vela.clock() - t0, 1e-6)))
  local wall, cpu = {}, {}
  for r = 1, reps do
    local w0, c0 = vela.clock(), os.clock()
    for _ = 1, calls do f() end
    local c1, w1 = os.clock(), vela.clock()
    wall[r], cpu[r] = flops * calls / (w1 - w0) / 1e9, flops * calls / (c1 - c0) / 1e9
  end
  return median(wall), median(cpu)
end

-- the shapes of gemm_bench.cpp: shapes.txt beside this script, "name N|T N|T m n k"
local shapes = {}
for line in io.lines(shapes_path) do
  if not line:match("^#") and line:match("%S") then
    local name, ta, tb, m, n, k = line:match("^(%S+)%s+([NT])%s+([NT])%s+(%d+)%s+(%d+)%s+(%d+)%s*$")
    if not name then error(("vela_peers.lua: %s: bad line '%s' (name N|T N|T m n k)"):format(shapes_path, line), 0) end
    shapes[#shapes + 1] = {name, ta == "T", tb == "T", tonumber(m), tonumber(n), tonumber(k)}
  end
end
for i, s in ipairs(shapes) do
  local name, ta, tb, m, n, k = table.unpack(s)
  local a = ta and vela.rand(k, m, i):t() or vela.rand(m, k, i)
  local b = tb and vela.rand(n, k, i + 10):t() or vela.rand(k, n, i + 10)
  local c = vela.zeros(m, n)
  local w, cp = time_it(function() vela.mm(1, a, b, 0, c) end, 2.0 * m * n * k)
  print(("gemm vela %d split %s %.1f %.1f"):format(threads, name, w, cp))
end

-- the conv layers of examples/cnn.lua, batch 128
local B = 128
for _, L in ipairs{{"conv1", 1, 28, 32}, {"conv2", 32, 12, 64}} do
  local name, C, H, O = table.unpack(L)
  local oh = H - 4
  local P = oh * oh
  local g = {c = C, h = H, w = H, k = {5, 5}, stride = {1, 1}, pad = {0, 0}}
  local x, w, bias = vela.rand(C * H * H, B, 1), vela.rand(O, C * 25, 2), vela.rand(O, 1, 3)
  local z, dw, db = vela.rand(O * P, B, 4), vela.zeros(O, C * 25), vela.zeros(O, 1)
  local flops = 2.0 * B * O * P * C * 25
  local fw, fc = time_it(function() vela.conv(x, w, bias, z, g, "relu") end, flops)
  print(("conv vela %d plain %s fwd_relu %.1f %.1f vela.conv"):format(threads, name, fw, fc))
  if name == "conv2" then  -- the first layer computes no dx
    local part = 10  -- Conv2d's part_max: 2^19 // (C·kh·kw·P)
    local u = vela.zeros(P * part, O)
    local cols = vela.zeros(C * 25, P * part)
    local dx = vela.zeros(C * H * H, B)
    local views = {}
    for j = 1, B, part do
      local k = math.min(part, B - j + 1)
      local uk = k == part and u or u:view(1, 1, P * k, O)
      views[#views + 1] = {z:columns(j, k), uk, uk:t(), k == part and cols or cols:columns(1, P * k), dx:columns(j, k)}
    end
    local wt = w:t()
    local dw_, dc_ = time_it(function()
      for _, v in ipairs(views) do
        vela.from_images(v[1], v[2])
        vela.mm(wt, v[3], v[4])
        vela.fill(v[5], 0)
        vela.col2im(v[4], v[5], g)
      end
    end, flops)
    print(("conv vela %d plain %s bwd_data %.1f %.1f from_images+mm+col2im"):format(threads, name, dw_, dc_))
  end
  local ww, wc = time_it(function() vela.conv_wgrad(x, z, dw, db, g) end, flops)
  print(("conv vela %d plain %s bwd_weights %.1f %.1f vela.conv_wgrad"):format(threads, name, ww, wc))
end

-- One convolution kernel called `reps` times at the shapes of examples/cnn.lua's
-- network (batch `batch`), then the time per call: for comparing a kernel's
-- cost before and after a change, under `perf stat -e task-clock` (processor
-- time, which a shared machine distorts less than the wall clock; subtract a
-- run with reps=0 for the set-up, which includes one untimed call).
--
--   build/vela scripts/bench/conv_kernels.lua [device] [kernel] [batch=128] [reps=20]
--
-- kernel: im2col, col2im (conv 32→64, 5×5 on 12×12 images: cols 800 × 64·batch),
-- to_images, from_images (64 channels × 64 positions), maxpool, maxpool_bw
-- (2×2 pools of 32×24×24 images), conv (with relu) and conv_wgrad (dW and db)
-- for the second conv (their windows, GEMM matrix and ones vector are the
-- device's; a Vulkan device keeps them between calls), conv1_wgrad (dW and db
-- of the first conv, 1→32, 5×5 on 28×28: the cpu's one-channel tile), conv_dgrad (dx) and
-- dx_windows (the same dx as nn.conv2d made it before conv_dgrad: per part of
-- 10 images from_images, mm into the part's windows, fill, col2im; Vulkan: the
-- batch as one part). Processor time per
-- call (os.clock: every thread of the process) is printed beside the wall.
local vela = require "vela"
local dev, what = arg[1] or "vulkan:0", arg[2] or "im2col"
local B, reps = math.tointeger(tonumber(arg[3] or 128)), math.tointeger(tonumber(arg[4] or 20))
vela.device(dev)
local g = {c = 32, h = 12, w = 12, k = {5, 5}, stride = {1, 1}, pad = {0, 0}}
local x = vela.rand(32 * 144, B, 1)
local cols = vela.zeros(800, 64 * B)
local u, z, b = vela.rand(64 * B, 64, 2), vela.zeros(64 * 64, B), vela.rand(64, 1, 3)
local pg = {c = 32, h = 24, w = 24, k = {2, 2}, stride = {2, 2}, pad = {0, 0}}
local px = vela.rand(32 * 576, B, 4)
local py, pidx = vela.zeros(32 * 144, B), vela.zeros(32 * 144, B)
local pdx = vela.zeros(32 * 576, B)
vela.maxpool(px, py, pidx, pg)
local w, dw, db = vela.rand(64, 800, 5), vela.zeros(64, 800), vela.zeros(64, 1)
local g1 = {c = 1, h = 28, w = 28, k = {5, 5}, stride = {1, 1}, pad = {0, 0}}
local x1, dw1, db1 = vela.rand(784, B, 6), vela.zeros(32, 25), vela.zeros(32, 1)
local parts = {}  -- dx_windows' parts
for j = 1, B, dev == "cpu" and 10 or B do
  local k = math.min(dev == "cpu" and 10 or B, B - j + 1)
  parts[#parts + 1] = {z = z:columns(j, k), x = x:columns(j, k), u = vela.zeros(64 * k, 64), cols = vela.zeros(800, 64 * k)}
end
local calls = {
  im2col = function() vela.im2col(x, cols, g) end,
  col2im = function() vela.col2im(cols, x, g) end,
  to_images = function() vela.to_images(u, z, b) end,
  from_images = function() vela.from_images(z, u) end,
  maxpool = function() vela.maxpool(px, py, pidx, pg) end,
  maxpool_bw = function() vela.maxpool_backward(py, pidx, pdx, pg) end,
  conv = function() vela.conv(x, w, b, z, g, "relu") end,
  conv_wgrad = function() vela.conv_wgrad(x, z, dw, db, g) end,
  conv1_wgrad = function() vela.conv_wgrad(x1, pdx, dw1, db1, g1) end,
  conv_dgrad = function() vela.conv_dgrad(z, w, x, g) end,
  dx_windows = function()
    for _, p in ipairs(parts) do
      vela.from_images(p.z, p.u); vela.mm(w:t(), p.u:t(), p.cols); vela.fill(p.x, 0); vela.col2im(p.cols, p.x, g)
    end
  end,
}
local call = calls[what]
if not call then error("conv_kernels.lua: unknown kernel " .. tostring(what), 0) end
call()  -- the pipeline is built here, not in the timed calls
vela.sync()
local t0, c0 = vela.clock(), os.clock()
for _ = 1, reps do call() end
vela.sync()
local per = 1000 / math.max(reps, 1)
print(("%s on %s, batch %d: %.2f ms per call (wall), %.2f ms of processor time"):format(what, dev, B,
  (vela.clock() - t0) * per, (os.clock() - c0) * per))

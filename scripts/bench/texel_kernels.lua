-- Processor time per call of the MLP step's kernels outside its products on
-- vulkan:0, at the MNIST MLP's shapes (784-256-10, batch 128): sgd_step of W1
-- (784×256), relu_backward of the hidden layer (256×128), gather_cols of a
-- batch of uint8 images (784×128), mv of 256×128 by a 128-vector (the bias
-- gradient's column sums). Run it with VELA_TEXEL=0 and without to
-- compare the buffer-address shaders with the texel ones (src/vulkan/texel.hpp).
--   build/vela scripts/bench/texel_kernels.lua [calls=200]
local vela = require "vela"
local opts = {calls = 200}
for _, a in ipairs(arg or {}) do
  local k, v = a:match("^(%w+)=(.*)$")
  if k ~= "calls" then error(("texel_kernels.lua: unknown option '%s' (calls)"):format(a)) end
  opts.calls = tonumber(v) or error("texel_kernels.lua: calls must be a number")
end
vela.device("vulkan:0")
local W, G, V = vela.rand(256, 784, 1), vela.rand(256, 784, 2), vela.zeros(256, 784)
local da, a, delta = vela.rand(256, 128, 3), vela.rand(256, 128, 4), vela.zeros(256, 128)
local px = vela.zeros(784, 1000, "uint8")
local batch = vela.zeros(784, 128)
local ones, db = vela.fill(vela.zeros(128, 1), 1), vela.zeros(256, 1)
local cols = {}
for j = 1, 128 do cols[j] = (j * 7) % 1000 + 1 end
local idx = vela.matrix(128, 1, cols, "vulkan:0")
local cases = {
  {"sgd_step 784x256", function() vela.sgd_step(W, G, V, 0.05, 0.9) end},
  {"relu_backward 256x128", function() vela.relu_backward(da, a, delta) end},
  {"gather_cols u8 784x128", function() vela.gather_cols(px, idx, batch, 1 / 255) end},
  {"mv 256x128", function() vela.mv(1, da, ones, 0, db) end},
}
for _, c in ipairs(cases) do
  c[2]() vela.sync()
  local t0, w0 = os.clock(), vela.clock()
  for _ = 1, opts.calls do c[2]() end
  vela.sync()
  local cpu, wall = os.clock() - t0, vela.clock() - w0
  print(("%-24s %8.1f us of cpu a call (%7.1f us wall)"):format(c[1], 1e6 * cpu / opts.calls, 1e6 * wall / opts.calls))
end

-- The second conv of examples/cnn.lua (32 → 64 channels, 5×5, 12×12 images,
-- relu) through nn.conv2d's two backward paths on the cpu: the direct kernels
-- (conv_wgrad for dW and db, conv_dgrad for dx: the default on AVX2) and the
-- windows path (from_images, OpenBLAS products, col2im). Both are float32 in
-- different orders, so they differ by rounding only: prints the largest
-- difference of dx, dW and db beside the largest magnitude of each.
--
--   build/vela scripts/bench/conv_paths.lua [batch=32]
local vela = require "vela"
local nn = require "vela.nn"
local n = 32
for _, a in ipairs(arg) do
  local v = a:match("^batch=(%d+)$")
  if not v then error("conv_paths.lua: unknown argument '" .. a .. "' (batch=N)") end
  n = math.tointeger(tonumber(v))
end
local function layer() return nn.conv2d(32, 64, 5, {activation = "relu", input = {h = 12, w = 12}, seed = 3}) end
local direct, windows = layer(), layer()
local x = vela.rand(32 * 144, n, 1)
direct:forward(x)
local z = windows:forward(x)
if not direct.direct_dgrad then print("conv_paths.lua: the direct dx path does not apply on this cpu") return end
windows.direct_dgrad, windows.direct_wgrad = false, false
local da = vela.randn(z.rows, n, 2)
local function worst(a, b)  -- largest |a − b| and largest |b|
  return vela.max(vela.abs(a - b)), vela.max(vela.abs(b))
end
local dxd, dxw = direct:backward(da):copy(), windows:backward(da):copy()
print(("batch %d: dx differs by at most %.3g (largest |dx| %.3g); dW by %.3g (%.3g); db by %.3g (%.3g)"):format(
  n, select(1, worst(dxd, dxw)), select(2, worst(dxd, dxw)), select(1, worst(direct.dw, windows.dw)),
  select(2, worst(direct.dw, windows.dw)), select(1, worst(direct.db, windows.db)), select(2, worst(direct.db, windows.db))))

-- Many GEMM kernels compiled in one process (the heap kept for the drivers'
-- compilers, docs/results.md 2026-11-28): dense with four activations, two
-- sizes, w plain and transposed, on vulkan:0. Prints the processor time it
-- took. VELA_MM_STAND_IN=0 makes each product compile its own block at once
-- (sixteen blocks); without it the stand-in blocks run them. Run the binaries
-- before and after a change alternately, on the same driver:
-- VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json VELA_MM_STAND_IN=0 build/vela scripts/bench/compile_many.lua
local d = "vulkan:0"
local t = os.clock()
for _, act in ipairs{"identity", "relu", "sigmoid", "tanh"} do
  for _, s in ipairs{{10, 7, 13}, {66, 9, 20}} do
    local m, n, k = s[1], s[2], s[3]
    local w, x, b = vela.rand(m, k, 1, d), vela.rand(k, n, 2, d), vela.rand(m, 1, 3, d)
    local y = vela.zeros(m, n, "float32", d)
    dense(w, x, b, y, act)
    dense(vela.rand(k, m, 4, d):t(), x, b, y, act)
    local _ = y:totable()
  end
end
io.write(string.format("%.2f s of processor time\n", os.clock() - t))

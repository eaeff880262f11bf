-- A trivial user kernel of 1,048,576 invocations on the cpu device (run through
-- the software driver): the cost of the loop probe and of running the grid in
-- parts (issue 24, items 1 and 11). Prints the median of 9 timed calls.
-- VK_ICD_FILENAMES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json build/vela scripts/bench/user_kernel_parts.lua
local cpu = device("cpu")
local k = kernel{args = {a = "matrix"}, size = function(a) return a.rows * a.cols end,
                 glsl = [[ uint r = id() % rows(a) + 1u; uint c = id() / rows(a) + 1u;
                           set(a, r, c, at(a, r, c) * 0.5 + 1.0); ]]}
local a = ones(1024, 1024):to(cpu)
k(a)
local ts = {}
for i = 1, 9 do ts[i] = time(function() k(a) end).seconds end
table.sort(ts)
print(("median %.1f ms"):format(ts[5] * 1e3))

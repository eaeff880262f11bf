-- What the stand-in block's budget costs a process (docs/vulkan.md, first
-- use): 30 products of 128×784·784×128 in a new process, the first ones on
-- the 2×4 stand-in until 2^27 multiply-adds ran (10 products), then the block
-- chosen for them. Compare runs with and without VELA_MM_STAND_IN=0, with
-- warm and empty caches. Prints wall and processor time (os.clock: every
-- thread of the process).
--
--   build/vela scripts/bench/first_use_budget.lua [vulkan:0]
local vela = require "vela"
local id = arg[1] or "vulkan:0"
local w, c0 = vela.clock(), os.clock()
local d = vela.device(id)
local a, b, c = vela.ones(128, 784, d), vela.ones(784, 128, d), vela.zeros(128, 128, d)
for _ = 1, 30 do vela.mm(1, a, b, 0, c) end
local v = c:get(1, 1)
assert(v == 784, "mm gave " .. tostring(v))
print(string.format("%s 30 mm 128x784x128: %.3f s wall, %.3f s cpu", id, vela.clock() - w, os.clock() - c0))

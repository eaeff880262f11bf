-- Run by test_observe.lua with VELA_PERTURB="dense@<device>": that device's
-- dense kernel is perturbed (a planted divergence); diverge must find it at
-- the line inside nn that called dense, and at this file's line that called
-- net:forward. Prints "ok <kernel> <line> <user_line>" or fails.
local nn = require "vela.nn"
local dev, ref = arg[1], arg[2]
device(dev)
local net = nn.sequential{nn.linear(8, 6, "tanh", {seed = 1}), nn.linear(6, 3, nil, {seed = 2})}
local x = rand(8, 5, 3)
local y = zeros(8, 5)
local here = debug.getinfo(1, "S").short_src
local user_line = debug.getinfo(1, "l").currentline + 3
local r = diverge(function()
  tanh(x, y)                      -- agrees: not perturbed
  local out = net:forward(x)      -- the planted divergence is in here
  return out
end, {ref = ref})
assert(r.diverged, "diverge missed the planted divergence: " .. tostring(r))
assert(r.kernel == "dense", "kernel " .. tostring(r.kernel))
assert(r.kernels == 2, "stopped after " .. tostring(r.kernels) .. " kernels, expected the 2nd")
assert(r.user_line == here .. ":" .. user_line, "user line " .. tostring(r.user_line) .. " expected " .. here .. ":" .. user_line)
assert(r.line:find("vela/nn.lua:", 1, true) or r.line:find("nn.lua:", 1, true), "inner line " .. tostring(r.line))
-- The perturbation is v·1.01 + 0.01 on element (1, 1) of the output.
assert(r.row == 1 and r.col == 1, ("at (%d, %d)"):format(r.row, r.col))
local want = math.abs(r.ref_value * 0.01 + 0.01)
assert(math.abs(r.max_abs - want) <= 1e-5 + 1e-3 * want, ("max_abs %.9g, planted %.9g"):format(r.max_abs, want))
assert(tostring(r):find("diverged at kernel 2", 1, true), tostring(r))
print("ok", r.kernel, r.line, r.user_line)

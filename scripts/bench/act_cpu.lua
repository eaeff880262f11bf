-- Milliseconds per call of the cpu's activation kernels on a 512 × 1,024 matrix
-- of values in [-4, 4), median (and min) of 15 runs, and processor time per call (over 0.2 s more):
-- gelu, gelu_prime, gelu_backward, tanh, sigmoid, softmax (of each 512-row column), and beside them the float32
-- maps block.lua's gelu_pair() used on the cpu instead of gelu/gelu_prime (a sigmoid and cheap maps: "wa gelu",
-- "wa gelu′"; the second reuses the first's σ). NumPy's twin:
-- scripts/bench/elementwise_numpy.py --act.
--
--   build/vela scripts/bench/act_cpu.lua [threads]
local vela = require "vela"
if arg and arg[1] then vela.threads(math.tointeger(tonumber(arg[1]))) end
local R, C = 512, 1024
local function m() return vela.zeros(R, C, "cpu") end
local x, y, g, s, t = vela.rand(R, C, 5, "cpu"), m(), vela.rand(R, C, 6, "cpu"), m(), m()
vela.scal(8, x)
vela.add(vela.fill(m(), -4), x)  -- x ← x − 4: uniform in [-4, 4)
local K = 2 * math.sqrt(2 / math.pi)
local runs = {
  {"gelu", function() vela.gelu(x, y) end},
  {"gelu_prime", function() vela.gelu_prime(x, y) end},
  {"gelu_backward", function() vela.gelu_backward(g, x, y) end},
  {"tanh", function() vela.tanh(x, y) end},
  {"sigmoid", function() vela.sigmoid(x, y) end},
  {"softmax", function() vela.softmax(x, y) end},
  {"wa gelu", function()  -- block.lua's former cpu forward
    vela.sqr(x, s); vela.linear_frac(s, K * 0.044715, K, 0, 1); vela.mul(s, x, s)
    vela.sigmoid(s, s); vela.mul(x, s, y)
  end},
  {"wa gelu′", function()  -- its derivative, from the forward's σ in s
    vela.sqr(x, y); vela.linear_frac(y, 3 * K * 0.044715, K, 0, 1); vela.mul(y, x, y)
    vela.linear_frac(s, t, -1, 1, 0, 1); vela.mul(t, s, t); vela.mul(y, t, y); vela.add(y, s, y)
  end},
}
for _ = 1, 3 do for _, r in ipairs(runs) do r[2]() end end  -- warm up (the first timed kernel ran slow)
local out = {}
for _, r in ipairs(runs) do
  local b = vela.bench(r[2], {n = 15, warmup = 2})
  -- Processor time over calls back to back for 0.2 s, not per call: the
  -- process's clock adds another core's running thread only at a tick or
  -- when it stops (scripts/bench/elementwise.lua), so one call on 2 threads
  -- read low.
  local calls, w0, c0 = 0, vela.clock(), os.clock()
  repeat
    r[2]()
    calls = calls + 1
  until vela.clock() - w0 >= 0.2
  local cpu = (os.clock() - c0) / calls
  out[#out + 1] = string.format("%s %.2f (%.2f) cpu %.2f", r[1], b.median * 1e3, b.min * 1e3, cpu * 1e3)
end
print("ms/call (512x1024, cpu, " .. vela.threads() .. " threads; median (min) wall of 15, then the processor "
  .. "time per call over 0.2 s more): " .. table.concat(out, "  "))

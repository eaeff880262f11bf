-- VELA_CPU_ISA end to end: the binary under each path (base, v3, v4). A path
-- the CPU has (its flags in /proc/cpuinfo, read here, not by vela) runs, says so
-- in device("cpu"):info().limits.loops, and its kernels hold their ulp bounds
-- against the op table's float64 references (vela.ops[name].ref); a path it
-- lacks is refused before anything runs, naming what is missing.
-- tests/test_cpu_isa.cpp checks every op of every path in one process.
local t = dofile("tests/lua/t.lua")
local child = dofile("tests/lua/helpers/child.lua")

local has = dofile("tests/lua/helpers/cpu_flags.lua").has
local paths = {
  {"base", true, "x86-64 (SSE2, 4 lanes)"},
  {"v3", has("avx2", "fma", "bmi2"), "x86-64-v3 (AVX2 + FMA, 8 lanes)"},
  {"v4", has("avx2", "fma", "avx512f", "avx512dq", "avx512bw", "avx512vl"), "x86-64-v4 (AVX-512 + FMA, 16 lanes)"},
}

-- In the child: tanh, exp, sigmoid and gelu over [−10, 10], add and relu, each
-- element against its reference in ulps of float32 at the reference, and
-- softmax against float64; prints the path, the worst of each and softmax's bits' hash
-- (the same on every path).
local check = [==[
local n = 20001
local v = {}
for k = 1, n do v[k] = -10 + 20 * (k - 1) / (n - 1) + 1.37e-5 end
local x = vela.matrix(n, 1, v, "cpu")
local function ulps(got, want)
  if want == 0 then return got == 0 and 0 or math.huge end
  local _, e = math.frexp(math.abs(want))
  return math.abs(got - want) / 2.0 ^ (e - 24)
end
local function f32(a) return (string.unpack("f", string.pack("f", a))) end
local out = {vela.device("cpu"):info().limits.loops}
local b = vela.matrix(n, 1, 0.75, "cpu")
local runs = {
  {"tanh", function(y) return vela.tanh(x, y) end}, {"exp", function(y) return vela.exp(x, y) end},
  {"sigmoid", function(y) return vela.sigmoid(x, y) end}, {"gelu", function(y) return vela.gelu(x, y) end},
  {"relu", function(y) return vela.relu(x, y) end}, {"add", function(y) return vela.add(x, b, y) end},
}
for _, r in ipairs(runs) do
  local y = r[2](vela.zeros(n, 1, "cpu"))
  local worst = 0
  for k = 1, n do
    local xk = f32(v[k])
    local want = r[1] == "add" and vela.ops.add.ref(xk, 0.75) or vela.ops[r[1]].ref(xk)
    if math.abs(want) >= 2.0 ^ -126 then worst = math.max(worst, ulps(y:get(k), want)) end
  end
  out[#out + 1] = r[1] .. "=" .. worst
end
-- softmax of each column of a 1001 × 3 matrix (values in [−40, 40)) against
-- float64, and a hash of its bits (FNV-1a) that every path must share
local sm = {}
for k = 1, 3003 do sm[k] = f32(-40 + 80 * ((k * 7919) % 1009) / 1009) end
local z = vela.softmax(vela.matrix(1001, 3, sm, "cpu"), vela.zeros(1001, 3, "cpu"))
local worst, h = 0, 0xcbf29ce484222325
for j = 0, 2 do
  local m, s = -math.huge, 0
  for i = 1, 1001 do m = math.max(m, sm[j * 1001 + i]) end
  -- x − m rounded to float, as the kernel's formula has it (that rounding alone moves e^(x − m) by up to 40 ulp)
  for i = 1, 1001 do s = s + math.exp(f32(sm[j * 1001 + i] - m)) end
  for i = 1, 1001 do
    local got, want = z:get(i, j + 1), math.exp(f32(sm[j * 1001 + i] - m)) / s
    if want >= 2.0 ^ -126 then worst = math.max(worst, ulps(got, want)) end
    for c in string.pack("f", got):gmatch(".") do h = (h ~ c:byte()) * 0x100000001b3 end
  end
end
out[#out + 1] = "softmax=" .. worst
out[#out + 1] = ("bits:%016x"):format(h)
print(table.concat(out, ";"))
]==]
local bounds = {tanh = 3, exp = 3, sigmoid = 3, gelu = 2, relu = 0.5, add = 0.5, softmax = 3}
local softmax_bits = {}

for _, p in ipairs(paths) do
  local name, present, describe = table.unpack(p)
  if present then
    t.test("VELA_CPU_ISA=" .. name .. ": the loops say so and hold their ulp bounds", function()
      local status, out = child.run(check, "env VELA_CPU_ISA=" .. name .. " timeout 60")
      assert(status == 0, out)
      local loops, rest = out:match("^([^;]*);(.-)\n$")
      assert(loops == describe .. ": VELA_CPU_ISA=" .. name, out)
      local seen = 0
      for op, worst in rest:gmatch("(%w+)=([%d.e+-]+)") do
        assert(tonumber(worst) <= bounds[op], ("%s on %s: %s ulp (bound %g)"):format(op, name, worst, bounds[op]))
        seen = seen + 1
      end
      assert(seen == 7, out)
      softmax_bits[name] = assert(rest:match("bits:(%x+)"), out)
      assert(softmax_bits[name] == softmax_bits.base, "softmax's bits on " .. name .. " differ from base's: " .. out)
    end)
  else
    t.test("VELA_CPU_ISA=" .. name .. ": refused, naming what this CPU lacks", function()
      local status, out = child.run("print('ran')", "env VELA_CPU_ISA=" .. name .. " timeout 60")
      assert(status == 1, out)
      assert(out:find("VELA_CPU_ISA=" .. name .. " asks for the " .. describe .. " loops but this CPU lacks", 1, true),
             out)
      assert(not out:find("ran", 1, true), out)
    end)
  end
end

t.test("VELA_CPU_ISA with an unknown path: refused, with the words it takes", function()
  local status, out = child.run("print('ran')", "env VELA_CPU_ISA=avx9 timeout 60")
  assert(status == 1, out)
  assert(out:find("VELA_CPU_ISA is 'avx9' but must be base, v3 or v4", 1, true), out)
end)

t.test("unset: the widest path the CPU has, detected", function()
  local status, out = child.run("print(vela.device('cpu'):info().limits.loops)", "env -u VELA_CPU_ISA timeout 60")
  assert(status == 0, out)
  local widest = paths[3][2] and paths[3] or paths[2][2] and paths[2] or paths[1]
  assert(out == widest[3] .. ": detected\n", out)
end)

child.done()
t.done()

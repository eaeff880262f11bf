-- lavapipe's vector width (vulkan/backend.hpp, set_lavapipe_width): with
-- LP_NATIVE_VECTOR_WIDTH unset, vela sets it to 512 on a processor with
-- AVX-512 (F, BW, DQ, VL: its flags read here from /proc/cpuinfo, not by
-- vela) and leaves Mesa's 256 elsewhere; a value in the environment is
-- respected. Each case is a child vela: lavapipe's subgroup (32 lanes of a
-- float per 1,024 bits) and its "vector width" limit say which, and an mm on
-- it agrees with float64 sums written here. Skipped without lavapipe.
local t = dofile("tests/lua/t.lua")
local child = dofile("tests/lua/helpers/child.lua")

local avx512 = dofile("tests/lua/helpers/cpu_flags.lua").has("avx512f", "avx512bw", "avx512dq", "avx512vl")

local lavapipe
for _, d in ipairs(devices()) do
  if d.usable and (d.driver or ""):find("llvmpipe", 1, true) then lavapipe = true end
end

-- In the child: lavapipe's subgroup, its vector-width line, and the largest
-- error of a 37×53 · 53×29 product against float64 (values k/7 mod 1 − 0.5).
local probe = [==[
for _, d in ipairs(devices()) do
  if d.usable and (d.driver or ""):find("llvmpipe", 1, true) then
    local dev = device(d.id)
    local m, k, n = 37, 53, 29
    local function val(i) return (i * 5 % 7) / 7 - 0.5 end
    local av, bv = {}, {}
    for i = 1, m * k do av[i] = val(i) end
    for i = 1, k * n do bv[i] = val(i + 3) end
    local a, b, c = vela.matrix(m, k, av, "float32", d.id), vela.matrix(k, n, bv, "float32", d.id), vela.zeros(m, n, d.id)
    vela.mm(1, a, b, 0, c)
    local got, worst = c:totable(), 0
    for i = 1, m do
      for j = 1, n do
        local s = 0
        for p = 1, k do s = s + av[(p - 1) * m + i] * bv[(j - 1) * k + p] end  -- column-major
        worst = math.max(worst, math.abs(got[i][j] - s))
      end
    end
    print(("subgroup=%d worst=%.3g"):format(d.subgroup, worst))
    print("width=" .. dev:info().limits["vector width"])
  end
end
]==]

local function run(prefix)
  local status, out = child.run(probe, "env " .. prefix .. " timeout 60")
  assert(status == 0, out)
  local sub, worst = out:match("subgroup=(%d+) worst=(%S+)")
  assert(sub, "no lavapipe in the child: " .. out)
  assert(tonumber(worst) < 1e-5, "mm off by " .. worst .. " against float64")
  return tonumber(sub), out:match("width=([^\n]*)")
end

if not lavapipe then
  t.test("lavapipe's vector width: skipped (no lavapipe here)", function() end)
else
  t.test("LP_NATIVE_VECTOR_WIDTH unset: 512 bits on AVX-512, Mesa's default elsewhere", function()
    local sub, how = run("-u LP_NATIVE_VECTOR_WIDTH")
    if avx512 then
      assert(sub == 16, "subgroup " .. sub)
      assert(how == "512 bits: LP_NATIVE_VECTOR_WIDTH=512, set by vela for this AVX-512 processor "
        .. "(LP_NATIVE_VECTOR_WIDTH=256 keeps Mesa's default)", how)
    else
      assert(sub == 8, "subgroup " .. sub)
      assert(how == "256 bits: Mesa's default (LP_NATIVE_VECTOR_WIDTH unset)", how)
    end
  end)
  t.test("LP_NATIVE_VECTOR_WIDTH=256 in the environment: respected", function()
    local sub, how = run("LP_NATIVE_VECTOR_WIDTH=256")
    assert(sub == 8, "subgroup " .. sub)
    assert(how == "256 bits: LP_NATIVE_VECTOR_WIDTH=256 (the environment's choice, respected)", how)
  end)
end

child.done()
t.done()

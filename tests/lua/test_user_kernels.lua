-- Kernels written at the prompt (map, kernel): on the cpu and every usable
-- Vulkan device, against float64 references computed here in Lua; cpu and
-- Vulkan agreeing within 2 ulp; compile errors with the user's line numbers;
-- argument errors; grids beyond 65,535 workgroups; 1,000 calls and one host
-- wait; the on-disk cache found by a second process.
local t = dofile("tests/lua/t.lua")

local ids = require("vela.bench_native").devices()  -- "cpu" first, then every usable Vulkan device
assert(ids[1] == "cpu")
ids = t.kernel_devices(ids)

-- A private cache directory, so the disk-cache test starts cold and leaves nothing behind.
local cache = os.tmpname()
os.remove(cache)
assert(os.execute("mkdir -p " .. cache))

-- float32 bits as an ordered integer: ulp distance is a difference.
local function ordered(v)
  local i = string.unpack("<i4", string.pack("<f", v))
  return i < 0 and -2147483648 - i or i
end
local function ulps(a, b) return math.abs(ordered(a) - ordered(b)) end

-- Inputs from -12 to 12, with the awkward ones: tiny, zero, near zero.
local function inputs(rows, cols)
  local v = {}
  for k = 1, rows * cols do v[k] = -12 + 24 * ((k * 0.618034) % 1) end
  v[1], v[2], v[3], v[4] = 0, 1e-6, -1e-6, -0.5
  local m = matrix(rows, cols, v)
  for k = 1, #v do v[k] = string.unpack("<f", string.pack("<f", v[k])) end  -- the float32 inputs the kernels see
  return m, v
end

local function elu_ref(x, a) return x > 0 and x or a * (math.exp(x) - 1) end
local function swish_ref(x) return x / (1 + math.exp(-x)) end

local elu = map[[ x > 0.0 ? x : a * (exp(x) - 1.0) ]]
local swish = map("x / (1.0 + exp(-x))")
local colsum = kernel{args = {a = "matrix", s = "matrix", scale = "float"},
                      size = function(a, s) return a.cols end,
                      glsl = [[ float acc = 0.0;
                                for (uint i = 1; i <= rows(a); ++i) acc += at(a, i, id() + 1);
                                set(s, 1, id() + 1, scale * acc); ]]}

local results = {}  -- id -> {elu = table, swish = table}

for _, id in ipairs(ids) do
  local D = id .. ": "
  local dev = device(id)

  t.test(D .. "map examples against float64", function()
    local xh, v = inputs(37, 29)
    local x = xh:to(dev)
    local y = zeros(37, 29):to(dev)
    assert(elu(x, y, {a = 1.5}) == y, "returns its output")
    local e = y:totable()
    local s = swish(x:copy()):totable()  -- in place
    for k = 1, #v do
      local i, j = (k - 1) % 37 + 1, (k - 1) // 37 + 1
      local re, rs = elu_ref(v[k], 1.5), swish_ref(v[k])
      local bound = 4e-7 * (math.abs(re) + 1.5 * math.exp(math.min(v[k], 0)))  -- exp(x) − 1 cancels near 0
      assert(math.abs(e[i][j] - re) <= bound, ("elu(%g) = %.9g, float64 %.9g"):format(v[k], e[i][j], re))
      assert(math.abs(s[i][j] - rs) <= 4e-7 * math.abs(rs) + 1e-37,
             ("swish(%g) = %.9g, float64 %.9g"):format(v[k], s[i][j], rs))
    end
    results[id] = {elu = e, swish = s}
  end)

  t.test(D .. "map on views and transposes, two inputs", function()
    local big = inputs(50, 40):to(dev)
    local xv = big:view(3, 5, 10, 20)        -- a strided view
    local out = zeros(20, 10):to(dev)
    local add = map("x * y + b")
    local w = big:view(20, 1, 20, 10)        -- another view, no overlap with out
    add(xv:t(), w, out, {b = 0.25})
    local X, W, O = big:totable(), w:totable(), out:totable()
    for i = 1, 20 do
      for j = 1, 10 do
        local ref = X[2 + j][4 + i] * W[i][j] + 0.25
        t.near(O[i][j], ref, 1e-6, ("(%d, %d)"):format(i, j))
      end
    end
    -- a row vector into a column vector of the same length
    local r, c = big:row(2), zeros(40, 1):to(dev)
    map("2.0 * x")(r, c)
    t.near(c:get(7, 1), 2 * big:get(2, 7), 1e-7)
  end)

  t.test(D .. "map: GLSL's meaning of literals, integer division, functions (hand-computed)", function()
    -- what the cpu's native programs (core/map_expr.cpp) must mean exactly as glslang does
    local xh = from{{-2.5, -1, -0.25, 0, 0.5, 1.75, 3}}
    local yh = from{{1, -1, 0.5, 2, -3, 0.25, 3}}
    local x, y = xh:to(dev), yh:to(dev)
    local cases = {
      {"x * (1/2)", function() return 0 end},                 -- int division: 0
      {"x + 7/2", function(a) return a + 3 end},
      {"x + 010 + 0x10", function(a) return a + 8 + 16 end},  -- octal and hex literals
      {"x * 2.0 // a comment naming no scalar", function(a) return 2 * a end},
      {"max(x, 0) + min(x, y)", function(a, b) return math.max(a, 0) + math.min(a, b) end},
      {"float(x > y) + float(x == y)", function(a, b) return (a > b and 1 or 0) + (a == b and 1 or 0) end},
      {"x < 0.0 && y > 0.0 || !(x < 1.0) ? 1.0 : -1.0",
       function(a, b) return ((a < 0 and b > 0) or not (a < 1)) and 1 or -1 end},
      {"clamp(x, -1, 1) + step(0.5, x) + sign(x)",
       function(a) return math.min(math.max(a, -1), 1) + (a < 0.5 and 0 or 1) + (a > 0 and 1 or a < 0 and -1 or 0) end},
      {"mod(x, 0.75) + fract(x) + floor(x)",
       function(a) return a - 0.75 * math.floor(a / 0.75) + (a - math.floor(a)) + math.floor(a) end},
      {"mix(x, y, 0.25)", function(a, b) return a * 0.75 + b * 0.25 end},
    }
    for _, c in ipairs(cases) do
      local f = map(c[1])
      local info = kernel_info(f)
      assert(info.cpu == "native", c[1] .. " runs natively on the cpu")
      local out = zeros(1, 7):to(dev)
      if #info.matrices == 2 then f(x, y, out) else f(x, out) end
      for j = 1, 7 do
        t.near(out:get(1, j), c[2](xh:get(1, j), yh:get(1, j)), 1e-6, ("%s at %g, %g"):format(c[1], xh:get(1, j), yh:get(1, j)))
      end
    end
    -- outside the subset: the cpu runs it through the software driver, same values
    local sw = map("vec2(x, 1.0).x * 2.0 + float(ivec2(3, 4).y)")
    assert(kernel_info(sw).cpu == "driver")
    local out = zeros(1, 7):to(dev)
    sw(x, out)
    for j = 1, 7 do t.near(out:get(1, j), 2 * xh:get(1, j) + 4, 1e-6, "through the driver") end
  end)

  t.test(D .. "kernel: colsum with views and a transpose against float64", function()
    local ah = from{{1, 2, 3}, {4, 5, 6}}
    local a = ah:to(dev)
    local s = zeros(1, 3):to(dev)
    colsum(a, s, {scale = 2})
    local got = s:totable()[1]
    assert(got[1] == 10 and got[2] == 14 and got[3] == 18, "colsum of {{1,2,3},{4,5,6}} times 2")
    local big = inputs(30, 20):to(dev)
    local v = big:view(2, 3, 17, 11):t()     -- 11×17, transposed and strided
    local s2 = zeros(1, 17):to(dev)
    colsum(v, s2, {scale = 0.5})
    local B = big:totable()
    for j = 1, 17 do
      local acc = 0
      for i = 1, 11 do acc = acc + B[1 + j][2 + i] end
      t.near(s2:get(1, j), 0.5 * acc, 1e-5, "colsum of a transposed view, column " .. j)
    end
  end)

  t.test(D .. "kernel: int and uint scalars, out-of-range at/set are safe", function()
    local fillk = kernel{args = {m = "matrix", k = "int", n = "uint"}, size = function(m) return m.rows * m.cols end,
                         glsl = [[ uint i = id() % rows(m) + 1, j = id() / rows(m) + 1;
                                   set(m, i, j, float(k) * float(n) + at(m, i + 1000, j));
                                   set(m, i + 1000, j, 7.0); ]]}
    local m = zeros(5, 4):to(dev)
    fillk(m, {k = -3, n = 4})
    assert(m:get(5, 4) == -12 and m:get(1, 1) == -12)
    t.raises(function() fillk(m, {k = 1.5, n = 4}) end, "scalar 'k' must be an integer")
    t.raises(function() fillk(m, {k = 1, n = -4}) end, "scalar 'n' must be a non-negative integer")
  end)

  t.test(D .. "argument errors", function()
    local x = zeros(2, 3):to(dev)
    t.raises(function() elu(x) end, "scalar 'a' missing")
    t.raises(function() elu(x, x, {a = 1, b = 2}) end, "no scalar parameter named 'b'", "takes: a")
    t.raises(function() elu(x, zeros(3, 2):to(dev), {a = 1}) end, "x is 2×3 but out is 3×2 (shapes must match)")
    t.raises(function() elu(x, 5, {a = 1}) end, "argument #2 (out) must be a matrix, got number")
    t.raises(function() elu(x, x, x, {a = 1}) end, "3 matrices given; expected 1 input (x)")
    t.raises(function() elu(x, {a = "one"}) end, "scalar 'a' must be a number, got string")
    t.raises(function() swish(x, x:view(1, 1, 2, 2)) end, "x is 2×3 but out is 2×2")
    local wide = zeros(2, 4):to(dev)
    t.raises(function() swish(wide:view(1, 1, 2, 3), wide:view(1, 2, 2, 3)) end, "out partially overlaps x")
    t.raises(function() colsum(x, zeros(1, 3):to(dev)) end, "scalar 'scale' missing")
    t.raises(function() colsum(x, x, {scale = 1}) end, "is the same matrix as")
    local u8 = matrix(2, 3):to(dev)
    local other = id == "cpu" and ids[2] or "cpu"
    if other then
      t.raises(function() elu(x, zeros(2, 3):to(other), {a = 1}) end,
               "x is on " .. id .. " but out is on " .. other)
    end
    x:release()
    t.raises(function() swish(x) end, "x is a released matrix")
    assert(u8:get(1, 1) ~= nil)
  end)

  t.test(D .. "a grid beyond 65,535 workgroups", function()
    -- 256 × 65,535 is the most one dimension covers at vela's largest workgroup size
    -- (one element per invocation: a view that starts off a 16-byte boundary takes no vec4 path)
    local n = 256 * 65535 + 1000
    local x = zeros(n + 1, 1):to(dev):view(2, 1, n, 1)
    local inc = map("x + 1.0 + c")
    inc(x, {c = 1})
    assert(x:get(1, 1) == 2 and x:get(n, 1) == 2 and x:get(n - 777, 1) == 2, "every element written")
    t.near(sum(x), 2 * n, 1e-6, "sum")
    x:release()
  end)

  t.test(D .. "profile names user kernels", function()
    local x = ones(16, 16):to(dev)
    local named = map("x * 3.0", {name = "triple"})
    local rows = profile(function() named(x); swish(x) end)
    local seen = {}
    for _, r in ipairs(rows) do seen[r.kernel] = true end
    assert(seen.triple, "profile lists 'triple'")
    assert(seen["map(x / (1.0 + exp(-x)))"], "profile lists an unnamed map by its expression")
  end)

  if id ~= "cpu" then
    t.test(D .. "1,000 calls then one read: one host wait", function()
      local x = zeros(64, 1):to(dev)
      local inc = map("x + 1.0")
      inc(x)
      sync(dev)
      local s0 = dev:stats()
      local w0 = s0.host_waits
      for _ = 1, 1000 do inc(x) end
      local v = x:get(64, 1)
      local w1 = dev:stats().host_waits
      assert(v == 1001, "1,001 increments, got " .. v)
      -- one wait at most: none when the device finished before the read (as under load)
      assert(w1 - w0 <= 1, ("%d host waits for 1,000 calls and one read"):format(w1 - w0))
      local s = dev:stats()
      assert(s.submissions - s0.submissions <= 1000 // 256 + 2,
             ("%d submissions for 1,000 calls: batched, not one per call"):format(s.submissions - s0.submissions))
    end)

  end
end

t.test("cpu and every Vulkan device agree within 2 ulp", function()
  if not t.cpu_kernels() then return end
  local ref = results.cpu
  assert(ref, "cpu results")
  for id, r in pairs(results) do
    for _, what in ipairs{"elu", "swish"} do
      local worst = 0
      for i = 1, #ref[what] do
        for j = 1, #ref[what][i] do worst = math.max(worst, ulps(ref[what][i][j], r[what][i][j])) end
      end
      assert(worst <= 2, ("%s: %s differs from cpu by %d ulp"):format(what, id, worst))
    end
  end
end)

t.test("compile errors name the kernel and the user's line", function()
  local err = t.raises(function() map("x * 2.0 +\n  foo(x)", {name = "bad"}) end, "bad: GLSL compile error",
                       "line 2:", "2 |   foo(x)")
  assert(not err:find("vela_f", 1, true), "no generated names: " .. err)
  t.raises(function()
    kernel{args = {a = "matrix"}, size = 1, glsl = "float s = 0.0;\nfor (uint i = 1; i <= rows(a); ++i)\n  s += at(a, i);"}
  end, "kernel: GLSL compile error", "line 3:", "3 |   s += at(a, i);")
  t.raises(function() map("x / (1.0 + exp(-x)") end, "GLSL compile error", "after line 1:", "1 | x / (1.0 + exp(-x)")
end)

t.test("constructor errors", function()
  t.raises(function() map("   ") end, "map: the expression is empty")
  t.raises(function() map({}) end, "bad argument #1 to 'map'")
  t.raises(function() map("x", {doc = "no name"}) end, "doc needs a name")
  t.raises(function() map("x", {name = "tanh"}) end, "'tanh' is the name of a built-in")
  t.raises(function() map("x", {name = "not ok"}) end, "is not a Lua identifier")
  t.raises(function() kernel{args = {a = "matrix"}, glsl = ""} end, "kernel: size must be an integer or a function")
  t.raises(function() kernel{args = {a = "tensor"}, size = 1, glsl = ""} end, "args.a must be \"matrix\"")
  t.raises(function() kernel{args = {s = "float"}, size = 1, glsl = ""} end, "args has no matrix")
  t.raises(function() kernel{args = {at = "matrix"}, size = 1, glsl = ""} end, "'at' cannot name an argument")
end)

t.test("help: a documented kernel answers ?name", function()
  local f = map("x * x * x", {name = "cube", doc = "x³ elementwise"})
  local info = kernel_info(f)
  assert(info.name == "cube" and info.kind == "map" and info.signature == "cube(x [, out])")
  assert(info.glsl:find("#line 1 \"user\"", 1, true))
  local p = assert(io.popen(("%q -e %q 2>&1"):format(arg[-1],
    "cube = map('x * x * x', {name = 'cube', doc = 'x cubed elementwise'}) help('cube')")))
  local out = p:read("a")
  p:close()
  assert(out:find("cube(x [, out])", 1, true) and out:find("x cubed elementwise", 1, true), out)
end)

t.test("the disk cache serves a second process", function()
  local expr = ("x * %d.5 + 1.0"):format(os.time() % 100000)
  local code = ("local f = map(%q); local i = kernel_info(f); io.write(i.compiled, ' ', i.compile_ms)"):format(expr)
  local function run()
    local p = assert(io.popen(("XDG_CACHE_HOME=%q %q -e %q 2>&1"):format(cache, arg[-1], code)))
    local out = p:read("a")
    p:close()
    return out
  end
  local first, second = run(), run()
  assert(first:match("^compiled "), "first process compiles: " .. first)
  assert(second:match("^disk "), "second process reads the disk cache: " .. second)
  local ms = tonumber(second:match("^disk (%S+)"))
  print(("  disk cache hit in a second process: %.3f ms (compile: %s ms)"):format(ms, first:match("^compiled (%S+)")))
  assert(ms < 50)
end)

t.test("a process that runs a kernel on the cpu through the driver exits cleanly", function()
  if not t.cpu_kernels() then return end  -- the runner's Vulkan device is destroyed before the context it came from, whichever was made first
  local code = [[device("cpu"); local f = map("vec2(x, 1.0).x + 1.0"); local x = zeros(4, 1); f(x); io.write(x:get(4, 1))]]
  local p = assert(io.popen(("%q -e %q 2>&1"):format(arg[-1], code)))
  local out = p:read("a")
  local ok, how, status = p:close()
  assert(ok and status == 0 and tonumber(out) == 1, ("exit %s %s: %s"):format(how, status, out))
end)

t.test("nn.linear with a user activation: forward and backward against float64", function()
  local nn = require "vela.nn"
  local sw = map("x / (1.0 + exp(-x))", {name = "swish_t"})
  local swp = map("sigmoid(x) * (1.0 + x * (1.0 - sigmoid(x)))")
  for _, id in ipairs(ids) do
    local l = nn.linear(3, 2, {f = sw, df = swp, seed = 7, device = id})
    assert(tostring(l) == "linear(3→2, swish_t)", tostring(l))
    local x = from{{0.5, -1}, {2, 0.25}, {-0.75, 1.5}}:to(id)
    local a = l:forward(x):totable()
    local W, X, B = l.w:totable(), x:totable(), l.b:totable()
    local da = from{{1, -2}, {0.5, 3}}:to(id)
    l:backward(da, false)
    local DA, DW = da:totable(), l.dw:totable()
    local delta = {}
    for i = 1, 2 do
      delta[i] = {}
      for j = 1, 2 do
        local z = B[i][1]
        for k = 1, 3 do z = z + W[i][k] * X[k][j] end
        local s = 1 / (1 + math.exp(-z))
        t.near(a[i][j], z * s, 1e-5, id .. " forward")
        delta[i][j] = DA[i][j] * s * (1 + z * (1 - s))
      end
    end
    for i = 1, 2 do
      for k = 1, 3 do t.near(DW[i][k], delta[i][1] * X[k][1] + delta[i][2] * X[k][2], 1e-5, id .. " dW") end
    end
  end
  t.raises(function() nn.linear(3, 2, {f = sw}) end, "opts.f and opts.df must both be kernels")
  t.raises(function() nn.linear(3, 2, "relu", {f = sw, df = swp}) end, "not both")
  local net = nn.sequential{nn.linear(3, 2, {f = sw, df = swp})}
  t.raises(function() net:save(os.tmpname()) end, "written at the prompt")
end)

t.test("diverge re-runs a user kernel on the reference device and names it", function()
  local other = ids[2]
  if not other then return end
  local sw = map("x / (1.0 + exp(-x))", {name = "swish_d"})
  local before = device()
  device(other)
  local r = diverge(function() return sw(rand(8, 8), zeros(8, 8)) end)
  device(before)
  assert(r.kernels == 1 and not r.diverged, tostring(r))
  assert(r.worst.kernel == "swish_d", "diverge names the kernel: " .. tostring(r.worst.kernel))
end)

os.execute("rm -rf " .. cache)
t.done()

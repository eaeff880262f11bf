-- A seeded random-API fuzzer: calls vela's documented surface with valid and
-- invalid arguments (views, aliasing, released matrices, matrices on another
-- device, NaN/Inf/huge numbers), keeps a host model of every buffer and
-- checks, after each call:
--   * a call the model says is valid succeeds and leaves the values the model computes;
--   * a call the model says is invalid fails with a message naming the function,
--     and changes nothing (every matrix is compared with the model regularly);
--   * no error is a Lua runtime error in our code or an "internal error";
--   * no matrix changes shape;
--   * labels and column indices that are not integers in range are an error
--     naming the function and the first bad position: at the call on cpu, at
--     the next read or sync on a Vulkan device (docs/lua-api.md, "Edge inputs");
--   * a matrix saved with vela.save and a net saved with nn.save load back
--     (onto any device) as they were; a truncated file is an error naming load;
--   * a hostile file (bytes changed, header sizes and types rewritten, zip
--     sizes made huge, a checkpoint's manifest replaced by code or garbage)
--     loads or is an error naming vela.load / nn.load, and nothing in it runs.
--   * training with NaN: a bad optimizer hyperparameter is an error that
--     changes nothing, and nn.fit stops on a non-finite loss before applying
--     that batch's update.
-- On a device that flushes denormals to zero (SwiftShader; seen at the start)
-- the model flushes the inputs, scalars and results of arithmetic too.
-- Crashes, sanitizer reports and hangs end the process (CTest sees them).
--
--   build/vela tests/fuzz/fuzz.lua                     50,000 calls per device, a new seed
--   VELA_FUZZ_SEED=123 build/vela tests/fuzz/fuzz.lua  replay a seed
--   VELA_FUZZ_CALLS=500000 build/vela tests/fuzz/fuzz.lua   a longer run
--   VELA_FUZZ_DEVICES=cpu,vulkan:0                     which devices (default: every usable one)
--   VELA_FUZZ_SELFTEST=1                               corrupts the model once: the run must fail
--                                                      (CTest's fuzz.selftest: the checks can fail)
local vela = require "vela"

local seed = tonumber(os.getenv("VELA_FUZZ_SEED") or "") or
  (os.time() * 1000003 + math.floor(os.clock() * 1e6)) % 2147483647
local calls = tonumber(os.getenv("VELA_FUZZ_CALLS") or "") or 50000
local fmt = string.format

local ids = {}
local want = os.getenv("VELA_FUZZ_DEVICES")
for _, d in ipairs(vela.devices()) do
  if d.usable and (not want or ("," .. want .. ","):find("," .. d.id .. ",", 1, true)) then ids[#ids + 1] = d.id end
end
print(fmt("fuzz: seed %d, %d calls per device on %s (replay: VELA_FUZZ_SEED=%d)", seed, calls,
  table.concat(ids, ", "), seed))
io.stdout:flush()

math.randomseed(seed)
local R = math.random
local function pick(t) return t[R(#t)] end

local function f32(x) return (string.unpack("<f", string.pack("<f", x))) end
local function finite(x) return x == x and x ~= math.huge and x ~= -math.huge end

-- Devices that flush denormals to zero (the Vulkan specification allows it;
-- SwiftShader does), seen at the start: 1·1e-40 read back is 0. When a run
-- has one, denormals count as zeros in every comparison, and arithmetic whose
-- result depends on whether its denormal inputs were flushed takes the
-- device's value (the model computes both ways; see arith).
local flushes = {}
local FLUSHY = false
local TINY = 2.0 ^ -126
local function fz(x)
  if FLUSHY and x ~= 0 and x == x and math.abs(x) < TINY then return x < 0 and -0.0 or 0.0 end
  return x
end
-- f(...) on the model's values: the result (flushed where the run flushes) and
-- whether flushing the inputs would change it (then the cell is wild: the
-- next check takes the device's value).
local function arith(f, ...)
  local v = f(...)
  if not FLUSHY then return v, false end
  local args, n, any = table.pack(...), select("#", ...), false
  for i = 1, n do
    local a = args[i]
    if type(a) == "number" and fz(a) ~= a then args[i] = fz(a); any = true end
  end
  if not any then return fz(v), false end
  local w = fz(f(table.unpack(args, 1, n)))
  local same_v = (w ~= w and v ~= v) or fz(v) == w
  return w, not same_v
end

-- ---------------------------------------------------------------------------
-- The model: a base buffer is a host store (dense column-major of the base
-- matrix); an entry is a view on a base: logical (i, j) (0-based) lives at
-- base row r0 + (tr and j or i), column c0 + (tr and i or j).
-- ---------------------------------------------------------------------------

local entries = {}       -- every matrix the fuzzer holds
local findings = {}
local stats = {calls = 0, ok = 0, errors = 0, garbage = 0, checks = 0, deferred = 0, index_errors = 0, files = 0,
               trainings = 0, nan_stops = 0}
local current_call = ""

local function finding(msg)
  findings[#findings + 1] = msg
  io.stderr:write(fmt("FINDING (seed %d, call %d: %s): %s\n", seed, stats.calls, current_call, msg))
  if #findings >= 20 then
    io.stderr:write("fuzz: too many findings, stopping\n")
    os.exit(1)
  end
end

local function cell(e, i, j)
  local r = e.r0 + (e.tr and j or i)
  local c = e.c0 + (e.tr and i or j)
  return r + c * e.base.rows + 1
end

local function model_get(e, i, j) return e.base.store[cell(e, i, j)] end
local function model_set(e, i, j, v, wild)
  local k = cell(e, i, j)
  e.base.store[k] = v
  -- wild: the value depends on rounding the model cannot know (a·x + y fused
  -- or not, near the float32 overflow); the next check takes the device's.
  e.base.wild[k] = wild or nil
end

local selftest = os.getenv("VELA_FUZZ_SELFTEST") == "1"
local check  -- defined below

local function new_entry(m, dev, dtype, values)
  local base = {rows = m.rows, cols = m.cols, store = {}, wild = {}, released = false, dev = dev, dtype = dtype}
  for k = 1, m.rows * m.cols do base.store[k] = values and values[k] or 0 end
  local e = {m = m, base = base, rows = m.rows, cols = m.cols, r0 = 0, c0 = 0, tr = false}
  entries[#entries + 1] = e
  return e
end

local function derive(e, m, i, j, rows, cols, transpose)
  local d = {m = m, base = e.base, rows = rows, cols = cols, tr = e.tr}
  if transpose then
    d.r0, d.c0, d.tr = e.r0, e.c0, not e.tr
  else
    d.r0 = e.r0 + (e.tr and j or i)
    d.c0 = e.c0 + (e.tr and i or j)
  end
  entries[#entries + 1] = d
  return d
end

local function live(e) return not e.base.released end

-- Labels and indices on a Vulkan device are checked as the kernel runs; a bad
-- one is raised, once, by the device's next read, sync or reduction:
-- "an earlier call on vulkan:0 failed: softmax_xent: labels at position 3 …".
-- maybe_bad[dev]: a call that may have had bad ones (a garbage softmax_xent or
-- gather_cols) ran on dev since the last sync that raised nothing. Such an
-- error is then expected at any read, which is repeated; anywhere else it is a finding.
local maybe_bad = {}
local function deferred(msg)
  return tostring(msg):match("an earlier call on (%S+) failed: [%w_]+: [%w_]+ at position %d+ is not ")
end
local function expected_deferred(msg)
  local d = deferred(msg)
  if d and maybe_bad[d] then
    stats.deferred = stats.deferred + 1
    return true
  end
  return false
end

-- m:totable(), repeated after an expected label error from an earlier call.
local function totable(m)
  for _ = 1, 8 do
    local ok, t = pcall(m.totable, m)
    if ok then return t end
    if not expected_deferred(t) then error(t, 0) end
  end
  error("a label error from an earlier call was raised eight times over", 0)
end

-- Values read back from the device, column-major logical order.
local function actual(e)
  local t = totable(e.m)
  local out = {}
  for i = 1, e.rows do
    local row = t[i]
    for j = 1, e.cols do out[(i - 1) + (j - 1) * e.rows + 1] = row[j] end
  end
  return out
end

local function same(a, b, tol)
  a, b = fz(a), fz(b)
  if a ~= a then return b ~= b end
  if b ~= b then return false end
  if a == b then return true end
  if not finite(a) or not finite(b) then return false end
  return math.abs(a - b) <= (tol or 1e-5) * math.max(1, math.abs(b))
end

-- Compares an entry with the model (shape and every value).
check = function(e, what, tol)
  if not live(e) then return end
  stats.checks = stats.checks + 1
  if e.m.rows ~= e.rows or e.m.cols ~= e.cols then
    finding(fmt("%s: shape changed from %d×%d to %d×%d", what, e.rows, e.cols, e.m.rows, e.m.cols))
    return
  end
  local ok, got = pcall(actual, e)
  if not ok then
    finding(fmt("%s: reading a live matrix failed: %s", what, tostring(got)))
    return
  end
  -- The self-test corrupts the first cell the model knows exactly (not wild), at the first check
  -- whose model is complete (a constructor's entry may still be filled in by its caller, so the
  -- corruption is made here, never at creation). NaN and ±Inf become 0, a value below 1 in size
  -- moves by 2 and a larger one changes sign: differences no tolerance of the checks accepts
  -- (the largest, 1e-4, is relative above 1 and absolute below).
  local corrupted = false
  if selftest and e.rows * e.cols > 0 and not e.base.wild[cell(e, 0, 0)] then
    local v = model_get(e, 0, 0)
    model_set(e, 0, 0, not finite(v) and 0 or math.abs(v) < 1 and v + 2 or -v)
    selftest, corrupted = false, true
  end
  for j = 0, e.cols - 1 do
    for i = 0, e.rows - 1 do
      local want_v, got_v = model_get(e, i, j), got[i + j * e.rows + 1]
      if e.base.wild[cell(e, i, j)] or (FLUSHY and got_v ~= want_v and fz(got_v) == fz(want_v)) then
        model_set(e, i, j, got_v)  -- (a denormal kept or flushed: the device's from now on)
      elseif not same(got_v, want_v, tol) then
        finding(fmt("%s: element (%d, %d) of a %d×%d %s matrix on %s is %.9g, the model says %.9g", what, i + 1,
          j + 1, e.rows, e.cols, e.base.dtype, e.base.dev, got_v, want_v))
        -- resynchronise, so one finding is not reported at every later check
        for jj = 0, e.cols - 1 do for ii = 0, e.rows - 1 do model_set(e, ii, jj, got[ii + jj * e.rows + 1]) end end
        if corrupted then os.exit(1) end
        return
      end
    end
  end
  if corrupted then
    -- The self-test has its answer here (the finding CTest's fuzz.selftest matches, or none): the
    -- calls after it would only repeat the fuzz test's (half a minute of the sanitized lavapipe pass).
    io.stderr:write("fuzz: the self-test's corrupted value was not found\n")
    os.exit(1)
  end
end

-- After a call that may have written `e` in a way the model does not
-- compute (a garbage call that succeeded), take the device's values.
local function resync(e)
  if not live(e) or e.rows * e.cols == 0 then return end
  local ok, got = pcall(actual, e)
  if not ok then return end
  for j = 0, e.cols - 1 do for i = 0, e.rows - 1 do model_set(e, i, j, got[i + j * e.rows + 1]) end end
end

-- ---------------------------------------------------------------------------
-- Random inputs
-- ---------------------------------------------------------------------------

local special = {0 / 0, math.huge, -math.huge, 1e38, -1e38, 3.5e38, 1e-40, -0.0, 2 ^ 24 + 1}
local function number()
  local r = R()
  if r < 0.05 then return pick(special) end
  if r < 0.5 then return R(-4, 4) end
  return (R() - 0.5) * 8
end

local weird_ints = {0, -1, -7, math.maxinteger, math.mininteger, 2 ^ 31, 2 ^ 31 - 1, 2 ^ 53, 1e300, 0.5, -0.0,
  0 / 0, math.huge, -math.huge, 2 ^ 63}
-- An index for a dimension of extent n: mostly valid, sometimes not.
local function index(n)
  if R() < 0.85 and n > 0 then return R(1, n) end
  return pick(weird_ints)
end

local function size()
  local r = R()
  if r < 0.1 then return 0 end
  if r < 0.9 then return R(1, 5) end
  return R(6, 12)
end

local function any_entry(filter)
  if #entries == 0 then return nil end
  for _ = 1, 8 do
    local e = entries[R(#entries)]
    if not filter or filter(e) then return e end
  end
  return nil
end

local function f32_entry() return any_entry(function(e) return e.base.dtype == "float32" end) end

-- ---------------------------------------------------------------------------
-- Calls
-- ---------------------------------------------------------------------------

-- Runs fn; `valid` says whether it must succeed (true), must fail (false)
-- or may do either ("either"). names: strings one of which the message must contain.
local function attempt(names, valid, fn)
  stats.calls = stats.calls + 1
  local ok, res = pcall(fn)
  -- a label error from an earlier call, raised by this call's wait: expected
  -- after a possibly bad call; the call (a read: nothing else waits) is repeated
  for _ = 1, 8 do
    if ok or not expected_deferred(res) then break end
    ok, res = pcall(fn)
  end
  if ok then
    stats.ok = stats.ok + 1
    if valid == false then finding(fmt("succeeded, but the model says it must fail")) end
    return true, res
  end
  stats.errors = stats.errors + 1
  local msg = tostring(res)
  if valid == true then finding("failed, but the model says it must succeed: " .. msg) end
  if msg:find("internal error", 1, true) or msg:find("attempt to ", 1, true) or msg:find("stack overflow", 1, true) then
    finding("an error that is a bug, not a message: " .. msg)
  end
  local named = false
  for _, n in ipairs(names) do if msg:find(n, 1, true) then named = true end end
  if not named then finding(fmt("the error does not name %s: %s", table.concat(names, " or "), msg)) end
  return false, msg
end

local dev_ids

local function other_dev(dev)
  if #dev_ids < 2 then return dev end
  local o = pick(dev_ids)
  return o
end

-- Vector orientation rule of the level-1 kernels: equal shapes, or two vectors of one length.
local function compatible(x, y)
  if x.rows == y.rows and x.cols == y.cols then return true, false end
  local xv, yv = x.rows == 1 or x.cols == 1, y.rows == 1 or y.cols == 1
  if xv and yv and x.rows * x.cols == y.rows * y.cols then return true, true end
  return false
end

-- Logical element k (0-based, column-major; vectors read in order) of e.
local function elem(e, k)
  if e.rows == 1 then return model_get(e, 0, k) end
  if e.cols == 1 then return model_get(e, k, 0) end
  return model_get(e, k % e.rows, k // e.rows)
end
local function set_elem(e, k, v, wild)
  if e.rows == 1 then return model_set(e, 0, k, v, wild) end
  if e.cols == 1 then return model_set(e, k, 0, v, wild) end
  return model_set(e, k % e.rows, k // e.rows, v, wild)
end

-- The base cells of an entry, and whether two entries overlap / are the same elements in order.
local function cells(e)
  local s = {}
  for j = 0, e.cols - 1 do for i = 0, e.rows - 1 do s[cell(e, i, j)] = true end end
  return s
end
local function overlap(a, b)
  if a.base ~= b.base then return false end
  local s = cells(a)
  for k in pairs(cells(b)) do if s[k] then return true end end
  return false
end
local function same_elements(a, b)
  if a.base ~= b.base or a.rows * a.cols ~= b.rows * b.cols then return false end
  local n = a.rows * a.cols
  for k = 0, n - 1 do
    local ca, cb
    if a.rows == 1 or a.cols == 1 then ca = cell(a, a.cols == 1 and k or 0, a.cols == 1 and 0 or k)
    else ca = cell(a, k % a.rows, k // a.rows) end
    if b.rows == 1 or b.cols == 1 then cb = cell(b, b.cols == 1 and k or 0, b.cols == 1 and 0 or k)
    else cb = cell(b, k % b.rows, k // b.rows) end
    if ca ~= cb then return false end
  end
  return (a.rows == b.rows and a.cols == b.cols) or ((a.rows == 1 or a.cols == 1) and (b.rows == 1 or b.cols == 1))
end

-- Callers that name the function at the call site, as a user at the prompt
-- does: Lua's "bad argument #1 to 'axpy'" takes the name from there.
local compiled = {}
local function compile(src)  -- each source compiled once
  local c = compiled[src]
  if not c then
    c = assert(load(src))
    compiled[src] = c
  end
  return c
end
local function caller(name)
  local c = compile(fmt("local vela, a = ... return vela.%s(table.unpack(a, 1, a.n))", name))
  return function(...) return c(vela, table.pack(...)) end
end
local function method_caller(name)
  return compile(fmt("local m, a = ... return m:%s(table.unpack(a, 1, a.n))", name))
end

-- Sizes (numbers or numeric strings, as Lua converts them) whose product would
-- really allocate much: left out, the limits are tested by tests/lua/test_faults.lua.
local function too_big(a, b)
  a, b = tonumber(a), tonumber(b)
  if not a or not b then return false end
  local p = math.abs(a) * math.abs(b)
  return p > 2 ^ 20 and p < 2 ^ 41
end

local ops = {}

-- An op on one held matrix: pick draws it (any_entry, f32_entry); none held, the op does nothing.
local function on_entry(pick, body)
  ops[#ops + 1] = function(dev)
    local e = pick()
    if e then return body(e, dev) end
  end
end

-- constructors
ops[#ops + 1] = function(dev)
  local r, c = size(), size()
  local kind = R(5)
  local dtype = R() < 0.2 and "uint8" or "float32"
  if kind == 1 then
    current_call = fmt("zeros(%d, %d, %q, %q)", r, c, dtype, dev)
    local ok, m = attempt({"zeros"}, true, function() return vela.zeros(r, c, dtype, dev) end)
    if ok then new_entry(m, dev, dtype) end
  elseif kind == 2 then
    current_call = fmt("ones(%d, %d, %q, %q)", r, c, dtype, dev)
    local ok, m = attempt({"ones"}, true, function() return vela.ones(r, c, dtype, dev) end)
    if ok then local v = {} for k = 1, r * c do v[k] = 1 end new_entry(m, dev, dtype, v) end
  elseif kind == 3 then
    local v = {}
    for k = 1, r * c do v[k] = dtype == "uint8" and R(0, 255) or f32(number()) end
    current_call = fmt("matrix(%d, %d, {…}, %q, %q)", r, c, dtype, dev)
    local ok, m = attempt({"matrix"}, true, function() return vela.matrix(r, c, v, dtype, dev) end)
    if ok then new_entry(m, dev, dtype, v) end
  elseif kind == 4 then
    current_call = fmt("rand(%d, %d, seed, %q)", r, c, dev)
    local ok, m = attempt({"rand"}, true, function() return vela.rand(r, c, R(0, 1000), dev) end)
    if ok then
      local e = new_entry(m, dev, "float32")
      resync(e)
      for k = 1, r * c do
        local x = e.base.store[k]
        if not (x >= 0 and x < 1) then finding(fmt("rand gave %.9g, outside [0, 1)", x)) end
      end
    end
  else
    -- invalid sizes and options
    local args = {pick{r, -1, 2.5, 0 / 0, math.maxinteger, 1e9, "2"}, pick{c, -3, 1e9, math.huge}, pick{"uint8", "float32", "float64", dev, "nope", 7}, pick{nil, "float32", dev, "uint8"}}
    local fn = pick{"zeros", "ones", "matrix", "rand", "randn"}
    current_call = fmt("%s(%s, %s, %s, %s)", fn, tostring(args[1]), tostring(args[2]), tostring(args[3]), tostring(args[4]))
    -- Refuse sizes that would really allocate a lot (a few in (2^22, 2^34) elements).
    if too_big(args[1], args[2]) then return end
    local ok, m = attempt({fn}, "either", function() return caller(fn)(args[1], args[2], args[3], args[4]) end)
    if ok and m then pcall(m.release, m) end
  end
end

-- views
on_entry(any_entry, function(e)
  local kind = R(5)
  local m = e.m
  if kind == 1 then
    local i, j = index(e.rows + 1), index(e.cols + 1)
    local r, c = R(0, e.rows), R(0, e.cols)
    if R() < 0.1 then r = pick(weird_ints) end
    local valid = math.type(i) == "integer" and math.type(j) == "integer" and math.type(r) == "integer" and
      math.type(c) == "integer" and i >= 1 and j >= 1 and r >= 0 and c >= 0 and i - 1 <= e.rows and
      j - 1 <= e.cols and r <= e.rows - (i - 1) and c <= e.cols - (j - 1) and (i <= e.rows or r == 0) and (j <= e.cols or c == 0) and live(e)
    if math.type(i) == "float" or math.type(j) == "float" or math.type(r) == "float" then valid = "either" end
    if not live(e) then valid = false end
    current_call = fmt("m:view(%s, %s, %s, %s) of %d×%d", tostring(i), tostring(j), tostring(r), tostring(c), e.rows, e.cols)
    local ok, v = attempt({"view"}, valid, function() return m:view(i, j, r, c) end)
    if ok and v then
      if v.rows ~= r or v.cols ~= c then finding("m:view gave the wrong shape") return end
      check(derive(e, v, i - 1, j - 1, r, c), "m:view")
    end
  elseif kind == 2 or kind == 3 then
    local is_row = kind == 2
    local n = is_row and e.rows or e.cols
    local k = index(n)
    local valid = math.type(k) == "integer" and k >= 1 and k <= n and live(e)
    if math.type(k) == "float" and k == math.floor(k) and k >= 1 and k <= n then valid = live(e) end
    current_call = fmt("m:%s(%s) of %d×%d", is_row and "row" or "col", tostring(k), e.rows, e.cols)
    local ok, v = attempt({is_row and "row" or "col"}, valid, function() if is_row then return m:row(k) end return m:col(k) end)
    if ok and v then
      local d = is_row and derive(e, v, k - 1, 0, 1, e.cols) or derive(e, v, 0, k - 1, e.rows, 1)
      check(d, "m:row/col")
    end
  elseif kind == 4 then
    local j, n = index(e.cols + 1), R(0, e.cols)
    if R() < 0.1 then n = pick(weird_ints) end
    local valid = math.type(j) == "integer" and math.type(n) == "integer" and j >= 1 and n >= 0 and
      j - 1 <= e.cols and n <= e.cols - (j - 1) and (j <= e.cols or n == 0) and live(e)
    if math.type(j) == "float" or math.type(n) == "float" then valid = "either" end
    if not live(e) then valid = false end
    current_call = fmt("m:columns(%s, %s) of %d×%d", tostring(j), tostring(n), e.rows, e.cols)
    local ok, v = attempt({"columns"}, valid, function() return m:columns(j, n) end)
    if ok and v then check(derive(e, v, 0, j - 1, e.rows, n), "m:columns") end
  else
    current_call = "m:t()"
    local ok, v = attempt({"t"}, true, function() return m:t() end)
    if ok then check(derive(e, v, 0, 0, e.cols, e.rows, true), "m:t") end
  end
end)

-- get / set
on_entry(any_entry, function(e)
  local i, j = index(e.rows), index(e.cols)
  local valid = math.type(i) == "integer" and math.type(j) == "integer" and i >= 1 and j >= 1 and i <= e.rows and
    j <= e.cols and live(e)
  if (math.type(i) == "float" or math.type(j) == "float") and live(e) then valid = "either" end
  if R() < 0.5 then
    current_call = fmt("m:get(%s, %s) of %d×%d", tostring(i), tostring(j), e.rows, e.cols)
    local ok, v = attempt({"get"}, valid, function() return e.m:get(i, j) end)
    if ok and valid == true and not same(v, model_get(e, i - 1, j - 1)) then
      finding(fmt("m:get(%d, %d) is %.9g, the model says %.9g", i, j, v, model_get(e, i - 1, j - 1)))
    end
  else
    local v = e.base.dtype == "uint8" and R(0, 255) or number()
    if e.base.dtype == "uint8" and R() < 0.2 then v = pick{-1, 256, 0.5, 0 / 0}; valid = false end
    if not live(e) then valid = false end
    current_call = fmt("m:set(%s, %s, %s) of %d×%d %s", tostring(i), tostring(j), tostring(v), e.rows, e.cols, e.base.dtype)
    local ok = attempt({"set"}, valid, function() return e.m:set(i, j, v) end)
    if ok then
      if valid == true then model_set(e, i - 1, j - 1, f32(v)) else resync(e) end
      check(e, "m:set")
    end
  end
end)

-- fill, scal
on_entry(any_entry, function(e)
  local v = number()
  local valid = live(e) and e.base.dtype == "float32"
  if R() < 0.5 then
    current_call = fmt("fill(x, %s), x %d×%d %s", tostring(v), e.rows, e.cols, e.base.dtype)
    local ok = attempt({"fill"}, valid, function() vela.fill(e.m, v) end)
    if ok then
      for j = 0, e.cols - 1 do for i = 0, e.rows - 1 do model_set(e, i, j, f32(v)) end end
      check(e, "fill")
    end
  else
    current_call = fmt("scal(%s, x), x %d×%d %s", tostring(v), e.rows, e.cols, e.base.dtype)
    local before = {}
    for j = 0, e.cols - 1 do for i = 0, e.rows - 1 do before[#before + 1] = {i, j, model_get(e, i, j)} end end
    local ok = attempt({"scal"}, valid, function() vela.scal(v, e.m) end)
    if ok then
      for _, b in ipairs(before) do
        model_set(e, b[1], b[2], arith(function(s, x) return f32(s * x) end, f32(v), b[3]))
      end
      check(e, "scal")
    end
  end
end)

-- axpy, copy: two operands, any pair (shapes, devices, dtypes, aliasing, released)
ops[#ops + 1] = function()
  local x, y = any_entry(), any_entry()
  if not x or not y then return end
  if R() < 0.3 then
    -- a pair that usually fits: y a fresh view or copy of x's shape on x's device
    local ok, m = pcall(vela.zeros, x.rows, x.cols, "float32", x.base.dev)
    if ok then y = new_entry(m, x.base.dev, "float32") end
  end
  local fits, _ = compatible(x, y)
  local alias = overlap(x, y)
  local in_place = alias and same_elements(x, y)
  local base_ok = live(x) and live(y) and x.base.dev == y.base.dev and fits
  if R() < 0.5 then
    local a = number()
    local valid = base_ok and x.base.dtype == "float32" and y.base.dtype == "float32" and (not alias or in_place)
    current_call = fmt("axpy(%s, x %d×%d, y %d×%d)", tostring(a), x.rows, x.cols, y.rows, y.cols)
    local xs = {}
    for k = 0, x.rows * x.cols - 1 do xs[k] = elem(x, k) end
    local ok = attempt({"axpy"}, valid, function() vela.axpy(a, x.m, y.m) end)
    if ok then
      for k = 0, y.rows * y.cols - 1 do
        local fused, w1 = arith(function(s, x, yv) return f32(s * x + yv) end, f32(a), xs[k], elem(y, k))
        local unfused, w2 = arith(function(s, x, yv) return f32(f32(s * x) + yv) end, f32(a), xs[k], elem(y, k))
        set_elem(y, k, fused, w1 or w2 or not same(fused, unfused))
      end
      check(y, "axpy")
      check(x, "axpy's x")
    end
  else
    local dt_ok = (x.base.dtype == y.base.dtype) or (x.base.dtype == "uint8" and y.base.dtype == "float32")
    local valid = base_ok and dt_ok and (not alias or in_place)
    current_call = fmt("copy(x %d×%d %s, y %d×%d %s)", x.rows, x.cols, x.base.dtype, y.rows, y.cols, y.base.dtype)
    local xs = {}
    for k = 0, x.rows * x.cols - 1 do xs[k] = elem(x, k) end
    local ok = attempt({"copy"}, valid, function() vela.copy(x.m, y.m) end)
    if ok then
      for k = 0, y.rows * y.cols - 1 do set_elem(y, k, xs[k]) end
      check(y, "copy")
    end
  end
end

-- reductions
on_entry(f32_entry, function(e)
  local fn = pick{"sum", "asum", "nrm2"}
  current_call = fmt("%s(x %d×%d)", fn, e.rows, e.cols)
  local ok, v = attempt({fn}, live(e), function() return vela[fn](e.m) end)
  if ok then
    local s, mag = 0, 0
    for j = 0, e.cols - 1 do
      for i = 0, e.rows - 1 do
        local x = model_get(e, i, j)
        if fn == "sum" then s = s + x elseif fn == "asum" then s = s + math.abs(x) else s = s + x * x end
        mag = mag + math.abs(x)
      end
    end
    if fn == "nrm2" then s = math.sqrt(s) end
    if finite(s) and finite(mag) and mag < 1e30 then
      if math.abs(v - s) > 1e-4 * math.max(1, mag) and not (v ~= v and s ~= s) then
        finding(fmt("%s is %.9g, the model says %.9g", fn, v, s))
      end
    end
  end
end)

-- copies and moves: m:copy(), m:to(dev), operators
on_entry(any_entry, function(e)
  local kind = R(5)
  local function adopt(m, values_of, dev, dtype)
    local n = new_entry(m, dev, dtype)
    for j = 0, e.cols - 1 do for i = 0, e.rows - 1 do model_set(n, i, j, values_of(i, j)) end end
    return n
  end
  if kind == 1 then
    current_call = "m:copy()"
    local ok, m = attempt({"copy"}, live(e), function() return e.m:copy() end)
    if ok then check(adopt(m, function(i, j) return model_get(e, i, j) end, e.base.dev, e.base.dtype), "m:copy") end
  elseif kind == 2 then
    local dev = other_dev(e.base.dev)
    current_call = fmt("m:to(%q) from %s", dev, e.base.dev)
    local ok, m = attempt({"to"}, live(e), function() return e.m:to(dev) end)
    if ok then check(adopt(m, function(i, j) return model_get(e, i, j) end, dev, e.base.dtype), "m:to") end
  elseif kind == 3 then
    current_call = "-m"
    local ok, m = attempt({"matrix unary -"}, live(e) and e.base.dtype == "float32", function() return -e.m end)
    if ok then check(adopt(m, function(i, j) return arith(function(x) return -x end, model_get(e, i, j)) end, e.base.dev, "float32"), "-m") end
  elseif kind == 4 then
    local s = number()
    current_call = fmt("%s * m", tostring(s))
    local ok, m = attempt({"matrix *"}, live(e) and e.base.dtype == "float32", function() return s * e.m end)
    if ok then check(adopt(m, function(i, j) return arith(function(a, x) return f32(a * x) end, f32(s), model_get(e, i, j)) end, e.base.dev, "float32"), "s * m") end
  else
    local b = any_entry()
    if not b then return end
    -- NumPy's broadcast in 2-D: a dimension of 1 stretches to the other operand's
    local function stretch(p, q) return p == q or p == 1 or q == 1 end
    local bc = not compatible(e, b) and stretch(e.rows, b.rows) and stretch(e.cols, b.cols)
    local valid = live(e) and live(b) and e.base.dev == b.base.dev and (compatible(e, b) or bc) and
      e.base.dtype == "float32" and b.base.dtype == "float32"
    if valid and not bc and (e.rows ~= b.rows or e.cols ~= b.cols) then valid = "either" end  -- vectors in two orientations
    if live(e) and live(b) and e.base.dev == b.base.dev and (compatible(e, b) or bc) and (e.base.dtype ~= "float32" or b.base.dtype ~= "float32") then valid = "either" end
    current_call = fmt("a + b, %d×%d and %d×%d", e.rows, e.cols, b.rows, b.cols)
    local ok, m = attempt({"matrix +"}, valid, function() return e.m + b.m end)
    if ok and valid == true and bc then
      local n = new_entry(m, e.base.dev, "float32")
      for j = 0, n.cols - 1 do
        for i = 0, n.rows - 1 do
          local x = model_get(e, e.rows == 1 and 0 or i, e.cols == 1 and 0 or j)
          local y = model_get(b, b.rows == 1 and 0 or i, b.cols == 1 and 0 or j)
          model_set(n, i, j, arith(function(p, q) return f32(p + q) end, x, y))
        end
      end
      check(n, "a + b, broadcast")
    elseif ok and valid == true then
      check(adopt(m, function(i, j) return arith(function(x, y) return f32(x + y) end, model_get(e, i, j), model_get(b, i, j)) end, e.base.dev, "float32"), "a + b")
    elseif ok then
      pcall(m.release, m)
    end
  end
end)

-- release (sometimes), and checks of random entries
on_entry(any_entry, function(e)
  if R() < 0.15 then
    current_call = "m:release()"
    attempt({"release"}, true, function() e.m:release() end)
    e.base.released = true
  else
    current_call = "check"
    check(e, "a check of a held matrix")
  end
end)

-- garbage: any function or method with random arguments
local function garbage_value(dev)
  local r = R(12)
  if r <= 4 then
    local e = any_entry()
    return e and e.m or 1
  end
  if r == 5 then return pick(weird_ints) end
  if r == 6 then return number() end
  if r == 7 then return pick{"cpu", "vulkan:0", "uint8", "float32", "relu", "", "x", dev} end
  if r == 8 then return {} end
  if r == 9 then return pick{true, false} end
  if r == 10 then return R(0, 6) end
  return nil
end

local skip = {help = true, doc = true, who = true, mem = true, devices = true, device = true, threads = true,
  bench = true, compare = true, profile = true, time = true, stats = true, sync = true,
  -- save and load touch files: random paths would litter the working
  -- directory (tests/lua/test_io.lua covers them with real and broken files).
  save = true, load = true}
local functions, methods = {}, {}
for k, v in pairs(vela) do
  if type(v) == "function" and not skip[k] then functions[#functions + 1] = k end
end
table.sort(functions)
for k, v in pairs(getmetatable(vela.zeros(0, 0, "float32", "cpu"))) do
  if type(v) == "function" and not k:find("^__") then methods[#methods + 1] = k end
end
table.sort(methods)

ops[#ops + 1] = function(dev)
  stats.garbage = stats.garbage + 1
  local n = R(0, 6)
  local args = {}
  for k = 1, n do args[k] = garbage_value(dev) end
  local name, fn, self
  if R() < 0.6 then
    name = pick(functions)
    fn = caller(name)
  else
    name = pick(methods)
    local e = any_entry()
    if not e then return end
    self = e.m
    local c = method_caller(name)
    fn = function(...) return c(self, table.pack(...)) end
  end
  -- Sizes that would really allocate much: left out (the limits are tested elsewhere).
  if too_big(args[1], args[2]) or too_big(args[2], args[3]) then return end
  if name == "permutation" and type(args[1]) == "number" and args[1] > 1e5 then return end
  local parts = {}
  for k = 1, n do
    -- (a matrix prints its values: printing reads, and a read may raise an earlier call's label error)
    local ok_s, text = pcall(tostring, args[k])
    if not ok_s then
      if not expected_deferred(text) then finding("tostring of an argument failed: " .. tostring(text)) end
      text = "matrix"
    end
    parts[k] = text:gsub("0x%x+", "…")
  end
  current_call = fmt("%s%s(%s)", self and "m:" or "", name, table.concat(parts, ", "))
  local ok, res = attempt({name}, "either", function() return fn(table.unpack(args, 1, n)) end)
  if ok and (name == "softmax_xent" or name == "gather_cols") then
    for _, d in ipairs(dev_ids) do if d ~= "cpu" then maybe_bad[d] = true end end
  end
  -- What the call may have written: every matrix argument (and self), from the device;
  -- a release the model did not make (m:release() called at random) is noted.
  for _, e in ipairs(entries) do
    if live(e) and e.m.released then e.base.released = true end
    for k = 1, n do if rawequal(args[k], e.m) then resync(e) end end
    if rawequal(self, e.m) then resync(e) end
  end
  -- A result is left to the collector: it may be a view of a held matrix.
end

-- ---------------------------------------------------------------------------
-- Labels and column indices (softmax_xent, gather_cols): one contract on every
-- device. Bad ones: an error naming the function and the first bad position,
-- at the call on cpu (nothing written), at the next sync on Vulkan (the bad
-- columns of the outputs NaN, the others right).
-- ---------------------------------------------------------------------------

-- Waits for dev's queued work; an expected label error from an earlier call is
-- taken (and the sync repeated). Afterwards nothing on dev may raise one.
local function drain(dev)
  for _ = 1, 8 do
    local ok, err = pcall(vela.sync, dev)
    if ok then maybe_bad[dev] = nil return end
    if not expected_deferred(err) then
      finding("sync failed: " .. tostring(err))
      return
    end
  end
end

local function index_ok(v, limit) return v == v and v >= 1 and v <= limit and v == math.floor(v) end
local bad_indices = {0, -1, 1.5, 0 / 0, math.huge, -math.huge, 1e30, 2 ^ 32}

-- A 1×n (or n×1) vector of indices in 1..limit, a few bad when `bad`; uint8 if asked (0..255 only).
local function index_vector(n, limit, bad, u8)
  local v, first = {}, nil
  for j = 1, n do v[j] = limit >= 1 and R(1, math.min(limit, u8 and 255 or limit)) or 1 end
  if bad and n > 0 then
    for _ = 1, R(1, 2) do
      local p = R(1, n)
      v[p] = u8 and pick{0, math.min(limit + 1, 255)} or pick{limit + 1, limit + 0.5, pick(bad_indices)}
    end
  end
  for j = 1, n do if not index_ok(v[j], limit) then first = j break end end
  return v, first
end

-- Checks the outcome of a call whose indices may be bad (first: the first bad
-- position or nil): returns true when the call's outputs were written.
local function index_outcome(dev, names, ok, msg, first, want)
  if dev == "cpu" then
    if first then
      if ok then finding("succeeded with a bad index at position " .. first) return false end
      if not msg:find(want, 1, true) then finding(fmt("the error is %q, expected %q", msg, want)) end
      stats.index_errors = stats.index_errors + 1
      return false
    end
    return ok
  end
  if not ok then return false end
  if first and R() < 0.5 then
    -- left to a later read or sync, which must raise it (once; then repeated)
    maybe_bad[dev] = true
    return true
  end
  local sok, serr = pcall(vela.sync, dev)
  if first then
    if sok then
      finding("a bad index at position " .. first .. " and the next sync raised nothing")
    elseif not tostring(serr):find("an earlier call on " .. dev .. " failed: " .. want .. ";", 1, true) then
      finding(fmt("sync raised %q, expected the label error %q", tostring(serr), want))
    else
      stats.index_errors = stats.index_errors + 1
    end
    sok, serr = pcall(vela.sync, dev)  -- raised once: the device goes on
  end
  if not sok then finding("sync after the call failed: " .. tostring(serr)) end
  return true
end

-- softmax_xent(z, labels, dz [, loss [, scale]]) with fresh finite logits
ops[#ops + 1] = function(dev)
  if dev ~= "cpu" then drain(dev) end
  local k = R() < 0.03 and R(4097, 4100) or R(1, 6)  -- sometimes the long-column passes
  local n = k > 6 and R(1, 3) or R(0, 8)
  local u8 = R() < 0.2
  local labels, first = index_vector(n, k, R() < 0.3, u8)
  local zv = {}
  for q = 1, k * n do zv[q] = f32((R() - 0.5) * 8) end
  local ok_z, zm = pcall(vela.matrix, k, n, zv, "float32", dev)
  local ok_l, lm = pcall(vela.matrix, 1, n, labels, u8 and "uint8" or "float32", dev)
  if not ok_z or not ok_l then finding("a matrix for softmax_xent: " .. tostring(ok_z and lm or zm)) return end
  local z, lab = new_entry(zm, dev, "float32", zv), new_entry(lm, dev, u8 and "uint8" or "float32", labels)
  local in_place = R() < 0.3
  local dz = z
  if not in_place then dz = new_entry(vela.zeros(k, n, "float32", dev), dev, "float32") end
  local loss = R() < 0.7 and new_entry(vela.zeros(1, n, "float32", dev), dev, "float32") or nil
  local scale = loss and R() < 0.5 and f32((R() - 0.5) * 4) or nil  -- (the binding takes scale after loss)
  local sc = scale or (n > 0 and f32(1 / n) or 1)
  current_call = fmt("softmax_xent(z %d×%d, labels%s, dz%s, loss%s, scale %s), first bad label %s", k, n,
    u8 and " uint8" or "", in_place and " = z" or "", loss and "" or " absent", tostring(scale), tostring(first))
  local want = first and fmt("softmax_xent: labels at position %d is not a class index (an integer in 1..%d)", first, k)
  local ok, msg = attempt({"softmax_xent"}, dev ~= "cpu" or not first, function()
    if loss then vela.softmax_xent(z.m, lab.m, dz.m, loss.m, scale) else vela.softmax_xent(z.m, lab.m, dz.m) end
  end)
  if not index_outcome(dev, {"softmax_xent"}, ok, msg or "", first, want or "") then
    check(dz, "softmax_xent's dz, unchanged")
    if loss then check(loss, "softmax_xent's loss, unchanged") end
    return
  end
  for j = 0, n - 1 do
    local c = labels[j + 1]
    if index_ok(c, k) then
      local m, s = -math.huge, 0
      for i = 0, k - 1 do m = math.max(m, zv[j * k + i + 1]) end
      for i = 0, k - 1 do s = s + math.exp(zv[j * k + i + 1] - m) end
      for i = 0, k - 1 do
        local p = math.exp(zv[j * k + i + 1] - m) / s
        model_set(dz, i, j, f32((p - (i == c - 1 and 1 or 0)) * sc))
      end
      if loss then model_set(loss, 0, j, f32(-(zv[j * k + c] - m - math.log(s)))) end
    else
      for i = 0, k - 1 do model_set(dz, i, j, 0 / 0) end
      if loss then model_set(loss, 0, j, 0 / 0) end
    end
  end
  check(dz, "softmax_xent's dz", 1e-4)
  if loss then check(loss, "softmax_xent's loss", 1e-4) end
  -- exp and log round differently on each device (within 1e-4 here): the
  -- model goes on from the device's values, so later arithmetic stays exact
  resync(dz)
  if loss then resync(loss) end
end

-- gather_cols(src, idx, dst [, scale]) from any held matrix (views, uint8, released, other devices)
ops[#ops + 1] = function(dev)
  if dev ~= "cpu" then drain(dev) end
  local src = any_entry()
  if not src then return end
  local n = R(0, 6)
  local idx, first = index_vector(n, src.cols, R() < 0.3)
  if src.rows == 0 then first = nil end  -- an empty dst gathers nothing and checks nothing
  local idev = R() < 0.05 and other_dev(dev) or src.base.dev
  local ok_i, im = pcall(vela.matrix, R() < 0.5 and 1 or n, R() < 0.5 and n or 1, idx, "float32", idev)
  if not ok_i then return end
  if im.rows ~= 1 and im.cols ~= 1 then im = vela.matrix(1, n, idx, "float32", idev) end
  local ix = new_entry(im, idev, "float32", idx)
  local dst = new_entry(vela.zeros(src.rows, n, "float32", src.base.dev), src.base.dev, "float32")
  local scale = R() < 0.5 and number() or nil
  local valid = live(src) and idev == src.base.dev
  if not valid then first = nil end
  local sdev = src.base.dev
  current_call = fmt("gather_cols(src %d×%d %s on %s, idx %d on %s, dst, scale %s), first bad index %s", src.rows,
    src.cols, src.base.dtype, sdev, n, idev, tostring(scale), tostring(first))
  local want = first and fmt("gather_cols: idx at position %d is not a column index of src (an integer in 1..%d)",
    first, src.cols)
  local ok, msg = attempt({"gather_cols"}, valid and (sdev ~= "cpu" or not first), function()
    vela.gather_cols(src.m, ix.m, dst.m, scale)
  end)
  if not valid then return end
  if not index_outcome(sdev, {"gather_cols"}, ok, msg or "", first, want or "") then
    check(dst, "gather_cols' dst, unchanged")
    return
  end
  local a = scale and f32(scale) or 1
  for j = 0, n - 1 do
    local c = idx[j + 1]
    for i = 0, src.rows - 1 do
      if index_ok(c, src.cols) then
        model_set(dst, i, j, arith(function(s, x) return f32(s * x) end, a, model_get(src, i, c - 1)))
      else
        model_set(dst, i, j, 0 / 0)
      end
    end
  end
  check(dst, "gather_cols' dst")
end

-- ---------------------------------------------------------------------------
-- Files: vela.save / vela.load (.npy, .npz) and nn.save / nn.load, onto any
-- device; truncated files are errors naming the loader.
-- ---------------------------------------------------------------------------

-- In memory where the machine has a tmpfs (/dev/shm): a save ends with fsync,
-- which on a loaded disk costs more than the rest of the run.
local tmpdir = os.tmpname()
os.remove(tmpdir)
local shm = "/dev/shm/vela-fuzz-" .. tmpdir:match("[^/]*$")
if os.execute("mkdir -p '" .. shm .. "' 2>/dev/null") then tmpdir = shm end
assert(os.execute("mkdir -p '" .. tmpdir .. "'"))

local function read_file(path)
  local f = assert(io.open(path, "rb"))
  local d = f:read("a")
  f:close()
  return d
end
local function write_file(path, d)
  local f = assert(io.open(path, "wb"))
  f:write(d)
  f:close()
end

on_entry(any_entry, function(e, dev)
  stats.files = stats.files + 1
  local d2 = other_dev(dev)
  if R() < 0.25 then
    -- .npz of two named matrices
    local b = any_entry()
    if not b then return end
    local path = tmpdir .. "/t" .. R(1, 3) .. ".npz"
    current_call = fmt("vela.save(%q, {a = %d×%d %s, b = %d×%d %s})", path, e.rows, e.cols, e.base.dtype, b.rows, b.cols, b.base.dtype)
    local ok = attempt({"save"}, live(e) and live(b), function() vela.save(path, {a = e.m, b = b.m}) end)
    if not ok then return end
    current_call = fmt("vela.load(%q, %q)", path, d2)
    local ok2, t = attempt({"load"}, true, function() return vela.load(path, d2) end)
    if ok2 then
      for key, src in pairs{a = e, b = b} do
        local m = t[key]
        if not m or m.rows ~= src.rows or m.cols ~= src.cols or m:dtype() ~= src.base.dtype then
          finding(fmt("vela.load of an .npz: member %s is %s, saved %d×%d %s", key, tostring(m), src.rows, src.cols, src.base.dtype))
        else
          local n = new_entry(m, d2, src.base.dtype)
          for j = 0, src.cols - 1 do for i = 0, src.rows - 1 do model_set(n, i, j, model_get(src, i, j)) end end
          check(n, "vela.load of an .npz member")
        end
      end
    end
    return
  end
  local path = tmpdir .. "/m" .. R(1, 3) .. ".npy"
  current_call = fmt("vela.save(%q, m %d×%d %s on %s)", path, e.rows, e.cols, e.base.dtype, e.base.dev)
  local ok = attempt({"save"}, live(e), function() vela.save(path, e.m) end)
  if not ok then return end
  if R() < 0.3 then
    -- truncated: an error naming load, never a crash or a short matrix
    local d = read_file(path)
    local cut = R(0, math.max(0, #d - 1))
    write_file(path, d:sub(1, cut))
    current_call = fmt("vela.load(%q) of an .npy cut to %d of %d bytes", path, cut, #d)
    local ok2, m = attempt({"load"}, #d == cut and "either" or false, function() return vela.load(path, d2) end)
    if ok2 and m then pcall(m.release, m) end
    return
  end
  current_call = fmt("vela.load(%q, %q) of m %d×%d %s", path, d2, e.rows, e.cols, e.base.dtype)
  local ok2, m = attempt({"load"}, true, function() return vela.load(path, d2) end)
  if not ok2 then return end
  if m.rows ~= e.rows or m.cols ~= e.cols or m:dtype() ~= e.base.dtype then
    finding(fmt("vela.load gave %d×%d %s, saved %d×%d %s", m.rows, m.cols, m:dtype(), e.rows, e.cols, e.base.dtype))
    return
  end
  local n = new_entry(m, d2, e.base.dtype)
  for j = 0, e.cols - 1 do for i = 0, e.rows - 1 do model_set(n, i, j, model_get(e, i, j)) end end
  check(n, "vela.load")
end)

local nn = require "vela.nn"
local acts = {"identity", "relu", "sigmoid", "tanh"}
ops[#ops + 1] = function(dev)
  stats.files = stats.files + 1
  local a, b = R(1, 5), R(1, 5)
  local act = pick(acts)
  local path = tmpdir .. "/net" .. R(1, 2) .. ".vnn"
  current_call = fmt("nn.save(%q, nn.sequential{nn.linear(%d, %d, %q)} on %s)", path, a, b, act, dev)
  local net = nn.sequential{nn.linear(a, b, act, {device = dev, seed = R(1, 1000)})}
  if R() < 0.3 then
    -- the layer's parameters are changed first: what is saved is what the net holds
    vela.scal(f32((R() - 0.5) * 4), net:params()[1][1])
  end
  local ok = attempt({"nn.save"}, true, function() nn.save(path, net) end)
  if not ok then return end
  local d2 = other_dev(dev)
  if R() < 0.3 then
    local d = read_file(path)
    local cut = R(0, math.max(0, #d - 1))
    write_file(path, d:sub(1, cut))
    current_call = fmt("nn.load(%q) of a checkpoint cut to %d of %d bytes", path, cut, #d)
    attempt({"nn.load"}, #d == cut and "either" or false, function() return nn.load(path, d2) end)
    return
  end
  current_call = fmt("nn.load(%q, %q)", path, d2)
  local ok2, net2 = attempt({"nn.load"}, true, function() return nn.load(path, d2) end)
  if not ok2 then return end
  local p1, p2 = net:params(), net2:params()
  if #p1 ~= #p2 then finding(fmt("nn.load: %d parameters, saved %d", #p2, #p1)) return end
  for q = 1, #p1 do
    local x, y = totable(p1[q][1]), totable(p2[q][1])
    if #x ~= #y or #x[1] ~= #y[1] then finding("nn.load: parameter " .. q .. " changed shape") return end
    for i = 1, #x do
      for j = 1, #x[i] do
        if x[i][j] ~= y[i][j] then
          finding(fmt("nn.load: parameter %d (%d, %d) is %.9g, saved %.9g", q, i, j, y[i][j], x[i][j]))
          return
        end
      end
    end
  end
  if p2[1][1]:device():name() ~= d2 then finding("nn.load: the net is on " .. p2[1][1]:device():name() .. ", not " .. d2) end
end

-- Hostile files (issue 24): a saved .npy, .npz or checkpoint with random
-- bytes changed, its header's shape, type or length rewritten, its zip
-- directory's sizes made huge, or its manifest replaced by damaged text.
-- vela.load and nn.load either load it or give an error naming themselves:
-- never a crash, a hang, a C++ exception's words, or Lua code run.
local hostile_shapes = {"(2147483647, 2147483647)", "(2147352580, 1073807362)", "(0, 5)", "(-1, 2)", "(1, 2, 3)",
  "(99999999999,)", "()", "(3", "(2, 2", "", "(18446744073709551617, 1)"}
local hostile_descrs = {"'<f4'", "'<f8'", "'|u1'", "'>f4'", "'<c16'", "'<f4", "[('a', '<f4')]", "'<i8'"}
local hostile_manifests = {"while true do end return {}", "return {format = 1, layers = (function() return {} end)()}",
  string.rep("[", 100000), '{"format": 2, "layers": [{"kind": "linear", "inputs": 1e300, "outputs": 2}]}',
  '{"format": 2, "layers": [{"kind": "linear", "inputs": 3000000000, "outputs": 3000000000, "activation": "relu"}]}',
  '{"format": 2, "layers": []}', '{"format": 2', "", "\0\0\0", '{"format": 2, "layers": [{"kind": "nope"}]}',
  '{"format": 2, "layers": [{"kind": "linear", "inputs": 2, "outputs": 2, "activation": "relu"}], ' ..
  '"optimizer": {"name": "adam", "steps": 4}, "state": {"1.w": {}, "1.b": {}}}'}
ops[#ops + 1] = function(dev)
  local e = any_entry()
  if not e or not live(e) then return end
  stats.files = stats.files + 1
  local kind = R(3)
  local path = tmpdir .. "/h" .. R(1, 3) .. (kind == 1 and ".npy" or ".npz")
  local saved
  if kind == 1 then saved = pcall(vela.save, path, e.m)
  elseif kind == 2 then saved = pcall(vela.save, path, {a = e.m, note = "text"})
  else saved = pcall(nn.save, path, nn.sequential{nn.linear(2, 2, "relu", {device = dev, seed = 1})}) end
  if not saved then return end
  local d = read_file(path)
  local how = R(4)
  if how == 1 then
    for _ = 1, R(1, 8) do
      local k = R(1, #d)
      d = d:sub(1, k - 1) .. string.char(R(0, 255)) .. d:sub(k + 1)
    end
  elseif how == 2 then
    local shape, descr, len = pick(hostile_shapes), pick(hostile_descrs), string.pack("<I2", R(0, 65535))
    d = d:gsub("'shape': %b()", function() return "'shape': " .. shape end, 1)
    d = d:gsub("'descr': '[^']*'", function() return "'descr': " .. descr end, 1)
    if R() < 0.3 then d = d:gsub("NUMPY\1\0..", function() return "NUMPY\1\0" .. len end, 1) end
  elseif how == 3 then
    -- the central directory's sizes (offsets 20 and 24 of each record) made huge
    d = d:gsub("PK\1\2(" .. string.rep(".", 16) .. ")........", function(pre)
      return "PK\1\2" .. pre .. string.pack("<I4I4", R(0, 0xffffffff), R(0, 0xffffffff))
    end)
  else
    if kind == 3 then
      local okl, files = pcall(vela.load, path)
      if not okl then return end
      files.vela_checkpoint = pick(hostile_manifests)
      if not pcall(vela.save, path, files) then return end
      d = read_file(path)
    else
      d = d:sub(1, R(0, #d))
    end
  end
  write_file(path, d)
  local d2 = other_dev(dev)
  current_call = fmt("vela.load(%q, %q) of a hostile file (kind %d, change %d)", path, d2, kind, how)
  local ok, v = attempt({"load"}, "either", function() return vela.load(path, d2) end)
  if ok and type(v) == "table" then for _, m in pairs(v) do if type(m) ~= "string" then pcall(m.release, m) end end
  elseif ok and v then pcall(v.release, v) end
  current_call = fmt("nn.load(%q, %q) of a hostile file (kind %d, change %d)", path, d2, kind, how)
  attempt({"nn.load"}, "either", function() return nn.load(path, d2) end)
end

-- NaN training (issue 24): an optimizer of vela.optim with good or bad
-- hyperparameters (NaN, ±Inf, negative: an error naming the optimizer), then
-- nn.fit on a set that may hold one NaN or ±Inf input. When fit stops on a
-- non-finite loss at batch b, it must have applied exactly b − 1 updates
-- (the bad batch's update is not applied); a bad hyperparameter set after
-- construction makes a step fail with nothing changed.
local optim = require "vela.optim"
local optim_kinds = {"sgd", "adam", "adamw", "rmsprop", "adagrad"}
local bad_numbers = {0 / 0, math.huge, -math.huge, -1}
ops[#ops + 1] = function(dev)
  stats.trainings = stats.trainings + 1
  local kind = pick(optim_kinds)
  local a, c, n = R(1, 5), R(2, 4), 8 * R(1, 3)
  local opts = {lr = f32(R() * 0.1)}
  local field = pick{"lr", "eps", "weight_decay"}
  if kind == "sgd" and field == "eps" then field = "momentum" end
  local bad = R() < 0.3 and pick(bad_numbers) or nil
  if bad then opts[field] = bad end
  current_call = fmt("optim.%s{%s = %s}", kind, field, tostring(opts[field]))
  local ok, opt = attempt({"optim." .. kind}, bad == nil, function() return optim[kind](opts) end)
  if not ok then return end
  local net = nn.sequential{nn.linear(a, c, pick(acts), {device = dev, seed = R(1, 1000)})}
  local images = vela.rand(a, n, R(1, 1000), dev)
  local poison = R() < 0.5 and pick(bad_numbers) or nil
  if poison and poison ~= -1 then images:set(R(1, a), R(1, n), poison) end
  local labels = {}
  for j = 1, n do labels[j] = R(1, c) end
  local set = {images = images, labels = vela.matrix(1, n, labels, "float32", dev), n = n}
  if R() < 0.2 then
    -- a bad hyperparameter set after construction: the step fails, nothing changes
    local w0 = totable(net:params()[1][1])
    opt.lr = pick{0 / 0, -1, math.huge}
    current_call = fmt("%s:step with lr = %s", kind, tostring(opt.lr))
    attempt({"optim." .. kind .. ":step"}, false, function() opt:step(net) end)
    local w1 = totable(net:params()[1][1])
    for i = 1, #w0 do
      for j = 1, #w0[i] do
        if w0[i][j] ~= w1[i][j] and (w0[i][j] == w0[i][j] or w1[i][j] == w1[i][j]) then
          finding(fmt("a failed %s step changed weight (%d, %d)", kind, i, j))
          return
        end
      end
    end
    if opt.steps ~= nil then finding("a failed step counted a step") end
    return
  end
  current_call = fmt("nn.fit(linear(%d, %d), %d samples%s, optim.%s)", a, c, n,
    poison and fmt(", one input %s", tostring(poison)) or "", kind)
  local okf, msg = attempt({"nn.fit"}, "either", function()
    nn.fit(net, set, {epochs = 1, batch = 8, optimizer = opt, progress = false, seed = R(1, 100)})
  end)
  if okf then return end
  stats.nan_stops = stats.nan_stops + 1
  local b = tonumber(msg:match("the loss of epoch 1, batch (%d+) is"))
  if not b then finding("nn.fit failed without naming a non-finite loss: " .. msg) return end
  if not msg:find("training stopped before its update", 1, true) then finding("nn.fit: " .. msg) end
  if (opt.steps or 0) ~= b - 1 then
    finding(fmt("nn.fit stopped at batch %d after %d updates (want %d)", b, opt.steps or 0, b - 1))
  end
end

-- ---------------------------------------------------------------------------
-- The run
-- ---------------------------------------------------------------------------

dev_ids = ids
for _, dev in ipairs(ids) do
  local m = vela.matrix(1, 1, {1e-40}, "float32", dev)
  vela.scal(1, m)
  flushes[dev] = m:get(1, 1) == 0
  if flushes[dev] then
    FLUSHY = true
    print(fmt("fuzz: %s flushes denormals to zero: the model flushes them too", dev))
  end
  m:release()
end
--               ctor view get fill 2op red move rel garbage xent gather save nnsave hostile nantrain
local weights = {6,   10,  10, 6,   12, 4,  8,   6,  10,     3,   3,     2,   1,     1,      1}
local total_w = 0
for _, w in ipairs(weights) do total_w = total_w + w end

local t_start = os.time()
local clock = vela.clock or os.clock
for _, dev in ipairs(ids) do
  local t0 = clock()
  local c0 = stats.calls
  local e0, g0 = stats.errors, stats.garbage
  entries = {}
  while stats.calls - c0 < calls do
    local r, k = R(total_w), 1
    while r > weights[k] do r = r - weights[k]; k = k + 1 end
    local tc = clock()
    ops[k](dev)
    if os.getenv("VELA_FUZZ_SLOW") and clock() - tc > 0.05 then
      io.stderr:write(fmt("slow call (%.2f s): %s\n", clock() - tc, current_call))
    end
    -- keep the pool small: drop old entries (and their matrices when no entry shares the base)
    if #entries > 60 then
      local keep = {}
      for i = 21, #entries do keep[#keep + 1] = entries[i] end
      for i = 1, 20 do check(entries[i], "an entry retired from the pool") end
      entries = keep
      collectgarbage()
    end
  end
  for _, e in ipairs(entries) do check(e, "the final check") end
  for _, d in ipairs(ids) do if d ~= "cpu" then drain(d) end end
  print(fmt("fuzz: %s: %d calls (%d errors, %d garbage calls), %.1f s", dev, stats.calls - c0, stats.errors - e0,
    stats.garbage - g0, clock() - t0))
  io.stdout:flush()
end
local _ = t_start
os.execute("rm -rf '" .. tmpdir .. "'")
print(fmt("fuzz: seed %d: %d calls, %d errors (%d label and index errors, %d raised at a later read), %d file "
  .. "round trips, %d trainings (%d stopped on a non-finite loss), %d value checks, %d findings", seed, stats.calls,
  stats.errors, stats.index_errors, stats.deferred, stats.files, stats.trainings, stats.nan_stops, stats.checks, #findings))
os.exit(#findings == 0 and 0 or 1)

-- The first use of a kernel on a Vulkan device says so on a terminal, one
-- line erased when the work is done, and writes nothing to a pipe or a log;
-- the pruning that makes pipelines sooner leaves every bit as it was.
-- The terminal is a pty from script(1) (util-linux), skipped where absent.
local t = dofile("tests/lua/t.lua")

local ids = require("vela.bench_native").devices()  -- "cpu" first, then every usable Vulkan device
local have_script = os.execute("command -v script >/dev/null 2>&1")

local function run(cmd)
  local p = assert(io.popen(cmd))
  local out = p:read("a")
  p:close()
  return out
end

for i = 2, #ids do
  local id = ids[i]
  local code = ('print("SUM " .. sum(ones(4, 4, device(%q)) * ones(4, 4, device(%q))))'):format(id, id)
  local cache = os.tmpname()
  os.remove(cache)
  local vela = ("XDG_CACHE_HOME=%q %q -e %q"):format(cache, arg[-1], code)
  t.test(id .. ": a status line on a terminal while kernels are prepared, erased after", function()
    if not have_script then print("  skipped: no script(1)") return end
    local out = run(("script -qec %q /dev/null 2>&1"):format(vela))
    assert(out:find("\r\27%[Kvela: " .. id .. ": preparing kernel mm_[%w_]+ %(first use%)"), out)
    if out:find("llvmpipe", 1, true) or id == "vulkan:0" and os.getenv("VELA_TEST_DRIVERS") == "llvmpipe" then
      assert(out:find("\r\27%[Kvela: " .. id .. ": compiling %d+ new kernels? %(first use%)"), out)
    end
    -- erased before the result is printed: the result starts a clean line
    assert(out:find("\r\27%[KSUM 64.0"), out)
    local off = run(("script -qec %q /dev/null 2>&1"):format("VELA_STATUS=0 " .. vela))
    assert(off:find("SUM 64.0", 1, true) and not off:find("preparing"), off)
  end)
  t.test(id .. ": nothing of it in a pipe", function()
    local out = run(vela .. " 2>&1")
    assert(out == "SUM 64.0\n", out)
  end)
  os.execute(("rm -rf %q"):format(cache))
end

-- The branches on frozen specialization constants are pruned before the
-- driver sees a module (src/vulkan/spirv_specialize.cpp): what runs is the
-- same instructions, so the same bits as with VELA_SPIRV_PRUNE=0. Kernels
-- with many variants: dense with activations whose steps are `precise`, mm
-- with transposes and β, softmax, the optimizer.
local bits = [[
local d = device(%q)
local w, x, b = randn(24, 20, 1):to(d), randn(20, 12, 2):to(d), randn(24, 1, 3):to(d)
local out = {}
local function put(m) for _, v in ipairs(m:totable()) do for _, e in ipairs(type(v) == "table" and v or {v}) do out[#out + 1] = ("%%a"):format(e) end end end
for _, act in ipairs{"gelu", "tanh", "softplus", "relu"} do local y = zeros(24, 12, d); dense(w, x, b, y, act); put(y) end
local c = randn(20, 20, 4):to(d); mm(0.5, w:t(), w, 0.25, c); put(c)
local e = zeros(12, 24, d); mm(1, x:t(), w:t(), 0, e); put(e)
local p = zeros(24, 12, d); mm(1, w, x, 0, p)
local s = zeros(24, 12, d); softmax(p, s); put(s)
local v = zeros(24, 20, d); sgd_step(w, ones(24, 20, d), v, 0.1, 0.9); put(w)
print(table.concat(out, " "))
]]
for i = 2, #ids do
  local id = ids[i]
  t.test(id .. ": kernels give the same bits with their constant branches pruned (VELA_SPIRV_PRUNE=0: not)", function()
    local script = os.tmpname()
    local f = assert(io.open(script, "w"))
    f:write(bits:format(id))
    f:close()
    local pruned = run(("%q %q 2>&1"):format(arg[-1], script))
    local whole = run(("VELA_SPIRV_PRUNE=0 %q %q 2>&1"):format(arg[-1], script))
    os.remove(script)
    assert(select(2, pruned:gsub("0x", "")) > 2000, pruned)
    assert(pruned == whole, "pruned:\n" .. pruned .. "\nunpruned:\n" .. whole)
  end)
end

-- The drivers compile in glibc's heap, which asks for transparent huge pages
-- on what it grows by (core/host_memory.hpp, advise_heap_huge_pages): a child
-- that has made a product on the last device finds its heap marked "hg" in
-- /proc/self/smaps; with VELA_HUGE_HEAP=0, or a glibc.malloc setting of the
-- user's (which vela keeps), none is. A sanitizer build's allocator takes no
-- heap settings: there none is either.
local huge = [[
local d = device(%q)
local c = zeros(8, 8, d); mm(1, ones(8, 8, d), ones(8, 8, d), 0, c); assert(c:get(1, 1) == 8)
local marked, on_heap = 0, false
for l in io.lines("/proc/self/smaps") do
  if l:match("^%%x+%%-%%x+ ") then on_heap = l:match("%%[heap%%]") ~= nil
  elseif on_heap and l:match("^VmFlags:.* hg") then marked = marked + 1 end
end
print("MARKED " .. marked)
]]
t.test(ids[#ids] .. ": the heap asks for huge pages (VELA_HUGE_HEAP=0, a user's glibc.malloc setting: not)", function()
  local f = io.open("/proc/self/smaps")
  if not f then print("  skipped: no /proc/self/smaps") return end
  f:close()
  local script = os.tmpname()
  f = assert(io.open(script, "w"))
  f:write(huge:format(ids[#ids]))
  f:close()
  local function marked(env)
    local out = run(("%s %q %q 2>&1"):format(env, arg[-1], script))
    return tonumber(out:match("MARKED (%d+)")) or error(out)
  end
  local clean = "env -u VELA_HUGE_HEAP -u GLIBC_TUNABLES -u MALLOC_TRIM_THRESHOLD_ -u MALLOC_MMAP_THRESHOLD_ -u MALLOC_TOP_PAD_"
  local default, off = marked(clean), marked(clean .. " VELA_HUGE_HEAP=0")
  local theirs = marked(clean .. " GLIBC_TUNABLES=glibc.malloc.trim_threshold=1048576")
  os.remove(script)
  if os.getenv("ASAN_OPTIONS") then
    assert(default == 0, default)
  else
    assert(default > 0, "no heap mapping marked hg")
  end
  assert(off == 0 and theirs == 0, ("VELA_HUGE_HEAP=0: %d marked, the user's setting: %d"):format(off, theirs))
end)

t.done()

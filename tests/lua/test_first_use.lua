-- The first use of a kernel on a Vulkan device says so on a terminal, one
-- line erased when the work is done, and writes nothing to a pipe or a log.
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

t.done()

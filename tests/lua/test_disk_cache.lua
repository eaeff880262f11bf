-- The disk caches beside each other in $XDG_CACHE_HOME/vela: a damaged entry
-- (the pipeline cache of a device, a user kernel's SPIR-V) is dropped with a
-- one-line warning and rebuilt, never handed to the driver. Before the hashes,
-- a damaged SPIR-V entry crashed SwiftShader (SIGSEGV) and failed on lavapipe
-- (vkCreateComputePipelines: VkResult -13) in every later session.
local t = dofile("tests/lua/t.lua")

local ids = require("vela.bench_native").devices()  -- "cpu" first, then every usable Vulkan device

local function run(cache, id)
  local code = ([[local d = device(%q)
local f = map("x * 2.0 + 1.0")
print("SUM " .. sum(f(ones(8, 8, d))))
print("MM " .. sum(ones(4, 3, d) * ones(3, 5, d)))]]):format(id)
  local p = assert(io.popen(("XDG_CACHE_HOME=%q %q -e %q 2>&1"):format(cache, arg[-1], code)))
  local out = p:read("a")
  local ok, how, status = p:close()
  return out, ok, how, status
end

-- Flips every 7th byte of [from, to) (1-based, negative from the end) of a file.
local function damage(path, from, to)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  local n = #s
  from, to = from < 0 and n + from + 1 or from, to < 0 and n + to + 1 or to
  local b = {s:byte(1, -1)}
  for i = from, to - 1, 7 do b[i] = b[i] ~ 0xff end
  local parts = {}
  for i = 1, n, 4096 do parts[#parts + 1] = string.char(table.unpack(b, i, math.min(n, i + 4095))) end
  f = assert(io.open(path, "wb"))
  f:write(table.concat(parts))
  f:close()
end

local function files(dir, pattern)
  local p = assert(io.popen(("ls %q 2>/dev/null"):format(dir)))
  local out = {}
  for name in p:read("a"):gmatch("[^\n]+") do
    if name:match(pattern) then out[#out + 1] = dir .. "/" .. name end
  end
  p:close()
  return out
end

for i = 2, #ids do
  local id = ids[i]
  t.test(id .. ": a damaged kernel or pipeline cache entry is dropped with a warning and rebuilt", function()
    local cache = os.tmpname()
    os.remove(cache)
    assert(os.execute("mkdir -p " .. cache))
    local out, ok = run(cache, id)
    assert(ok and out:find("SUM 192.0", 1, true) and out:find("MM 60.0", 1, true), out)
    assert(not out:find("damaged"), out)
    local spv = files(cache .. "/vela/kernels", "%.spv$")
    local pc = files(cache .. "/vela", "^pipelines%-.*%.bin$")
    assert(#spv == 1 and #pc == 1, "one kernel entry and one pipeline cache: " .. #spv .. ", " .. #pc)
    damage(spv[1], -200, -40)   -- inside the SPIR-V words
    damage(pc[1], -8, -1)       -- inside the driver's data
    local out2, ok2, how, status = run(cache, id)
    assert(ok2, ("second process ended by %s %s:\n%s"):format(how, status, out2))
    assert(out2:find("SUM 192.0", 1, true) and out2:find("MM 60.0", 1, true), out2)
    assert(out2:find("vela: the kernel cache entry [^\n]+ is damaged %(its SPIR%-V fails the hash%); dropped and compiled again"), out2)
    assert(out2:find("vela: " .. id .. ": the pipeline cache [^\n]+ is damaged %(its contents fail the hash%)"), out2)
    -- rebuilt: a third process finds good entries and says nothing
    local out3, ok3 = run(cache, id)
    assert(ok3 and out3:find("SUM 192.0", 1, true) and not out3:find("damaged"), out3)
    os.execute(("rm -rf %q"):format(cache))
  end)
end

t.done()

-- A software Vulkan device's memory is the host's: lavapipe and SwiftShader
-- advertise a 2 GiB heap whatever the host has, so vela budgets their heaps
-- against what this process may still allocate (MemAvailable, the cgroup's
-- limit, RLIMIT_AS) and commits each block's pages when it is made. Filling
-- one under a limit is then "out of device memory" and the session goes on,
-- not an OOM kill. The limit comes from cgroup files the test writes
-- (VELA_CGROUP_DIR names the directory read instead of the process's cgroup).
local t = dofile("tests/lua/t.lua")

local ids = require("vela.bench_native").devices()  -- "cpu" first, then every usable Vulkan device
local MiB = 1048576
local tmp = os.tmpname()
os.remove(tmp)
assert(os.execute("mkdir -p '" .. tmp .. "'"))

local function fake_cgroup(max, current)
  local dir = tmp .. "/cgroup"
  os.execute("rm -rf '" .. dir .. "' && mkdir -p '" .. dir .. "'")
  for name, text in pairs{["memory.max"] = max, ["memory.current"] = current, ["memory.stat"] = "anon 0\n"} do
    local f = assert(io.open(dir .. "/" .. name, "w"))
    f:write(text, "\n")
    f:close()
  end
  return "VELA_CGROUP_DIR=" .. dir
end

local function child(env, code)
  local p = assert(io.popen(("%s %q -e %q 2>&1"):format(env, arg[-1], code)))
  local out = p:read("a")
  local ok, how, status = p:close()
  return out, ok, how, status
end

for i = 2, #ids do
  local id = ids[i]
  if not vela.device(id):info().software then goto continue end
  t.test(id .. ": a matrix larger than the host's room is out of device memory, and the session goes on", function()
    -- 800 MiB allowed, 100 MiB in use: 700 MiB of room, far below the advertised 2 GiB heap, of which
    -- 256 MiB stay for the driver and the process: 512 MiB does not fit, 64 MiB does (the child's code
    -- has no comments: %q makes it one line)
    local env = fake_cgroup(tostring(800 * MiB), tostring(100 * MiB))
    local out, ok, how, status = child(env, ([[
      local d = device(%q)
      local okb, err = pcall(zeros, 8192, 16384, d)
      print("ERR " .. tostring(err))
      local m = zeros(4096, 4096, d)
      fill(m, 2)
      print("SUM " .. sum(m))
    ]]):format(id))
    assert(ok, ("child ended by %s %s:\n%s"):format(how, status, out))
    local err = out:match("ERR ([^\n]*)")
    assert(err and err:find(id .. ": out of device memory", 1, true) and err:find("512.0 MiB requested", 1, true)
      and err:find("the host has 700.0 MiB available (the cgroup's memory.max), of which 256 MiB stay", 1, true), out)
    assert(out:find("SUM 33554432.0", 1, true), out)
  end)
  t.test(id .. ": filled to the address-space limit (prlimit --as), the driver can still compile a kernel", function()
    if not os.execute("command -v prlimit >/dev/null 2>&1") then print("  skipped: no prlimit") return end
    -- A sanitizer build reserves terabytes of shadow memory and cannot start under an address-space cap.
    if os.getenv("ASAN_OPTIONS") then print("  skipped: a sanitizer build cannot run under prlimit --as") return end
    -- the budget leaves room for the driver: without it lavapipe's next LLVM compile crashed (SIGSEGV)
    local out, ok, how, status = child("prlimit --as=" .. tostring(2500 * MiB), ([[
      local d, t = device(%q), {}
      while true do
        local okz, m = pcall(zeros, 4096, 4096, d)
        if not okz then print("ERR " .. m) break end
        t[#t + 1] = m
        if #t > 60 then error("no limit was reached") end
      end
      for k = 1, #t do t[k]:release() end
      print("SUM " .. sum(map("x * 3.0")(ones(3, 3, d))))
    ]]):format(id))
    assert(ok, ("child ended by %s %s:\n%s"):format(how, status, out))
    assert(out:find("ERR [^\n]*out of device memory"), out)
    assert(out:find("SUM 27.0", 1, true), out)
  end)
  ::continue::
end

os.execute("rm -rf '" .. tmp .. "'")
t.done()

-- Runs Lua code in a child vela (the binary running this test), for what may
-- hang, die or need a limit: child.run(code [, prefix]) -> exit status, output.
-- prefix: a command put before vela (default "timeout 60"; e.g. "timeout 60
-- prlimit --as=1400000000"). The code is written to a file in child.dir, a
-- fresh directory (removed by child.done()), and gets `dir` as a local.
local child = {}

local p = io.popen("readlink /proc/$PPID/exe")
child.vela = p:read("l")
p:close()
child.dir = os.tmpname()
os.remove(child.dir)
assert(os.execute("mkdir -p " .. child.dir))

function child.run(code, prefix)
  local path = child.dir .. "/child.lua"
  local f = assert(io.open(path, "w"))
  f:write("local dir = " .. string.format("%q", child.dir) .. "\n" .. code)
  f:close()
  local pipe = io.popen((prefix or "timeout 60") .. " " .. child.vela .. " " .. path .. " 2>&1")
  local out = pipe:read("a")
  local _, _, status = pipe:close()
  return status, out
end

function child.done() os.execute("rm -rf '" .. child.dir .. "'") end

return child

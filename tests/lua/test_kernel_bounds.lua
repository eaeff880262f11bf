-- Text the GLSL compiler sees is bounded before it gets there (issue 24,
-- item 8): a 20,000-term map overflowed the stack inside the compiler
-- (SIGSEGV, the session lost) on every device. Also (item 16): kernel{}
-- names an unknown field instead of ignoring it. Run in a child vela, where
-- the crash of the old code can be seen without losing this test.
local t = dofile("tests/lua/t.lua")

local child_helper = dofile("tests/lua/helpers/child.lua")
-- The device the children's kernels run on: the cpu where it can run them.
local kernel_device = t.cpu_kernels() and "cpu" or t.kernel_devices(t.devices())[1]
local function child(code) return child_helper.run(("device(%q)\n"):format(kernel_device or "cpu") .. code, "timeout 120") end

t.test("a 20,000-term map and brackets 5,000 deep are errors before compiling; the session goes on", function()
  if not kernel_device then return io.stderr:write("skip: no device here runs user kernels\n") end
  local status, out = child([[
    print(select(2, pcall(map, "x" .. string.rep("+x", 20000))))
    print(select(2, pcall(map, string.rep("(", 5000) .. "x" .. string.rep(")", 5000))))
    print(select(2, pcall(map, string.rep("exp(", 3000) .. "x" .. string.rep(")", 3000))))
    print(select(2, pcall(kernel, {args = {y = "matrix"}, size = 1, glsl = "y[0] = 1.0" .. string.rep("+1", 20000) .. ";"})))
    print(select(2, pcall(map, "x" .. string.rep(" ", 70000))))
    -- what is within the bounds still compiles and runs: 4,000 terms, 200 brackets
    local f = map("x" .. string.rep(" + x", 3999))
    print("SUM " .. sum(f(ones(2, 2))))
    local g = map(string.rep("(", 200) .. "x * 2.0" .. string.rep(")", 200))
    print("TWO " .. g(ones(1, 1)):get(1, 1))
  ]])
  assert(status == 0, "the child died (" .. tostring(status) .. "): " .. out)
  assert(out:find("map: an expression of 20001 terms; at most 4096 in one map", 1, true), out)
  assert(out:find("map: brackets nested 5000 deep; at most 256", 1, true), out)
  assert(out:find("map: brackets nested 3000 deep; at most 256", 1, true), out)
  assert(out:find("kernel: an expression of 20003 terms; at most 4096 in one statement", 1, true), out)
  assert(out:find("map: the text is 70001 bytes; at most 65536", 1, true), out)
  assert(out:find("SUM 16000.0", 1, true), out)
  assert(out:find("TWO 2.0", 1, true), out)
end)

t.test("kernel{} names an unknown field", function()
  t.raises(function() kernel{args = {y = "matrix"}, size = 1, glsl = "y[0] = 1.0;", sizes = 2} end,
    "kernel:", "unknown field 'sizes'", "args, size, glsl, name, doc")
  t.raises(function() kernel{args = {y = "matrix"}, size = 1, glsl = "y[0] = 1.0;", [1] = 2} end,
    "kernel:", "unknown field number")
end)

child_helper.done()
t.done()

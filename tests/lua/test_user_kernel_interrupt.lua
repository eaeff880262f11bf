-- Ctrl-C stops a long kernel written at the prompt on the cpu device (issue
-- 24, item 11): the cpu's runner submits a large grid in parts and polls the
-- interrupt flag while each part runs, so the call ends after the part that
-- was running, with an error saying how far it got, and the session goes on.
-- Without parts this call ran for minutes. Run in a child vela sent SIGINT.
local t = dofile("tests/lua/t.lua")
local child_helper = dofile("tests/lua/helpers/child.lua")

t.test("cpu: Ctrl-C during a long user kernel stops it between parts; the session goes on", function()
  if not t.cpu_kernels() then return io.stderr:write("skip: the cpu's user kernels (no software Vulkan driver here)\n") end  local status, out = child_helper.run([==[
    local pid = io.open("/proc/self/stat"):read("n")
    local cpu = device("cpu")
    -- 4 million invocations of 30,000 iterations each (within llvmpipe's loop limit): minutes of work.
    local spin = kernel{args = {a = "matrix", s = "matrix"}, name = "spin", size = 4000000,
                        glsl = [[ float acc = 0.0;
                                  for (uint i = 0u; i < 30000u; ++i) acc += at(a, 1u + (i + id()) % 3u, 1u);
                                  if (acc == 1.5) set(s, 1, 1, acc); ]]}
    local a, s = ones(3, 1):to(cpu), zeros(1, 1):to(cpu)
    os.execute("(sleep 1; kill -INT " .. pid .. ") &")
    local t0 = os.time()
    local ok, err = pcall(spin, a, s)
    print("RESULT", ok, tostring(err), os.time() - t0)
    -- the session goes on: a short call runs whole
    local colsum = kernel{args = {a = "matrix", s = "matrix"}, size = function(a, s) return a.cols end,
                          glsl = [[ float acc = 0.0; for (uint i = 1; i <= rows(a); ++i) acc += at(a, i, id() + 1);
                                    set(s, 1, id() + 1, acc); ]]}
    local r = zeros(1, 2):to(cpu)
    colsum(ones(1000, 2):to(cpu), r)
    print("AFTER", r:get(1, 1), r:get(1, 2))
  ]==], "timeout 100")
  assert(status == 0, out)
  local ok, err, secs = out:match("RESULT\t(%a+)\t([^\t]*)\t(%d+)")
  assert(ok == "false", out)
  assert(err:find("interrupted: cpu: spin stopped after", 1, true), out)
  assert(err:find("of 4000000 invocations", 1, true), out)
  assert(tonumber(secs) <= 20, "took " .. secs .. " s to stop: " .. out)
  assert(out:find("AFTER\t1000.0\t1000.0", 1, true), out)
end)

child_helper.done()
t.done()

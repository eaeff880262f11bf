-- Ctrl-C stops a long kernel written at the prompt on every device (issue 24,
-- item 11), and the same device then runs another kernel correctly. Each case
-- runs in a child vela that a shell sends SIGINT once the kernel runs. The
-- kernels are sized from a timed small call to take minutes on the device at
-- hand (whatever its speed), so a call that ends in seconds was stopped.
--   grid: millions of invocations of 30,000 loop iterations each (within
--         llvmpipe's 65,535-iteration bound on an invocation's loops);
--   one:  a single invocation of two nested loops (10^10 iterations and more),
--         only where the driver has no such bound (SwiftShader, GPUs): on
--         llvmpipe the same kernel is refused as a cut loop, which the child
--         says (and the case is then skipped, naming the reason).
-- The error must come within 2 s of the signal: the shell writes
-- /proc/uptime just before its kill, the child reads it after the error.
local t = dofile("tests/lua/t.lua")
local child_helper = dofile("tests/lua/helpers/child.lua")

local function run_case(dev, case)
  return child_helper.run(([==[
    local DEV, CASE = %q, %q
    io.stdout:setvbuf("line")  -- each line out at once: a child cut by its timeout keeps what it said
    local pid = io.open("/proc/self/stat"):read("n")
    local function uptime(path)  -- seconds since boot, read from /proc/uptime or a copy of it
      local f = io.open(path or "/proc/uptime")
      return f and tonumber(f:read("a"):match("^%%S+"))
    end
    device(DEV)
    local spin
    if CASE == "grid" then
      spin = kernel{args = {a = "matrix", s = "matrix", g = "uint", iters = "uint"}, name = "spin",
                    size = function(a, s, sc) return sc.g end,
                    glsl = [[ float acc = 0.0;
                              for (uint i = 0u; i < iters; ++i) acc += at(a, 1u + (i + id()) %% 3u, 1u);
                              if (acc == 1.5) set(s, 1, 1, acc); ]]}
    else
      spin = kernel{args = {a = "matrix", s = "matrix", g = "uint", iters = "uint"}, name = "spin",
                    size = function(a, s, sc) return sc.g end,
                    glsl = [[ float acc = 0.0;
                              uint i = 0u;
                              while (i < iters) {
                                  for (uint j = 0u; j < iters; ++j) acc += at(a, 1u + (i + j) %% 3u, 1u);
                                  ++i;
                              }
                              if (acc == 1.5) set(s, 1, 1, acc); ]]}
    end
    local a, s = ones(3, 1), zeros(1, 1)
    -- Time a small call (the second: the first compiles), then size the real one for minutes.
    local g, iters = 1024, 30000
    if CASE == "one" then g, iters = 1, 3000 end
    local function timed(gg, ii)
      local t0 = clock()
      spin(a, s, {g = gg, iters = ii})
      s:get(1, 1)
      return clock() - t0
    end
    local ok, err = pcall(timed, g, iters)
    if not ok then
      print("CALIBRATE", tostring(err))
      return
    end
    local secs = math.max(timed(g, iters), 1e-4)
    if CASE == "grid" then
      g = math.floor(math.min(2^31, g * 240 / secs))
    else
      iters = math.floor(math.min(2^32 - 1, iters * math.sqrt(240 / secs)))
    end
    print("SIZED", g, iters, secs)
    os.execute("(sleep 1; cat /proc/uptime > " .. dir .. "/sig; kill -INT " .. pid .. ") &")
    local t0 = clock()
    ok, err = pcall(function()
      spin(a, s, {g = g, iters = iters})
      return s:get(1, 1)  -- a Vulkan device waits here
    end)
    local u_err, u_sig = uptime(), uptime(dir .. "/sig")
    print("RESULT", ok, tostring(err), u_sig and string.format("%%.2f", u_err - u_sig) or "nosignal",
          string.format("%%.2f", clock() - t0))
    -- The same device runs another kernel whole: column sums of known values.
    local colsum = kernel{args = {a = "matrix", s = "matrix"}, size = function(a, s) return a.cols end,
                          glsl = [[ float acc = 0.0; for (uint i = 1; i <= rows(a); ++i) acc += at(a, i, id() + 1);
                                    set(s, 1, id() + 1, acc); ]]}
    local rows, want = {}, {0, 0, 0}
    for i = 1, 1000 do
      rows[i] = {}
      for j = 1, 3 do
        rows[i][j] = ((i * 7 + j * 3) %% 11) / 4  -- exact in float32, and so are the sums
        want[j] = want[j] + rows[i][j]
      end
    end
    local r = zeros(1, 3)
    colsum(from(rows), r)
    print("AFTER", r:get(1, 1) == want[1] and r:get(1, 2) == want[2] and r:get(1, 3) == want[3],
          r:get(1, 1), want[1])
  ]==]):format(dev, case), "timeout 45")  -- a child takes seconds; one whose kernel never stops is cut, its lines kept
end

for _, dev in ipairs(t.kernel_devices(t.devices())) do
  for _, case in ipairs{"grid", "one"} do
    t.test(dev .. ", " .. case .. ": Ctrl-C stops a long user kernel within 2 s; the device runs the next one", function()
      local status, out = run_case(dev, case)
      io.stderr:write(dev, " ", case, ":\n", out)
      local calib = out:match("CALIBRATE\t([^\n]*)")
      if calib and case == "one" and calib:find("65,535 iterations", 1, true) then
        return io.stderr:write("skip: ", dev, " bounds an invocation's loops (llvmpipe): a single invocation cannot run long\n")
      end
      assert(status == 0, "the child ended with " .. tostring(status) .. ": " .. out)
      assert(not calib, out)
      local ok, err, latency = out:match("RESULT\t(%a+)\t([^\t]*)\t([%w%.]+)")
      assert(ok == "false", "the call was not stopped: " .. out)
      assert(err:find("interrupted", 1, true), out)
      assert(tonumber(latency), "no signal was sent: " .. out)
      assert(tonumber(latency) < 2, "the error came " .. latency .. " s after the signal: " .. out)
      assert(out:find("AFTER\ttrue", 1, true), "the next kernel's column sums are wrong: " .. out)
    end)
  end
end

-- The check in front of each loop must read the word again each time: a plain
-- load of a volatile block member through a buffer_reference is only a
-- decorated OpLoad, which a GPU's compiler may hoist out of the loop.
t.test("the stop word is read with an atomic load, in front of each loop", function()
  local k = kernel{args = {a = "matrix"}, size = 1, name = "loops",
                   glsl = [[ for (uint i = 0u; i < 3u; ++i) set(a, 1, 1, float(i)); ]]}
  local g = kernel_info(k).glsl
  assert(g:find("vela_go()", 1, true), "no check in front of the loop:\n" .. g)
  local body = g:match("bool vela_stopped%(%)%s*(%b{})")
  assert(body, "no vela_stopped in the kernel's source:\n" .. g)
  assert(body:find("atomicLoad(VelaStop(", 1, true), "the stop word is not read with an atomic load: " .. body)
end)

child_helper.done()
t.done()

-- Loops in kernels written at the prompt (issue 24, item 1): llvmpipe (lavapipe,
-- and the cpu device, which runs user kernels through it) ends an invocation's
-- loops after 65,535 iterations in all, without an error: the column sum of
-- ?kernel gave 131,070 instead of 140,000 on 70,000 rows. Now every device
-- either gives the right sum (SwiftShader, GPUs) or raises an error naming the
-- kernel and the limit (llvmpipe): never a silently cut result. Checked
-- against sums computed here; a kernel within the limit runs on every device.
local t = dofile("tests/lua/t.lua")

local ids = t.kernel_devices(require("vela.bench_native").devices())  -- "cpu" first, then every usable Vulkan device

local colsum = kernel{args = {a = "matrix", s = "matrix", scale = "float"}, name = "colsum",
                      size = function(a, s) return a.cols end,
                      glsl = [[ float acc = 0.0;
                                for (uint i = 1; i <= rows(a); ++i) acc += at(a, i, id() + 1);
                                set(s, 1, id() + 1, scale * acc); ]]}
-- Two loops of n iterations each: together past the limit from n = 32,768.
local twice = kernel{args = {a = "matrix", s = "matrix"}, name = "twice",
                     size = function(a, s) return a.cols end,
                     glsl = [[ float acc = 0.0;
                               for (uint i = 1; i <= rows(a); ++i) acc += at(a, i, id() + 1);
                               for (uint i = 1; i <= rows(a); ++i) acc += 2.0 * at(a, i, id() + 1);
                               set(s, 1, id() + 1, acc); ]]}

-- Runs f(a, s) and reads s: the sums, or nil and the error (on a Vulkan device
-- the error comes with the read that waits for the kernel).
local function run(f, a, s, scalars)
  local ok, err = pcall(function()
    if scalars then f(a, s, scalars) else f(a, s) end
    return s:totable()
  end)
  if ok then return err end
  return nil, tostring(err)
end

for _, id in ipairs(ids) do
  local D = id .. ": "
  local dev = device(id)

  t.test(D .. "?kernel's column sum on 70,000 rows: 140,000 or an error naming the limit, never 131,070", function()
    local a = ones(70000, 2):to(dev)
    local s = zeros(1, 2):to(dev)
    local got, err = run(colsum, a, s, {scale = 2})
    if got then
      assert(got[1][1] == 140000 and got[1][2] == 140000, ("%s: got %.9g, %.9g; want 140000"):format(id, got[1][1], got[1][2]))
      print(id .. ": 70,000-row column sum right (no loop limit on this driver)")
    else
      assert(err:find("colsum: an invocation's loops ran 65,535 iterations in all", 1, true), err)
      print(id .. ": 70,000-row column sum refused: " .. err:sub(1, 100))
    end
    -- The session goes on, and a kernel within the limit is right (nothing stale reported).
    local b = ones(60000, 3):to(dev)
    local r = zeros(1, 3):to(dev)
    local ok, e = run(colsum, b, r, {scale = 0.5})
    assert(ok, e)
    for j = 1, 3 do assert(ok[1][j] == 30000, ("%s: column %d: got %.9g, want 30000"):format(id, j, ok[1][j])) end
  end)

  t.test(D .. "two loops of 40,000 iterations (the limit counts all loops together)", function()
    local v = {}
    for k = 1, 40000 do v[k] = (k % 7) - 3 end  -- integers: exact in float32 sums of this size
    local a = matrix(40000, 1, v):to(dev)
    local want = 0
    for k = 1, 40000 do want = want + 3 * v[k] end
    local got, err = run(twice, a, zeros(1, 1):to(dev))
    if got then
      assert(got[1][1] == want, ("%s: got %.9g, want %.9g"):format(id, got[1][1], want))
    else
      assert(err:find("twice: an invocation's loops ran 65,535 iterations in all", 1, true), err)
    end
    -- 20,000 each (40,000 together): within the limit on every device.
    local h = a:view(1, 1, 20000, 1)
    want = 0
    for k = 1, 20000 do want = want + 3 * v[k] end
    local ok, e = run(twice, h, zeros(1, 1):to(dev))
    assert(ok, e)
    assert(ok[1][1] == want, ("%s: got %.9g, want %.9g"):format(id, ok[1][1], want))
  end)
end

t.done()

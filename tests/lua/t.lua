-- A tiny test harness for the Lua tests: t.test(name, fn) runs fn in pcall and
-- t.done() prints 'N passed, N failed' and exits non-zero on a failure.
local t = {passed = 0, failed = 0}

function t.test(name, fn)
  local ok, err = xpcall(fn, debug.traceback)
  if ok then
    t.passed = t.passed + 1
  else
    t.failed = t.failed + 1
    io.stderr:write("FAIL ", name, "\n", tostring(err), "\n")
  end
end

-- Checks that fn raises an error whose message contains every string in `parts`.
function t.raises(fn, ...)
  local ok, err = pcall(fn)
  assert(not ok, "expected an error, got none")
  err = tostring(err)
  for _, p in ipairs{...} do
    assert(err:find(p, 1, true), ("error %q does not contain %q"):format(err, p))
  end
  return err
end

function t.near(a, b, tol, what)
  tol = tol or 1e-5
  local d = math.abs(a - b)
  assert(d <= tol * math.max(1, math.abs(b)), ("%s: %.9g is not within %g of %.9g"):format(what or "near", a, tol, b))
end

-- The contents of a file, or nil when it cannot be read.
function t.read_file(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

-- Writes bytes to the file at path (replaced if there); returns path.
function t.write_file(path, bytes)
  local f = assert(io.open(path, "wb"))
  f:write(bytes)
  f:close()
  return path
end

-- A matrix's rows as a Lua table, read on the host.
function t.host(m) return m:to("cpu"):totable() end

-- Deterministic values in [-2, 2) independent of vela's generators, rounded
-- to float32 (what a matrix holds): a rows × cols host table.
function t.values(rows, cols, seed)
  local m, s = {}, seed
  for i = 1, rows do
    m[i] = {}
    for j = 1, cols do
      s = (s * 1103515245 + 12345) % 2147483648
      m[i][j] = string.unpack("<f", string.pack("<f", s / 2147483648 * 4 - 2))
    end
  end
  return m
end

-- `steps` SGD steps (lr 0.1, momentum 0.9) of net on one batch (x, labels)
-- under softmax cross-entropy: the loss of each step, and the optimizer.
function t.sgd_losses(net, x, labels, steps)
  local nn, optim = require "vela.nn", require "vela.optim"
  local loss, opt = nn.softmax_xent(), optim.sgd{lr = 0.1, momentum = 0.9}
  local out = {}
  for s = 1, steps do
    out[s] = nn.mean(loss:forward(net:forward(x), labels))
    net:backward(loss:backward())
    opt:step(net)
  end
  return out, opt
end

-- The ids of the usable devices (cpu first), for tests run on each.
function t.devices()
  local ids = {}
  for _, d in ipairs(devices()) do
    if d.usable then ids[#ids + 1] = d.id end
  end
  return ids
end

-- fn(id) for each usable device, made current first.
function t.each_device(fn)
  for _, id in ipairs(t.devices()) do
    device(id)
    fn(id)
  end
end

-- Whether kernels written at the prompt (map, kernel{}) can run on the cpu
-- here: the cpu runs them through a software Vulkan driver (lavapipe,
-- SwiftShader), which a machine with a hardware GPU may lack; there the cpu
-- says so in an error (tests/lua/test_user_kernels.lua checks its words).
function t.cpu_kernels()
  for _, d in ipairs(devices()) do
    if d.usable and d.software and d.id ~= "cpu" then return true end
  end
  return false
end

-- ids without "cpu" where the cpu cannot run user kernels, saying so once.
function t.kernel_devices(ids)
  if t.cpu_kernels() then return ids end
  io.stderr:write("skip: the cpu's user kernels (no software Vulkan driver here)\n")
  local out = {}
  for _, id in ipairs(ids) do
    if id ~= "cpu" then out[#out + 1] = id end
  end
  return out
end

function t.done()
  print(("%d passed, %d failed"):format(t.passed, t.failed))
  os.exit(t.failed == 0 and 0 or 1)
end

return t

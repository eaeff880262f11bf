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

-- The ids of the usable devices (cpu first), for tests run on each.
function t.devices()
  local ids = {}
  for _, d in ipairs(devices()) do
    if d.usable then ids[#ids + 1] = d.id end
  end
  return ids
end

function t.done()
  print(("%d passed, %d failed"):format(t.passed, t.failed))
  os.exit(t.failed == 0 and 0 or 1)
end

return t

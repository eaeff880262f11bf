-- ?name for the names a Torch7, PyTorch or NumPy user types: the vocabulary
-- vela has now (transpose, narrow, clone) answers under its own name, the
-- other spellings lead there, and ?m:method with m a matrix at the prompt
-- finds Matrix:method alone. help prints, so each case runs in a fresh
-- process and its output is read back.
local t = dofile("tests/lua/t.lua")

local function help_of(code)
  local p <close> = assert(io.popen(("%q -e %q 2>&1"):format(arg[-1], code)))
  return p:read("a")
end

t.test("transpose, narrow and clone are their own entries; no synonym sends them to t, view or copy", function()
  for name, sig in pairs{transpose = "transpose(x) -> cols×rows", narrow = "narrow(x, dim, start, len)",
                         clone = "clone(x) -> matrix"} do
    local out = help_of(("help(%q)"):format(name))
    assert(out:find(sig, 1, true), name .. ": " .. out)
    assert(not out:find("is called", 1, true), name .. " is sent elsewhere: " .. out)
  end
  for _, name in ipairs{"Matrix:t", "Matrix:view", "Matrix:copy"} do
    local out = help_of(("help(%q)"):format(name))
    for _, theirs in ipairs{"Torch7/PyTorch: transpose", "Torch7/PyTorch: narrow", "Torch7/PyTorch: clone"} do
      assert(not out:find(theirs, 1, true), name .. " claims " .. theirs .. ": " .. out)
    end
  end
end)

t.test("NumPy's and PyTorch's other spellings lead to transpose and clone", function()
  for theirs, ours in pairs{swapaxes = "transpose", swapdims = "transpose", contiguous = "clone"} do
    local out = help_of(("help(%q)"):format(theirs))
    assert(out:find(("(%s is called %s in vela)"):format(theirs, ours), 1, true), theirs .. ": " .. out)
    assert(out:find(ours .. "(x)", 1, true), theirs .. ": " .. out)
  end
end)

t.test("?m:size with m a matrix shows Matrix:size alone (not dist.size); ?m:shape Matrix:shape", function()
  local out = help_of('m = zeros(2, 3); help("m:size")')
  assert(out:find("m:size() -> rows, cols", 1, true), out)
  assert(not out:find("dist.size", 1, true), "another module's size: " .. out)
  out = help_of('m = zeros(2, 3); help("m:shape")')
  assert(out:find("m:shape() -> rows, cols", 1, true), out)
  -- a name that is not a matrix still finds every entry of that method name
  out = help_of('help("x:size")')
  assert(out:find("m:size()", 1, true) and out:find("dist.size()", 1, true), out)
  -- a method a matrix does not have: the usual answer
  out = help_of('m = zeros(2, 3); help("m:no_such_method")')
  assert(out:find("no help for 'm:no_such_method'", 1, true), out)
end)

t.done()

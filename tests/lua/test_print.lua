-- Printing: a header with shape, dtype and device, then right-aligned values
-- with one common width; the corners of large matrices with ⋯ ⋮ ⋱; the same
-- text on every device (printing downloads, so it waits for queued work).
local t = dofile("tests/lua/t.lua")

local ids = t.devices()

local function is(got, want)
  assert(got == want, ("printed\n%s\nexpected\n%s"):format(got, want))
end

for _, id in ipairs(ids) do
  device(id)
  local D = id .. ": "
  local on = " on " .. id

  t.test(D .. "small matrices print every value, aligned", function()
    is(tostring(from{{1, 2, 3}, {4, 5, 6}}), "matrix 2×3 float32" .. on .. "\n  1  2  3\n  4  5  6")
    is(tostring(from{{1.5, -2}, {3, 100}}), "matrix 2×2 float32" .. on .. "\n  1.5   -2\n    3  100")
    is(tostring(from{{0.1, 1e-5}}), "matrix 1×2 float32" .. on .. "\n    0.1  1e-05")
    is(tostring(from{7}), "matrix 1×1 float32" .. on .. "\n  7")
    is(tostring(from{1, 2, 3}), "matrix 3×1 float32" .. on .. "\n  1\n  2\n  3")
    is(tostring(matrix(1, 2, {0, 255}, "uint8")), "matrix 1×2 uint8" .. on .. "\n    0  255")
    is(tostring(from{{1 / 3, -0.25}}), "matrix 1×2 float32" .. on .. "\n  0.333333     -0.25")
    is(tostring(zeros(6, 6)):gsub("\n.*", ""), "matrix 6×6 float32" .. on)
    local _, lines = tostring(ones(6, 6)):gsub("\n", "")
    assert(lines == 6, "a 6×6 matrix prints in full")
  end)

  t.test(D .. "views print their own logical elements", function()
    local a = from{{1, 2, 3}, {4, 5, 6}}
    is(tostring(a:t()), "matrix 3×2 float32" .. on .. "\n  1  4\n  2  5\n  3  6")
    is(tostring(a:col(2)), "matrix 2×1 float32" .. on .. "\n  2\n  5")
    is(tostring(a:row(2)), "matrix 1×3 float32" .. on .. "\n  4  5  6")
    is(tostring(a:view(1, 2, 2, 2)), "matrix 2×2 float32" .. on .. "\n  2  3\n  5  6")
  end)

  t.test(D .. "empty and released matrices print their header", function()
    is(tostring(zeros(0, 3)), "matrix 0×3 float32" .. on)
    is(tostring(zeros(4, 0)), "matrix 4×0 float32" .. on)
    local m = ones(3, 2)
    m:release()
    is(tostring(m), "matrix 3×2 float32" .. on .. " (released)")
  end)

  t.test(D .. "up to 1,000 elements print whole; printopts changes it", function()
    printopts{linewidth = 400}  -- rows of 100 columns on one line (test_print_width.lua checks the blocks)
    local _, lines = tostring(ones(7, 2)):gsub("\n", "")
    assert(lines == 7, "ones(7, 2) prints whole")
    _, lines = tostring(ones(10, 100)):gsub("\n", "")
    assert(lines == 10 and not tostring(ones(10, 100)):find("⋯"), "1,000 elements print whole")
    local s = tostring(ones(7, 143))  -- 1,001 elements: corners
    _, lines = s:gsub("\n", "")
    assert(lines == 7 and s:find("⋯") and s:find("⋮"), s)
    printopts{rows = 2, cols = 4}
    s = tostring(ones(7, 143))
    _, lines = s:gsub("\n", "")
    assert(lines == 3 and select(2, s:gsub("  1", "")) == 8, s)
    printopts{full = true}
    _, lines = tostring(ones(40, 40)):gsub("\n", "")
    assert(lines == 40)
    printopts{full = false, precision = 3}
    is(tostring(from{{1 / 3, 2 / 3}}), "matrix 1×2 float32" .. on .. "\n  0.333  0.667")
    local o = printopts("default")
    assert(o.rows == 6 and o.cols == 6 and o.threshold == 1000 and o.precision == 6 and o.full == false)
    t.raises(function() printopts{rowz = 3} end, "printopts: unknown option 'rowz'")
    t.raises(function() printopts{rows = 0} end, "printopts: rows must be a positive integer")
  end)

  t.test(D .. "widely different magnitudes print under a scale line, as Torch7", function()
    is(tostring(from{{1.5e6, 2.3e3}, {-3e6, 0.5}}), table.concat({
      "matrix 2×2 float32" .. on, "  1e+06 *", "   1.5000   0.0023", "  -3.0000   0.0000"}, "\n"))
    is(tostring(from{{2e-5, 1e-4}}), "matrix 1×2 float32" .. on .. "\n  1e-04 *\n  0.2000  1.0000")
    -- integers never scale (pixels, labels, counts)
    is(tostring(from{{1e6, 1}}), "matrix 1×2 float32" .. on .. "\n  1e+06      1")
  end)

  t.test(D .. "large matrices show their corners", function()
    printopts{threshold = 0}  -- the corners of small ones too
    -- element (i, j) = 10·i + j
    local vals = {}
    for j = 1, 8 do
      for i = 1, 8 do vals[#vals + 1] = 10 * i + j end
    end
    is(tostring(matrix(8, 8, vals)), table.concat({
      "matrix 8×8 float32" .. on,
      "  11  12  13  ⋯  16  17  18",
      "  21  22  23  ⋯  26  27  28",
      "  31  32  33  ⋯  36  37  38",
      "   ⋮   ⋮   ⋮  ⋱   ⋮   ⋮   ⋮",
      "  61  62  63  ⋯  66  67  68",
      "  71  72  73  ⋯  76  77  78",
      "  81  82  83  ⋯  86  87  88"}, "\n"))
    is(tostring(matrix(2, 10, 1.5)), table.concat({
      "matrix 2×10 float32" .. on,
      "  1.5  1.5  1.5  ⋯  1.5  1.5  1.5",
      "  1.5  1.5  1.5  ⋯  1.5  1.5  1.5"}, "\n"))
    local col = zeros(7, 1)
    for i = 1, 7 do col:set(i, i) end
    is(tostring(col), "matrix 7×1 float32" .. on .. "\n  1\n  2\n  3\n  ⋮\n  5\n  6\n  7")
    is(tostring(col:t()), "matrix 1×7 float32" .. on .. "\n  1  2  3  ⋯  5  6  7")
    -- a big matrix: only the corners are downloaded, the header has the full shape
    local big = zeros(784, 60000, "uint8")
    local s = tostring(big)
    assert(s:find("^matrix 784×60000 uint8" .. on .. "\n  0  0  0  ⋯  0  0  0\n"), s)
    local _, lines = s:gsub("\n", "")
    assert(lines == 7)
    big:release()
    printopts("default")
  end)
end

t.test("the same text on every device", function()
  local m = from{{1, -2.5, 3e-7}, {4e6, 5, 0}}
  local first
  for _, id in ipairs(ids) do
    local s = tostring(m:to(id)):gsub(" on [^\n]*", "")
    first = first or s
    is(s, first)
  end
  is(first, "matrix 2×3 float32\n  1e+06 *\n   0.0000  -0.0000   0.0000\n   4.0000   0.0000   0.0000")
end)

t.test("help: every function of this surface and every method is documented", function()
  -- discovered: every function of the vela table (the op table's kernels, their
  -- derivatives and fused backward steps included), every Matrix and Device method
  local names = {}
  local function add(prefix, tbl)
    local found = {}
    for k, v in pairs(tbl) do
      if type(k) == "string" and not k:match("^_") and type(v) == "function" then found[#found + 1] = prefix .. k end
    end
    table.sort(found)
    for _, n in ipairs(found) do names[#names + 1] = n end
  end
  add("", vela)
  add("Matrix:", getmetatable(zeros(1, 1)))
  add("Device:", getmetatable(device()))
  assert(#names > 100, "the vela table has only " .. #names .. " functions and methods")
  local script = {}
  for _, n in ipairs(names) do script[#script + 1] = ("print('@@%s') help(%q)"):format(n, n) end
  local path = os.tmpname()
  local f = assert(io.open(path, "w"))
  f:write(table.concat(script, "\n"))
  f:close()
  local p = assert(io.popen(("%q %q"):format(arg[-1], path)))
  local out = p:read("a")
  p:close()
  os.remove(path)
  for _, n in ipairs(names) do
    local body = out:match("@@" .. n:gsub("%p", "%%%0") .. "\n(.-)\n@@") or out:match("@@" .. n:gsub("%p", "%%%0") .. "\n(.*)$")
    assert(body and #body > 20, "no help for " .. n .. ": " .. tostring(body))
    assert(not body:find("without documentation") and not body:find("no help for"), n .. ": " .. body)
  end
  assert(out:find("@@tanh_prime\n[^@]*ACTIVATION"), "derivatives say what they take")
  assert(out:find("@@gelu_prime\n[^@]*pre%-activation z"), "gelu_prime takes z")
  assert(out:find("@@tanh_backward\n[^@]*da ∘ tanh′%(a%)"), "the fused backward step says what it computes")
  assert(out:find("@@mm\n[^@]*addmm") and out:find("@@rk\n[^@]*addr") and out:find("@@axpy\n[^@]*add%(α, x%)"))
  assert(out:find("@@mv\n[^@]*addmv"))
end)

t.done()

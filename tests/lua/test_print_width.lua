-- Matrices print within the line width (printopts' linewidth; 0: the
-- terminal, $COLUMNS or 80): wider rows come in blocks of columns under
-- "Columns a to b" lines, as Torch7 prints them. Also the option checks of
-- the shell's own functions (printopts, who, bench, diverge, compare) and
-- threads(n) beyond the cores.
local t = dofile("tests/lua/t.lua")

local function lines(s)
  local out = {}
  for l in (s .. "\n"):gmatch("([^\n]*)\n") do out[#out + 1] = l end
  return out
end

-- The values of every row, read back from the printed blocks in order.
local function rows_read(s)
  local rows, r, header = {}, 0, 0
  for _, l in ipairs(lines(s)) do
    if l:match("^matrix ") then header = header + 1
    elseif l:match("^Columns ") then r = 0
    elseif l:match("%S") then
      r = r + 1
      rows[r] = rows[r] or {}
      for v in l:gmatch("%S+") do rows[r][#rows[r] + 1] = tonumber(v) end
    end
  end
  return rows
end

t.test("a 3x30 matrix at 80 and 160 columns: blocks, widths, every value in order", function()
  local v = {}
  for i = 1, 3 do v[i] = {} for j = 1, 30 do v[i][j] = i * 1000 + j + 0.25 end end  -- "1001.25": 7 wide
  local m = from(v)
  for _, w in ipairs{80, 160} do
    printopts{linewidth = w}
    local s = tostring(m)
    local blocks = 0
    for _, l in ipairs(lines(s)) do
      assert(utf8.len(l) <= w, ("line of %d > %d: %s"):format(utf8.len(l), w, l))
      if l:match("^Columns ") then blocks = blocks + 1 end
    end
    -- each column takes 2 + 7 cells: 8 per block at 80 (72 cells), 17 at 160 (153)
    local per = w == 80 and 8 or 17
    assert(blocks == math.ceil(30 / per), ("%d blocks at %d"):format(blocks, w))
    assert(s:find("\nColumns 1 to " .. per .. "\n", 1, true), s)
    assert(s:find("\n\nColumns " .. (per + 1) .. " to " .. math.min(30, 2 * per) .. "\n", 1, true), s)
    local got = rows_read(s)
    for i = 1, 3 do
      assert(#got[i] == 30, #got[i])
      for j = 1, 30 do assert(got[i][j] == v[i][j], ("(%d, %d): %s ~= %s"):format(i, j, got[i][j], v[i][j])) end
    end
  end
  printopts{linewidth = 270}  -- 30 columns of 2 + 7 cells: exactly one line
  assert(not tostring(m):find("Columns", 1, true), "a row that fits prints in one block")
  printopts("default")
end)

t.test("an elided matrix: the blocks name the real column indices", function()
  printopts{linewidth = 40}
  local m = matrix(2000, 100)
  vela.fill(m, 123456.5)  -- wide cells
  local s = tostring(m)
  for _, l in ipairs(lines(s)) do assert(utf8.len(l) <= 40, l) end
  assert(s:find("Columns 1 to", 1, true) and s:find(" to 100\n", 1, true), s)
  printopts("default")
end)

t.test("printopts: linewidth checked; unknown keys name the nearest", function()
  t.raises(function() printopts{linewidth = 10} end, "printopts: linewidth must be 0 (the screen's width) or at least 20, got 10")
  t.raises(function() printopts{linewdith = 80} end,
    "printopts: unknown option 'linewdith' (did you mean 'linewidth'?); options: rows, cols, threshold, precision, linewidth, full")
  assert(printopts().linewidth == 0)
end)

t.test("the shell's own option tables", function()
  t.raises(function() who{al = true} end, "who: unknown option 'al' (did you mean 'all'?); options: all")
  t.raises(function() bench(function() end, {runs = 3}) end, "bench: unknown option 'runs'; options: n, warmup")
  t.raises(function() bench(function() end, {warmpu = 1}) end, "(did you mean 'warmup'?)")
  t.raises(function() diverge(function() end, {rtl = 1}) end, "diverge: unknown option 'rtl' (did you mean 'rtol'?); options: ref, rtol, atol")
  t.raises(function() compare(function() return ones(1, 1) end, {device = {"cpu"}}) end,
    "compare: unknown option 'device' (did you mean 'devices'?); options: inputs, devices")
  t.raises(function() map("x * 2", {nmae = "dbl"}) end, "map: unknown option 'nmae' (did you mean 'name'?); options: name, doc")
  t.raises(function() kernel{glsl = "", arg = {}} end, "kernel: unknown field 'arg' (expected args, size, glsl, name, doc)")
  -- the accepted forms still work
  assert(who{all = true} ~= nil)
  assert(bench(function() end, {n = 2, warmup = 0}).n == 2)
  assert(compare(function() return ones(1, 1) end, {"cpu"}) ~= nil)
end)

t.test("threads(n) beyond the cores is refused with the count", function()
  local n = threads()
  local err = t.raises(function() threads(100000) end, "threads: n is 100000 but this machine has ")
  local cores = tonumber(err:match("has (%d+) core"))
  assert(cores and cores >= 1 and err:find(("(threads(%d) uses them all)"):format(cores), 1, true), err)
  assert(threads(cores) == cores)
  threads(n)
end)

t.done()

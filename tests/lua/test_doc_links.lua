-- Every relative link of README.md and docs/*.md resolves: the file exists
-- and, for a link with #anchor, the target has a heading with that anchor
-- (GitHub's rule: lower case, punctuation and symbols dropped, spaces to
-- hyphens, -1, -2, ... for repeats). Links inside code blocks and inline code
-- are not links. Runs from the repository root, as CTest runs it.
local t = dofile("tests/lua/t.lua")
local function eq(a, b) assert(a == b, ("got %s, expected %s"):format(tostring(a), tostring(b))) end

local read = t.read_file

local function markdown_files()
  local files = {"README.md"}
  local p = assert(io.popen("ls docs/*.md"))
  for line in p:lines() do files[#files + 1] = line end
  p:close()
  return files
end

-- Lines outside fenced code blocks, with inline code removed.
local function prose_lines(text)
  local out, fence = {}, false
  for line in (text .. "\n"):gmatch("(.-)\n") do
    if line:match("^%s*```") then
      fence = not fence
    elseif not fence then
      out[#out + 1] = line:gsub("`[^`]*`", "")
    end
  end
  return out
end

-- Kept in a slug besides ASCII letters, digits, "-", "_" and spaces: letters
-- and digits beyond ASCII. Dropped: the symbols and punctuation these docs use.
local function keep_codepoint(c)
  if c < 128 then return false end
  if c == 0xB2 or c == 0xB3 or c == 0xB9 then return true end -- ² ³ ¹ are digits
  if c <= 0xBF or c == 0xD7 or c == 0xF7 then return false end -- Latin-1 punctuation, × ÷
  if c >= 0x2000 and c <= 0x2BFF then return false end -- punctuation, arrows, math, boxes
  return true
end

local function slug(heading)
  local s = {}
  for _, c in utf8.codes(heading) do
    if c < 128 then
      local ch = string.char(c):lower()
      if ch:match("[%w_%-]") then s[#s + 1] = ch elseif ch == " " then s[#s + 1] = "-" end
    elseif keep_codepoint(c) then
      s[#s + 1] = utf8.char(c):lower()
    end
  end
  return table.concat(s)
end

local anchors_of = {}
local function anchors(path)
  if anchors_of[path] then return anchors_of[path] end
  local set, seen = {}, {}
  local text = read(path)
  local fence = false
  for line in (text .. "\n"):gmatch("(.-)\n") do
    if line:match("^%s*```") then fence = not fence end
    local h = not fence and line:match("^#+%s+(.-)%s*$")
    if h then
      local base = slug(h:gsub("`", ""))
      local a = base
      if seen[base] then a = base .. "-" .. seen[base] end
      seen[base] = (seen[base] or 0) + 1
      set[a] = true
    end
  end
  anchors_of[path] = set
  return set
end

local function dir_of(path) return path:match("^(.*)/") or "." end

local function normalize(path)
  local parts = {}
  for part in path:gmatch("[^/]+") do
    if part == ".." and #parts > 0 and parts[#parts] ~= ".." then
      parts[#parts] = nil
    elseif part ~= "." then
      parts[#parts + 1] = part
    end
  end
  return table.concat(parts, "/")
end

-- Returns the list of broken links, each "file: target (why)".
local function broken_links(files)
  local broken = {}
  for _, file in ipairs(files) do
    for _, line in ipairs(prose_lines(assert(read(file), file))) do
      for target in line:gmatch("%]%(([^)%s]+)%)") do
        if not target:match("^%a[%w+.-]*:") then -- http:, https:, mailto: are not checked
          local path, anchor = target:match("^([^#]*)#?(.*)$")
          local resolved = path == "" and file or normalize(dir_of(file) .. "/" .. path)
          if not read(resolved) and not io.open(resolved .. "/.") then
            broken[#broken + 1] = ("%s: %s (no file %s)"):format(file, target, resolved)
          elseif anchor ~= "" and resolved:match("%.md$") and not anchors(resolved)[anchor] then
            broken[#broken + 1] = ("%s: %s (no heading #%s in %s)"):format(file, target, anchor, resolved)
          end
        end
      end
    end
  end
  return broken
end

t.test("slugs follow GitHub's rule", function()
  eq(slug("Kernels written at the prompt"), "kernels-written-at-the-prompt")
  eq(slug("mm_regblock: the MR × NR sweep"), "mm_regblock-the-mr--nr-sweep")
  eq(slug("Saving and loading matrices (NumPy's formats)"), "saving-and-loading-matrices-numpys-formats")
  eq(slug("examples/mnist.lua"), "examplesmnistlua")
end)

t.test("every relative link of README.md and docs/ resolves", function()
  local broken = broken_links(markdown_files())
  assert(#broken == 0, #broken .. " broken links:\n  " .. table.concat(broken, "\n  "))
end)

t.test("the check finds a missing file and a missing heading", function()
  local tmp = "test_doc_links_tmp.md" -- in the root, so that README.md resolves
  local f = assert(io.open(tmp, "w"))
  f:write("# Top\n[a](README.md) [b](no_such_file.md) [c](README.md#no-such-heading) `[d](x.md)`\n```\n[e](y.md)\n```\n")
  f:close()
  local broken = broken_links({tmp})
  os.remove(tmp)
  eq(#broken, 2)
  assert(broken[1]:find("no_such_file.md", 1, true), broken[1])
  assert(broken[2]:find("no heading #no-such-heading", 1, true), broken[2])
end)

t.done()

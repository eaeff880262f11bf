-- The docs cannot drift from the tables: every op of the op table
-- (src/core/ops.def), every kernel of the kernel table
-- (src/core/kernels.def, under its Lua names), and every Lua function the shell
-- exposes (the globals that are not Lua's own, the functions of require "vela",
-- of the modules nn, optim, data, plot, ... and the methods of a matrix) has
--   1. an entry in the reference docs: a code span that calls it (`name(`,
--      `name{`, `nn.name(`, `m:name(`) or names it alone (`name`), in
--      docs/lua-api.md or a topic's reference file listed below, and
--   2. a help entry that ?name finds (vela.doc(name)).
-- Runs from the repository root, as CTest runs it.
local t = dofile("tests/lua/t.lua")

-- The reference: lua-api.md, and the topic files that hold their area's
-- reference (a helper's own file, where it exists).
local REFERENCE = {"docs/lua-api.md", "docs/jupyter.md", "docs/dist.md", "docs/edge-contract.md"}

local read = t.read_file

-- The names a text documents: every code span's calls and bare names, with
-- their owner ("nn.linear", "m:tanh", "vela.load") and without it.
local function documented_names(text)
  local names = {}
  local function add(token)
    names[token] = true
    local owner, sep, last = token:match("^(.-)([%.:])([%w_]+)$")
    if owner then
      names[sep .. last] = true -- ":tanh", ".linear": a method or field of some owner
      if owner == "vela" then names[last] = true end
    end
  end
  local function scan(span)
    for token in span:gmatch("([%a_][%w_%.:]*)%s*[%({]") do add(token) end
    local bare = span:match("^%s*([%a_][%w_%.:]*)%s*$")
    if bare then add(bare) end
    local list = span:match("^%s*([%a_][%w_ ]-)%s*%(") -- `relu sigmoid tanh (x [, y])`: one row for several
    if list then for token in list:gmatch("[%a_][%w_]*") do add(token) end end
  end
  for block in text:gmatch("```[^\n]*\n(.-)```") do scan(block) end
  for span in text:gsub("```.-```", ""):gmatch("`([^`\n]+)`") do scan(span) end
  return names
end

local function reference_names()
  local all = {}
  for _, path in ipairs(REFERENCE) do
    local text = read(path)
    if text then
      for k in pairs(documented_names(text)) do all[k] = true end
    end
  end
  return all
end

-- Is `name` ("mm", "nn.linear", "Matrix:view") documented in `ref`?
local function in_reference(ref, name)
  if ref[name] then return true end
  local owner, sep, last = name:match("^(.-)([%.:])([%w_]+)$")
  if owner == "Matrix" then return ref[":" .. last] or ref["." .. last] end -- m:name or x.name
  return false
end

-- The op table: each activation gives name, name_prime, name_backward.
local function op_table()
  local text = assert(read("src/core/ops.def"), "src/core/ops.def")
  local ops = {}
  for name in text:gmatch("\nVELA_ACT%(([%w_]+),") do
    ops[#ops + 1] = name
    ops[#ops + 1] = name .. "_prime"
    ops[#ops + 1] = name .. "_backward"
  end
  for name in text:gmatch("\nVELA_FN%(([%w_]+),") do ops[#ops + 1] = name end
  assert(#ops >= 20, "found only " .. #ops .. " ops in src/core/ops.def: has its format changed?")
  return ops
end

-- The kernels of the kernel table (src/core/kernels.def) under the names Lua
-- calls them: each row's labels (the names profile() and the user give it), or
-- for a row whose names come from elsewhere (labels ""), this test's LUA_NAMES.
-- A row with neither fails the test.
local LUA_NAMES = {unary = {}, binary = {"mul", "div", "add", "sub"}, act_backward = {}, run_user = {"map", "kernel"}}
local function device_kernels()
  local text = assert(read("src/core/kernels.def"), "src/core/kernels.def"):gsub("//[^\n]*", "")
  local kernels = {}
  for row in text:gmatch("VELA_KERNEL(%b())") do
    local name = assert(row:match("^%(%s*[%w_:]+%s*,%s*([%w_]+)%s*,"), "a row of kernels.def: " .. row)
    local labels = assert(row:match('"([^"]*)"%s*%)$'), "the labels of kernels.def's row " .. name)
    local lua_names = LUA_NAMES[name]
    if labels ~= "" then
      for n in labels:gmatch("[%w_]+") do kernels[#kernels + 1] = n end
    elseif lua_names then
      for _, n in ipairs(lua_names) do kernels[#kernels + 1] = n end
    else
      error("kernels.def's row " .. name .. " has no labels and no entry in this test's LUA_NAMES")
    end
  end
  assert(#kernels >= 30, "found only " .. #kernels .. " kernels in src/core/kernels.def")
  return kernels
end

local LUA_OWN = {}
for _, k in ipairs{"assert", "collectgarbage", "dofile", "error", "getmetatable", "ipairs", "load", "loadfile",
                   "next", "pairs", "pcall", "print", "rawequal", "rawget", "rawlen", "rawset", "require", "select",
                   "setmetatable", "tonumber", "tostring", "type", "xpcall", "warn", "_G", "_VERSION", "coroutine",
                   "debug", "io", "math", "os", "package", "string", "table", "utf8", "arg"} do
  LUA_OWN[k] = true
end

-- Every Lua function the shell exposes, by the name ?name takes.
local function lua_surface()
  local names, seen = {}, {}
  local function add(name) if not seen[name] then seen[name] = true; names[#names + 1] = name end end
  local function public(k, v) return type(k) == "string" and not k:match("^_") and type(v) == "function" end
  for k, v in pairs(vela) do
    if public(k, v) then add(_G[k] == nil or _G[k] == v and k or "vela." .. k) end -- vela.load: load is Lua's
  end
  for k, v in pairs(_G) do
    if not LUA_OWN[k] and k ~= "vela" then
      if public(k, v) then add(k)
      elseif type(k) == "string" and type(v) == "table" and not k:match("^_") then -- a module: nn, optim, data, plot, ...
        for f, fv in pairs(v) do if public(f, fv) then add(k .. "." .. f) end end
      end
    end
  end
  local mt = getmetatable(zeros(1, 1))
  local methods = type(mt.__index) == "table" and mt.__index or mt
  for k, v in pairs(methods) do if public(k, v) then add("Matrix:" .. k) end end
  table.sort(names)
  return names
end

local function missing_from(ref, names)
  local no_entry, no_help = {}, {}
  for _, name in ipairs(names) do
    if not in_reference(ref, name) then no_entry[#no_entry + 1] = name end
    if not vela.doc(name) then no_help[#no_help + 1] = name end
  end
  return no_entry, no_help
end

local function check(what, names)
  local no_entry, no_help = missing_from(reference_names(), names)
  local msg = {}
  if #no_entry > 0 then
    msg[#msg + 1] = ("%d %s without an entry in %s: %s"):format(#no_entry, what, table.concat(REFERENCE, ", "),
                                                                table.concat(no_entry, ", "))
  end
  if #no_help > 0 then
    msg[#msg + 1] = ("%d %s without a ?name help entry: %s"):format(#no_help, what, table.concat(no_help, ", "))
  end
  assert(#msg == 0, table.concat(msg, "\n"))
end

t.test("every op of the op table has a reference entry and ?name", function() check("ops", op_table()) end)
t.test("every Device kernel has a reference entry and ?name", function() check("kernels", device_kernels()) end)
t.test("every Lua function of the shell has a reference entry and ?name", function() check("functions", lua_surface()) end)

t.test("the check fails when an entry is removed", function()
  local text = "| `mm(alpha, a, b, beta, c)`, `mm(a, b, c)` | c |\n`nn.linear(inputs, outputs)`; `m:view(i, j, r, c)`;\n" ..
               "| `exp log sqrt (x [, y])` | f |\n```\nmv(1, a, x, 0, y)\n```\n"
  local names = {"mm", "mv", "nn.linear", "Matrix:view", "exp", "log", "sqrt"}
  local no_entry = missing_from(documented_names(text), names)
  assert(#no_entry == 0, "missing: " .. table.concat(no_entry, ", "))
  -- Remove the row of mm, and log from the list: those two are missing, and only they.
  local cut = text:gsub("| `mm%b()`, `mm%b()` | c |\n", ""):gsub(" log ", " ")
  no_entry = missing_from(documented_names(cut), names)
  assert(#no_entry == 2 and no_entry[1] == "mm" and no_entry[2] == "log",
         "expected mm and log missing, got " .. table.concat(no_entry, ", "))
  -- A help entry that does not exist is reported.
  local _, no_help = missing_from({}, {"mm", "no_such_function_here"})
  assert(#no_help == 1 and no_help[1] == "no_such_function_here")
end)

t.done()

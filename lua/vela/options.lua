-- vela.options: the command-line options of the examples and scripts, one
-- way for all of them: `name=value` and bare flags (`fashion`), leading
-- dashes allowed (`--epochs=3`). An unknown option is an error that lists
-- the valid ones; `--help` (or -h, help) prints the usage and exits; a
-- number option must be given a number. When the spec has `device` or
-- `threads`, a given value is applied (vela.device, vela.threads) before
-- the script goes on. Called from code typed at the prompt, the shell's own
-- command line is not the script's: the defaults are used.
--
-- options.check is the other half: the option tables of functions
-- (optim.adam{lr = ...}, nn.fit(net, set, {epochs = ...})). An unknown key
-- is an error naming the function, the key, the nearest accepted key and
-- all of them; a Torch7 spelling (learningRate, batchSize) says so.
local vela = require "vela"

local options = {}
local fmt = string.format

local function fail(prog, msg)
  io.stderr:write(fmt("%s: %s\n", prog, msg))
  os.exit(1)
end

-- options.usage(usage, spec) -> text: the usage line and one line per option.
function options.usage(usage, spec)
  local lines = {usage, "options:"}
  for _, o in ipairs(spec) do
    local name, default, help = o[1], o[2], o[3] or ""
    local left
    if type(default) == "boolean" then left = name
    else left = name .. "=" .. (default ~= nil and tostring(default) or "...") end
    lines[#lines + 1] = fmt("  %-22s %s", left, help)
  end
  lines[#lines + 1] = fmt("  %-22s %s", "--help", "print this and exit")
  return table.concat(lines, "\n")
end

-- options.parse(args, usage, spec) -> opts. spec: a list of
-- {name, default, help [, min = m]}; the default's type decides how a value
-- is read (number: must be a number, at least min when given; boolean: a
-- flag, or name=true/false; string or nil: as given).
function options.parse(args, usage, spec)
  local info = debug.getinfo(2, "S")
  if info and info.source == "=stdin" then args = {} end  -- typed at the prompt
  args = args or {}
  local prog = (args[0] or "script"):match("[^/]*$")
  local by_name, opts = {}, {}
  for _, o in ipairs(spec) do
    by_name[o[1]] = o
    opts[o[1]] = o[2]
  end
  local function valid()
    local names = {}
    for _, o in ipairs(spec) do names[#names + 1] = type(o[2]) == "boolean" and o[1] or o[1] .. "=" end
    return table.concat(names, ", ")
  end
  for _, a in ipairs(args) do
    local bare = a:match("^%-*(.*)$")
    if bare == "help" or bare == "h" then
      print(options.usage(usage, spec))
      os.exit(0)
    end
    local k, v = bare:match("^([%w_]+)=(.*)$")
    k = k or bare
    local o = by_name[k]
    if not o then fail(prog, fmt("unknown option '%s'; the options are: %s (--help explains them)", a, valid())) end
    local default = o[2]
    if type(default) == "boolean" then
      if v == nil or v == "true" or v == "1" then opts[k] = true
      elseif v == "false" or v == "0" then opts[k] = false
      else fail(prog, fmt("option '%s' is a flag (give it as %s, or %s=false)", a, k, k)) end
    elseif v == nil then
      fail(prog, fmt("option '%s' needs a value: %s=...", a, k))
    elseif type(default) == "number" then
      local n = tonumber(v)
      if not n then fail(prog, fmt("option %s wants a number, got '%s'", k, v)) end
      if o.min and n < o.min then fail(prog, fmt("option %s must be at least %s, got %s", k, tostring(o.min), v)) end
      opts[k] = n
    else
      opts[k] = v
    end
  end
  if by_name.device and opts.device then
    local ok, err = pcall(vela.device, opts.device)
    if not ok then fail(prog, tostring(err):gsub("^[^:]*:%d+: ", "")) end
  end
  if by_name.threads and opts.threads and vela.threads then
    local ok, err = pcall(vela.threads, opts.threads)
    if not ok then fail(prog, tostring(err):gsub("^[^:]*:%d+: ", "")) end
  end
  return opts
end

-- Torch7's and PyTorch's names for options vela spells otherwise: the key
-- typed -> whose name it is, then the vela names it may stand for.
local torch_names = {
  learningRate = {"Torch7", "lr"}, learningRateDecay = {"Torch7", "lr_decay"}, weightDecay = {"Torch7", "weight_decay"},
  epsilon = {"Torch7", "eps"}, batchSize = {"Torch7", "batch"}, maxEpoch = {"Torch7", "epochs"},
  maxIteration = {"Torch7", "epochs"}, learning_rate = {"PyTorch", "lr"}, batch_size = {"PyTorch", "batch"},
  num_epochs = {"PyTorch", "epochs"}, betas = {"PyTorch", "beta1", "beta2"},
}

-- Edit distance (insert, delete, substitute, swap two neighbours) of two
-- names compared without case and underscores: batchsize ~ batch_size ~ batchSize.
local function distance(a, b)
  a, b = a:lower():gsub("_", ""), b:lower():gsub("_", "")
  local d = {}
  for i = 0, #a do d[i] = {[0] = i} end
  for j = 0, #b do d[0][j] = j end
  for i = 1, #a do
    for j = 1, #b do
      local cost = a:byte(i) == b:byte(j) and 0 or 1
      local v = math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
      if i > 1 and j > 1 and a:byte(i) == b:byte(j - 1) and a:byte(i - 1) == b:byte(j) then
        v = math.min(v, d[i - 2][j - 2] + 1)
      end
      d[i][j] = v
    end
  end
  return d[#a][#b], a, b
end

-- options.nearest(key, accepted) -> the accepted name nearest to key, or nil
-- when none is near (at most a third of the name's letters differ, or one
-- name begins the other).
function options.nearest(key, accepted)
  local best, best_d
  for _, name in ipairs(accepted) do
    local d, a, b = distance(key, name)
    local near = d <= math.max(1, #a // 3) or (math.min(#a, #b) >= 2 and (a:sub(1, #b) == b or b:sub(1, #a) == a))
    if near and (not best_d or d < best_d) then best, best_d = name, d end
  end
  return best
end

-- options.check(fn, opts, accepted [, level]) -> opts (an empty table for
-- nil). fn names the function in errors ("optim.adam"); accepted lists the
-- keys in the order the message shows them. Errors, at `level` (default 3:
-- the caller of the function that checks): opts not a table, a key not a
-- string, an unknown key.
function options.check(fn, opts, accepted, level)
  level = level or 3
  if opts == nil then return {} end
  local list = table.concat(accepted, ", ")
  if type(opts) ~= "table" then
    error(fmt("%s: opts must be a table of options {%s = ...}, got a %s", fn, accepted[1] or "", type(opts)), level)
  end
  local known = {}
  for _, name in ipairs(accepted) do known[name] = true end
  for k in pairs(opts) do
    if type(k) ~= "string" then
      error(fmt("%s: the options are named (%s = ...), got a value at [%s]; options: %s", fn, accepted[1] or "name",
        tostring(k), list), level)
    end
    if not known[k] then
      local hint, torch = nil, torch_names[k]
      for i = 2, torch and #torch or 0 do
        if known[torch[i]] then hint = hint and hint .. "' or '" .. torch[i] or torch[i] end
      end
      if not hint then torch = nil end
      hint = hint or options.nearest(k, accepted)
      local msg = fmt("%s: unknown option '%s'%s; options: %s", fn, k, hint and fmt(" (did you mean '%s'?)", hint) or "",
        list)
      if torch then msg = msg .. fmt(" (%s is %s's name for %s)", k, torch[1], (hint:gsub("'", ""))) end
      error(msg, level)
    end
  end
  return opts
end

if vela.doc then
  vela.doc("options.check", "require('vela.options').check(fn, opts, {'key', ...} [, level]) -> opts",
    "Checks a function's option table: an unknown key is an error naming fn, the key, the nearest accepted one "
    .. "and all of them (a Torch7 spelling such as learningRate says so). nil gives {}. "
    .. "e.g. options.check('optim.adam', {learningRate = 0.1}, {'lr', 'beta1'}) raises "
    .. "\"optim.adam: unknown option 'learningRate' (did you mean 'lr'?); options: lr, beta1 ...\"",
    options.check)
  vela.doc("options.parse", "require('vela.options').parse(arg, usage, {{name, default, help}, ...}) -> opts",
    "Reads a script's name=value options and flags: an unknown one is an error listing the valid ones, --help "
    .. "prints the usage, device= and threads= are applied. Typed at the prompt, the defaults are used.",
    options.parse)
end

return options

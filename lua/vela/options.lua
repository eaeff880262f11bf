-- vela.options: the command-line options of the examples and scripts, one
-- way for all of them: `name=value` and bare flags (`fashion`), leading
-- dashes allowed (`--epochs=3`). An unknown option is an error that lists
-- the valid ones; `--help` (or -h, help) prints the usage and exits; a
-- number option must be given a number. When the spec has `device` or
-- `threads`, a given value is applied (vela.device, vela.threads) before
-- the script goes on. Called from code typed at the prompt, the shell's own
-- command line is not the script's: the defaults are used.
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
-- {name, default, help}; the default's type decides how a value is read
-- (number: must be a number; boolean: a flag, or name=true/false; string or
-- nil: as given).
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
      opts[k] = n
    else
      opts[k] = v
    end
  end
  if by_name.device and opts.device then
    local ok, err = pcall(vela.device, opts.device)
    if not ok then fail(prog, tostring(err):gsub("^[^:]*:%d+: ", "")) end
  end
  if by_name.threads and opts.threads and vela.threads then vela.threads(opts.threads) end
  return opts
end

if vela.doc then
  vela.doc("options.parse", "require('vela.options').parse(arg, usage, {{name, default, help}, ...}) -> opts",
    "Reads a script's name=value options and flags: an unknown one is an error listing the valid ones, --help "
    .. "prints the usage, device= and threads= are applied. Typed at the prompt, the defaults are used.",
    options.parse)
end

return options

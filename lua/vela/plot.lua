-- vela.plot: a curve, for loss histories and the like: drawn in the terminal
-- with block characters, and as SVG in a notebook (src/jupyter sets
-- vela._display_bundle) or in a file (opts.file). plot(values [, opts]) shows
-- it and returns nothing; plot.lines(values [, opts]) returns the terminal's
-- lines and plot.svg(values [, opts]) the SVG text, without showing them.
-- opts.height (10 rows), opts.width (at most 60 columns: longer series are
-- averaged into buckets), opts.title, opts.file (an .svg path).
local vela = require "vela"

local svg = require "vela.plot_svg"

local plot = {}
local fmt = string.format

local eighths = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"}

local resample = svg.resample  -- a long series averaged into buckets

-- The options every form takes, with the type each must have.
local known = {height = "integer", width = "integer", title = "string", file = "string"}

local function check_opts(fname, opts)
  if opts == nil then return {} end
  if type(opts) ~= "table" then error(fmt("%s: opts must be a table, got %s", fname, type(opts)), 4) end
  for k, v in pairs(opts) do
    local want = known[k]
    if not want then
      error(fmt("%s: unknown option '%s' (expected height, width, title, file)", fname, tostring(k)), 4)
    end
    local got = want == "integer" and math.type(v) or type(v)
    if got ~= want or (want == "integer" and v < 1) then
      error(fmt("%s: option '%s' must be a%s %s, got %s", fname, k, want == "integer" and " positive" or "", want,
        tostring(v)), 4)
    end
  end
  return opts
end

-- The series as a list of numbers: a list, a vector (read once), or nn.fit's
-- history (its loss per epoch).
local function series(fname, values)
  if type(values) == "table" and getmetatable(values) and values.loss then
    local h, loss = values, {}
    for e = h.first or 1, h.last or #h.loss do loss[#loss + 1] = h.loss[e] end
    values = loss
  end
  if type(values) ~= "table" then
    if type(values) ~= "userdata" then
      error(fmt("%s: values must be a list of numbers, a vector or nn.fit's history, got %s", fname, type(values)), 4)
    end
    local t = values:to("cpu"):totable()
    values = {}
    for _, row in ipairs(t) do for _, v in ipairs(row) do values[#values + 1] = v end end
  end
  local vals = {}
  for i, v in ipairs(values) do
    if type(v) ~= "number" or v ~= v then error(fmt("%s: value %d is %s, expected a number", fname, i, tostring(v)), 4) end
    vals[i] = v
  end
  if #vals == 0 then error(fmt("%s: no values", fname), 4) end
  return vals
end

local function lines(values, opts)
  local height, width = opts.height or 10, opts.width or 60
  local n = #values
  local vals = resample(values, width)
  local lo, hi = math.huge, -math.huge
  for _, v in ipairs(vals) do lo, hi = math.min(lo, v), math.max(hi, v) end
  local span = hi > lo and hi - lo or 1
  -- Each column is filled from the bottom up to its value, in eighths of a row.
  local levels = {}
  for i, v in ipairs(vals) do levels[i] = math.floor((v - lo) / span * (height * 8 - 1) + 0.5) + 1 end
  local lines = {}
  if opts.title then lines[1] = opts.title end
  for r = height, 1, -1 do
    local cells = {}
    for i, l in ipairs(levels) do
      local fill = l - (r - 1) * 8
      cells[i] = eighths[math.max(0, math.min(8, fill)) + 1]
    end
    local label = (r == height and fmt("%10.4g ┤", hi)) or (r == 1 and fmt("%10.4g ┤", lo)) or fmt("%10s │", "")
    lines[#lines + 1] = label .. table.concat(cells)
  end
  lines[#lines + 1] = fmt("%10s └%s", "", string.rep("─", #vals))
  lines[#lines + 1] = fmt("%10s  1%s%d", "", string.rep(" ", math.max(1, #vals - 1 - #tostring(n))), n)
  return lines
end

function plot.lines(values, opts)
  opts = check_opts("plot.lines", opts)
  return lines(series("plot.lines", values), opts)
end

function plot.svg(values, opts)
  opts = check_opts("plot.svg", opts)
  return svg.render(series("plot.svg", values), opts)
end

setmetatable(plot, {__call = function(_, values, opts)
  opts = check_opts("plot", opts)
  local vals = series("plot", values)
  if opts.file then
    svg.write(opts.file, svg.render(vals, opts))
    print(fmt("plot: wrote %s", opts.file))
    return
  end
  local text = table.concat(lines(vals, opts), "\n")
  if vela._display_bundle then
    vela._display_bundle{["image/svg+xml"] = svg.render(vals, opts), ["text/plain"] = text}
  else
    print(text)
  end
end})

-- help(nn.fit), ?nn.linear: documentation for the shell's help.
if vela.doc then
  vela.doc("plot", "plot(values [, {height = 10, width = 60, title =, file =}])",
    "Shows a curve (a list of numbers, a vector, or nn.fit's history: its loss per epoch): in the terminal with "
    .. "block characters, in a notebook as an SVG picture (with the text as fallback); with file = 'loss.svg' "
    .. "writes that SVG to the file instead. Returns nothing. An unknown option is an error. "
    .. "plot(hist.batch_loss, {title = 'loss'}).")
  vela.doc("plot.lines", "plot.lines(values [, opts]) -> {lines}",
    "The lines plot prints in the terminal, without printing them. plot.lines({3, 1, 2}).", plot.lines)
  vela.doc("plot.svg", "plot.svg(values [, opts]) -> string",
    "The SVG picture plot shows in a notebook or writes to opts.file, as text. plot.svg({3, 1, 2}, {title = 'x'}).",
    plot.svg)
end

return plot

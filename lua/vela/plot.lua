-- vela.plot: a curve drawn in the terminal with block characters, for loss
-- histories and the like. plot(values [, opts]) prints it and returns
-- nothing; plot.lines(values [, opts]) returns the lines without printing.
-- opts.height (10 rows), opts.width (at most 60 columns: longer series are
-- averaged into buckets), opts.title.
local vela = require "vela"

local plot = {}
local fmt = string.format

local eighths = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"}

-- Averages a series into at most `width` buckets.
local function resample(values, width)
  local n = #values
  if n <= width then return values end
  local out = {}
  for b = 1, width do
    local lo = math.floor((b - 1) * n / width) + 1
    local hi = math.floor(b * n / width)
    local s = 0
    for i = lo, hi do s = s + values[i] end
    out[b] = s / (hi - lo + 1)
  end
  return out
end

function plot.lines(values, opts)
  opts = opts or {}
  if type(values) == "table" and getmetatable(values) and values.loss then  -- nn.fit's history: loss per epoch
    local h, loss = values, {}
    for e = h.first or 1, h.last or #h.loss do loss[#loss + 1] = h.loss[e] end
    values = loss
  end
  if type(values) ~= "table" then
    -- A vela matrix (a vector): read it once.
    local t = values:to("cpu"):totable()
    values = {}
    for _, row in ipairs(t) do for _, v in ipairs(row) do values[#values + 1] = v end end
  end
  local height, width = opts.height or 10, opts.width or 60
  local vals = {}
  for i, v in ipairs(values) do
    if type(v) ~= "number" or v ~= v then error(fmt("plot: value %d is %s, expected a number", i, tostring(v)), 3) end
    vals[i] = v
  end
  if #vals == 0 then error("plot: no values", 3) end
  vals = resample(vals, width)
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
  lines[#lines + 1] = fmt("%10s  1%s%d", "", string.rep(" ", math.max(1, #vals - 1 - #tostring(#values))), #values)
  return lines
end

setmetatable(plot, {__call = function(_, values, opts)
  print(table.concat(plot.lines(values, opts), "\n"))
end})

-- help(nn.fit), ?nn.linear: documentation for the shell's help.
if vela.doc then
  vela.doc("plot", "plot(values [, {height = 10, width = 60, title =}])",
    "Prints a curve (a list of numbers, a vector, or nn.fit's history: its loss per epoch) in the terminal with "
    .. "block characters; returns nothing. plot(hist.batch_loss, {title = 'loss'}).")
  vela.doc("plot.lines", "plot.lines(values [, opts]) -> {lines}",
    "The lines plot prints, without printing them.", plot.lines)
end

return plot

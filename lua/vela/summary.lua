-- vela.summary: nn.summary(net [, batch]) and net:summary([batch]), the
-- per-layer table of a net (Keras's model.summary(), torchinfo's summary):
-- each layer, the shape it gives, its parameter count and its device. It
-- returns the table (a Lua table of rows) whose printed form is the text, so
-- the prompt shows it once and a script says print(net:summary()).
local vela = require "vela"

local summary = {}
local fmt = string.format

-- The shape one layer gives per sample: "c×h×w (rows)" for an image layer, else its rows.
local function output_shape(l)
  if type(l.image) == "table" and l.image.c then
    return fmt("%d×%d×%d", l.image.c, l.image.h, l.image.w), l.outputs
  end
  return tostring(l.outputs or "?"), l.outputs
end

local function count(l)
  local n = 0
  if type(l.params) == "function" then
    for _, p in ipairs(l:params()) do n = n + #p[1] end
  end
  return n
end

local function dev_of(l)
  local d = l.dev or (type(l.device) == "function" and l:device())
  local ok, name = pcall(function() return d:name() end)
  return ok and name or "-"
end

-- Thousands separated by commas: 101,770.
local function grouped(n)
  local s = tostring(n)
  local out = s:reverse():gsub("(%d%d%d)", "%1,"):reverse()
  return (out:gsub("^,", ""))
end

-- s padded (left-aligned, or right when right) to w terminal cells, or cut
-- to w with an ellipsis; counted in characters, not bytes (→ and × are 3).
local function cell(s, w, right)
  local n = utf8.len(s) or #s
  if n > w then
    s = s:sub(1, (utf8.offset(s, w) or w) - 1) .. "…"
    n = w
  end
  local pad = string.rep(" ", w - n)
  return right and pad .. s or s .. pad
end

-- nn.summary(net [, batch]) -> rows: {{index =, layer =, output =, rows =, params =, device =}, ..., params =}.
-- batch (optional) gives the output matrices' shape for that batch size.
function summary.summary(net, batch)
  if type(net) ~= "table" or type(net.layers) ~= "table" then
    error(fmt("nn.summary: net must be a net (nn.sequential{...}), got %s", type(net)), 2)
  end
  if batch ~= nil and (math.type(batch) ~= "integer" or batch < 1) then
    error(fmt("nn.summary: batch must be a positive integer (samples per batch), got %s", tostring(batch)), 2)
  end
  local rows, total = {}, 0
  for i, l in ipairs(net.layers) do
    local shape, nrows = output_shape(l)
    local p = count(l)
    total = total + p
    rows[i] = {index = i, layer = tostring(l), output = shape, rows = nrows, params = p, device = dev_of(l)}
  end
  rows.params, rows.batch, rows.inputs = total, batch, net.inputs
  local text = {}
  local n = batch and tostring(batch) or "n"
  local function line(a, b, c, d, e)
    return (fmt("%-3s %s %s %s  %s", a, cell(b, 28), cell(c, 20), cell(d, 10, true), e):gsub("%s+$", ""))
  end
  text[1] = line("#", "layer", "output per sample", "parameters", "device")
  text[2] = line("", "input", tostring(net.inputs or "?"), "", "")
  for _, r in ipairs(rows) do
    local out = r.output
    if r.rows and out ~= tostring(r.rows) then out = fmt("%s = %d", out, r.rows) end
    text[#text + 1] = line(tostring(r.index), r.layer, out, grouped(r.params), r.device)
  end
  text[#text + 1] = line("", "total", "", grouped(total), "")
  text[#text + 1] = fmt("(one sample per column: layer k gives a matrix of its rows × %s)", n)
  local s = table.concat(text, "\n")
  return setmetatable(rows, {__tostring = function() return s end})
end

-- Adds nn.summary and net:summary (called by vela.nn as it loads).
function summary.attach(nn, Sequential)
  nn.summary = summary.summary
  Sequential.summary = summary.summary
  if vela.doc then
    vela.doc("nn.summary", "nn.summary(net [, batch]) -> rows  |  net:summary([batch])",
      "The per-layer table of a net: each layer, the shape it gives per sample (c×h×w for image layers), its "
      .. "parameter count and its device, with the total. Returns the rows ({index, layer, output, rows, params, "
      .. "device}, and rows.params the total), which print as the table: net:summary() at the prompt, "
      .. "print(net:summary()) in a script. Keras's model.summary(), torchinfo.summary.", summary.summary)
  end
end

return summary

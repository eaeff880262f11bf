-- plot as SVG: plot.svg's picture against coordinates worked out by hand,
-- plot(values, {file = ...}) writing that same picture, and plot's options
-- checked (an unknown key, a wrong type).
local t = dofile("tests/lua/t.lua")
local plot = require "vela.plot"

local function points(svg)
  local list = svg:match('<polyline class="vela%-curve" points="([^"]*)"')
  local out = {}
  for x, y in list:gmatch("([%d.]+),([%d.]+)") do out[#out + 1] = {tonumber(x), tonumber(y)} end
  return out
end

t.test("plot.svg places the values in the 550x250 area at (70, 30)", function()
  -- {0, 1, 0.5}: x at 70, 70 + 550/2, 620; y from the bottom (280) up to the top (30).
  local p = points(plot.svg({0, 1, 0.5}))
  assert(#p == 3, "three points")
  local want = {{70, 280}, {345, 30}, {620, 155}}
  for i = 1, 3 do
    t.near(p[i][1], want[i][1], 1e-9, "x" .. i)
    t.near(p[i][2], want[i][2], 1e-9, "y" .. i)
  end
  local s = plot.svg({0, 1}, {title = "a<b"})
  assert(s:find("<svg", 1, true) == 1 and s:find("</svg>", 1, true), "a whole svg")
  assert(s:find("a&lt;b", 1, true), "the title escaped")
end)

t.test("a vector and nn.fit's history plot as their lists do", function()
  local v = from{{0}, {1}, {0.5}}
  assert(plot.svg(v) == plot.svg({0, 1, 0.5}), "vector")
  local h = setmetatable({loss = {[2] = 3, [3] = 1}, first = 2, last = 3}, {})
  assert(plot.svg(h) == plot.svg({3, 1}), "history")
end)

t.test("plot{file =} writes the same SVG and prints one line", function()
  local path = os.tmpname() .. ".svg"
  plot({3, 1, 2}, {file = path, title = "loss"})
  local f = assert(io.open(path))
  local text = f:read("a")
  f:close()
  os.remove(path)
  assert(text == plot.svg({3, 1, 2}, {title = "loss"}), "file and plot.svg differ")
  t.raises(function() plot({1, 2}, {file = "/"}) end, "plot: file '/' is a directory")
  t.raises(function() plot({1, 2}, {file = "/nonexistent-dir/x.svg"}) end, "plot: cannot write")
end)

t.test("plot's options are checked", function()
  t.raises(function() plot({1, 2}, {colour = "red"}) end, "plot: unknown option 'colour'")
  t.raises(function() plot.svg({1, 2}, {hieght = 3}) end, "plot.svg: unknown option 'hieght'")
  t.raises(function() plot.lines({1, 2}, {width = "wide"}) end, "plot.lines: option 'width' must be a positive integer")
  t.raises(function() plot({1, 2}, {title = 3}) end, "plot: option 'title' must be a string")
  t.raises(function() plot({1, 2}, 5) end, "plot: opts must be a table, got number")
  t.raises(function() plot("abc") end, "plot: values must be a list of numbers")
end)

t.test("data.show's picture: one 4x4 square a pixel, grey by value, ink where the terminal has it", function()
  local data = require "vela.data"
  local m = zeros(4, 2)  -- two 2x2 images; the first: 1 at (1,1), 0.5 at (2,2), row by row
  m:set(1, 1, 1)
  m:set(4, 1, 0.5)
  local shown
  vela._display_bundle = function(b) shown = b end
  local ok, err = pcall(data.show, m, 1)
  vela._display_bundle = nil
  assert(ok, err)
  assert(shown["text/plain"] == table.concat(data.image_lines(m, 1), "\n"), "the text form is the terminal's")
  -- 1 is level 31 (black), 0.5 level 16 (grey 255 * 15/31 = 123.4 -> 123).
  local paths = {}
  for g, d in shown["image/svg+xml"]:gmatch('<path fill="rgb%((%d+),%d+,%d+%)" d="([^"]*)"') do paths[tonumber(g)] = d end
  assert(paths[0] == "M0 0h4v4h-4z", "(1,1) black: " .. tostring(paths[0]))
  assert(paths[123] == "M4 4h4v4h-4z", "(2,2) grey 123: " .. tostring(paths[123]))
  local n = 0
  for _ in pairs(paths) do n = n + 1 end
  assert(n == 2, "two inked pixels")
end)

t.test("display shows a value as the prompt does and returns nothing", function()
  assert(select("#", display(from{{1, 2}})) == 0, "display returns nothing")
end)

t.done()

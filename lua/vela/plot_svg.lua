-- vela.plot_svg: plot's curve as an SVG picture (what a notebook shows and
-- plot{file = ...} writes): a line through every value (long series are
-- averaged into at most 1,000 points), the axes with the first and last
-- index and the lowest and highest value, and the title.
local svg = {}
local fmt = string.format

local W, H = 640, 320                      -- the picture
local left, right, top, bottom = 70, 20, 30, 40  -- the margins around the plot area

local function escape(s)
  return (s:gsub("[<>&\"]", {["<"] = "&lt;", [">"] = "&gt;", ["&"] = "&amp;", ['"'] = "&quot;"}))
end

-- svg.resample(values, width): the series averaged into at most `width`
-- buckets (the terminal plot's columns, the picture's points).
function svg.resample(values, width)
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

-- svg.render(values, opts) -> text. values: a non-empty list of numbers
-- (checked by plot); opts.title.
function svg.render(values, opts)
  local n = #values
  local vals = svg.resample(values, 1000)
  local lo, hi = math.huge, -math.huge
  for _, v in ipairs(vals) do lo, hi = math.min(lo, v), math.max(hi, v) end
  local span = hi > lo and hi - lo or 1
  local pw, ph = W - left - right, H - top - bottom
  local pts = {}
  for i, v in ipairs(vals) do
    local x = left + (#vals > 1 and (i - 1) / (#vals - 1) or 0.5) * pw
    local y = top + ph - (v - lo) / span * ph
    pts[i] = fmt("%.1f,%.1f", x, y)
  end
  local out = {
    fmt('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
      .. 'font-family="sans-serif" font-size="12">', W, H, W, H),
    fmt('<rect width="%d" height="%d" fill="white"/>', W, H),
    fmt('<path d="M%d %d V%d H%d" fill="none" stroke="#444"/>', left, top, top + ph, left + pw),
    fmt('<text x="%d" y="%d" text-anchor="end">%.4g</text>', left - 6, top + 4, hi),
    fmt('<text x="%d" y="%d" text-anchor="end">%.4g</text>', left - 6, top + ph + 4, lo),
    fmt('<text x="%d" y="%d" text-anchor="middle">1</text>', left, top + ph + 18),
    fmt('<text x="%d" y="%d" text-anchor="middle">%d</text>', left + pw, top + ph + 18, n),
  }
  if opts.title then
    out[#out + 1] = fmt('<text x="%d" y="%d" text-anchor="middle" font-size="14">%s</text>', W // 2, 18,
      escape(opts.title))
  end
  if #pts == 1 then
    local x, y = pts[1]:match("([^,]+),(.+)")
    out[#out + 1] = fmt('<circle class="vela-curve" cx="%s" cy="%s" r="3" fill="#1f77b4"/>', x, y)
  else
    out[#out + 1] = fmt('<polyline class="vela-curve" points="%s" fill="none" stroke="#1f77b4" stroke-width="1.5"/>',
      table.concat(pts, " "))
  end
  out[#out + 1] = "</svg>"
  return table.concat(out, "\n") .. "\n"
end

-- svg.images(images, side, per_row, caption) -> text: grey-scale pictures
-- (data.show, data.show_weights), each {pix = side*side values row by row,
-- lo =, hi =} drawn 4 units a pixel in 32 greys, per_row of them to a row,
-- black ink on white as the terminal draws them; caption above when given.
function svg.images(images, side, per_row, caption)
  local cell, gap = 4, 8
  local cols = math.min(per_row or 1, #images)
  local rows = (#images + cols - 1) // cols
  local head = caption and 20 or 0
  local w = cols * side * cell + (cols - 1) * gap
  if caption then w = math.max(w, 7 * utf8.len(caption)) end  -- room for the caption at 12 px
  local h = head + rows * side * cell + (rows - 1) * gap
  local out = {fmt('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
    .. 'font-family="sans-serif" font-size="12" shape-rendering="crispEdges">', w, h, w, h),
    fmt('<rect class="vela-image" width="%d" height="%d" fill="white"/>', w, h)}
  if caption then out[#out + 1] = fmt('<text x="0" y="14">%s</text>', escape(caption)) end
  -- One path per grey level (32 levels): a pixel is "Mx yh4v4h-4z", a tenth
  -- of a rect element, so a page of templates stays small in a notebook.
  local levels = {}
  for k, img in ipairs(images) do
    local x0 = ((k - 1) % cols) * (side * cell + gap)
    local y0 = head + ((k - 1) // cols) * (side * cell + gap)
    local range = img.hi > img.lo and img.hi - img.lo or 1
    for r = 1, side do
      for c = 1, side do
        local v = (img.pix[(r - 1) * side + c] - img.lo) / range
        local level = math.floor(math.max(0, math.min(1, v)) * 31 + 0.5)
        if level > 0 then
          levels[level] = levels[level] or {}
          local l = levels[level]
          l[#l + 1] = fmt("M%d %dh%dv%dh-%dz", x0 + (c - 1) * cell, y0 + (r - 1) * cell, cell, cell, cell)
        end
      end
    end
  end
  for level = 1, 31 do
    if levels[level] then
      local g = math.floor(255 * (1 - level / 31) + 0.5)
      out[#out + 1] = fmt('<path fill="rgb(%d,%d,%d)" d="%s"/>', g, g, g, table.concat(levels[level]))
    end
  end
  out[#out + 1] = "</svg>"
  return table.concat(out, "\n") .. "\n"
end

-- svg.write(path, text): beside the target, then renamed, so a failed write
-- leaves an older file whole; a directory as the target is refused.
function svg.write(path, text)
  local f = io.open(path, "r")
  if f then
    local ok, _, code = f:read(0)
    f:close()
    if ok == nil and code == 21 then error(fmt("plot: file '%s' is a directory, expected an .svg file path", path), 4) end
  end
  local tmp = path .. ".tmp"
  local out, err = io.open(tmp, "w")
  if not out then error(fmt("plot: cannot write '%s': %s", path, err), 4) end
  local ok, werr = out:write(text)
  out:close()
  if not ok then os.remove(tmp); error(fmt("plot: cannot write '%s': %s", path, werr), 4) end
  local renamed, rerr = os.rename(tmp, path)
  if not renamed then os.remove(tmp); error(fmt("plot: cannot write '%s': %s", path, rerr), 4) end
end

return svg

-- Shared by the convolution tests (test_conv_direct.lua, test_conv_dgrad.lua):
-- a geometry table's numbers, and the element-by-element check of a result
-- against its float64 reference.
local M = {}

-- c, kh, kw, sh, sw, ph, pw, oh, ow of {c =, h =, w =, k =, stride =, pad =}.
function M.geo(g)
  local kh, kw = type(g.k) == "table" and g.k[1] or g.k, type(g.k) == "table" and g.k[2] or g.k
  local s, p = g.stride or 1, g.pad or 0
  local sh, sw = type(s) == "table" and s[1] or s, type(s) == "table" and s[2] or s
  local ph, pw = type(p) == "table" and p[1] or p, type(p) == "table" and p[2] or p
  return g.c or 1, kh, kw, sh, sw, ph, pw, (g.h + 2 * ph - kh) // sh + 1, (g.w + 2 * pw - kw) // sw + 1
end

-- Every got[i][j] within bound(i, j) of want[i][j].
function M.close(got, want, bound, what)
  for i = 1, #want do
    for j = 1, #want[i] do
      local gv, wv = got[i][j], want[i][j]
      assert(math.abs(gv - wv) <= bound(i, j), ("%s: (%d, %d) is %.9g, want %.9g"):format(what, i, j, gv, wv))
    end
  end
end

return M

-- The edge-input contract (docs/edge-contract.md) at the Lua surface, on
-- every usable device: max/min (whole, along either dimension) and
-- argmax/argmin with NaN and ±Inf, and maxpool's all-NaN window.
local t = dofile("tests/lua/t.lua")

local ids = t.devices()

local nan, inf = 0 / 0, math.huge
local function isnan(v) return v ~= v end

for _, id in ipairs(ids) do
  device(id)

  -- Issue 24 item 2: NaN first, then −Inf: −Inf and row 2 (both Vulkan
  -- drivers gave NaN and row 1); the mirror for min with +Inf.
  t.test(id .. ": max/min and argmax/argmin: NaN loses to ±Inf", function()
    local x = from{{nan, nan, 1}, {-inf, inf, nan}}  -- columns [NaN; −Inf], [NaN; +Inf], [1; NaN]
    local idx = zeros(1, 3)
    argmax(x, idx)
    local a = idx:to("cpu"):totable()[1]
    assert(a[1] == 2 and a[2] == 2 and a[3] == 1, ("argmax rows %g %g %g"):format(a[1], a[2], a[3]))
    argmin(x, idx)
    a = idx:to("cpu"):totable()[1]
    assert(a[1] == 2 and a[2] == 2 and a[3] == 1, ("argmin rows %g %g %g"):format(a[1], a[2], a[3]))
    local m = max(x, 1):to("cpu"):totable()[1]
    assert(m[1] == -inf and m[2] == inf and m[3] == 1, ("max(x, 1): %g %g %g"):format(m[1], m[2], m[3]))
    m = min(x, 1):to("cpu"):totable()[1]
    assert(m[1] == -inf and m[2] == inf and m[3] == 1, ("min(x, 1): %g %g %g"):format(m[1], m[2], m[3]))
    -- along rows: the transposed case
    local xt = from{{nan, -inf}, {nan, inf}}
    local r = max(xt, 2):to("cpu"):totable()
    assert(r[1][1] == -inf and r[2][1] == inf, ("max(x, 2): %g %g"):format(r[1][1], r[2][1]))
    r = min(xt, 2):to("cpu"):totable()
    assert(r[1][1] == -inf and r[2][1] == inf, ("min(x, 2): %g %g"):format(r[1][1], r[2][1]))
    -- whole matrix
    assert(max(from{{nan}, {-inf}}) == -inf, "max of [NaN; −Inf]")
    assert(min(from{{nan}, {inf}}) == inf, "min of [NaN; +Inf]")
    -- only NaN: NaN, at row 1
    local allnan = from{{nan, 1}, {nan, 2}}
    m = max(allnan, 1):to("cpu"):totable()[1]
    assert(isnan(m[1]) and m[2] == 2, "max of an all-NaN column is NaN")
    argmax(allnan, idx:view(1, 1, 1, 2))
    assert(idx:to("cpu"):totable()[1][1] == 1, "argmax of an all-NaN column is row 1")
    assert(isnan(max(from{{nan, nan}})), "max of an all-NaN matrix is NaN")
  end)
end

t.done()

-- The cost of the stop word (issue 24, item 11) for kernels never interrupted:
-- a short map (1024×1024, one expression: maps read no stop word) and a
-- general kernel whose invocations loop (column sums of 1024×4096: 4,096
-- invocations of 1,024 iterations, each iteration a checked read). Prints the
-- median of 15 timed calls (time() syncs) per device. Run it with the binary
-- before and after the change, alternately, on the same driver:
-- VK_ICD_FILENAMES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json build/vela scripts/bench/user_kernel_stop.lua
local function median(fn)
  fn()
  local ts = {}
  for i = 1, 15 do ts[i] = time(fn).seconds end
  table.sort(ts)
  return ts[8] * 1e3
end
local scale = map("x * 0.5 + 1.0")
local colsum = kernel{args = {a = "matrix", s = "matrix"}, size = function(a, s) return a.cols end,
                      glsl = [[ float acc = 0.0;
                                for (uint i = 1; i <= rows(a); ++i) acc += at(a, i, id() + 1);
                                set(s, 1, id() + 1, acc); ]]}
for _, d in ipairs(devices()) do
  if d.usable then
    device(d.id)
    local x, y = ones(1024, 1024), zeros(1024, 1024)
    local a, s = ones(1024, 4096), zeros(1, 4096)
    local ok, err = pcall(colsum, a, s)
    if ok then
      print(("%-9s map 1024x1024 %.2f ms   kernel colsum 1024x4096 %.2f ms"):format(d.id,
            median(function() scale(x, y) end), median(function() colsum(a, s) end)))
    else
      print(d.id, "skipped:", err)
    end
  end
end

-- The CPU's feature flags as /proc/cpuinfo lists them (read here, not by
-- vela, so a test can check vela's own detection against them):
-- flags.avx512f etc. are true, and flags.has("a", "b", ...) says whether all are.
local flags = {}
for line in io.lines("/proc/cpuinfo") do
  local f = line:match("^flags%s*:%s*(.*)")
  if f then
    for w in f:gmatch("%S+") do flags[w] = true end
    break
  end
end
function flags.has(...)
  for _, f in ipairs{...} do if not flags[f] then return false end end
  return true
end
return flags

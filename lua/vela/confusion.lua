-- vela.confusion: the counts nn.confusion returns (lua/vela/train.lua takes
-- the arguments: a net and a set, or predictions and a set) and the table
-- they print as.
local fmt = string.format

local confusion = {}

-- confusion.count(pred, truth, k [, names]) → counts[true][predicted] over
-- classes 1..k (pred, truth: Lua lists of class indices, checked by the
-- caller), printing as the table with each class's accuracy; names: the
-- classes' names (cut to 5 letters), else their numbers.
function confusion.count(pred, truth, k, names)
  local counts = {}
  for i = 1, k do counts[i] = {} for j = 1, k do counts[i][j] = 0 end end
  for s = 1, #pred do
    local t, p = math.floor(truth[s] + 0.5), math.floor(pred[s] + 0.5)
    counts[t][p] = counts[t][p] + 1
  end
  do
    names = names or {}
    local function name(i) return (names[i] or tostring(i)):sub(1, 5) end
    -- Cells as wide as the largest count or a (cut) class name, plus a space:
    -- ten classes fit 80 columns (Fashion-MNIST's names cut to 5 letters).
    local most = 0
    for i = 1, k do for j = 1, k do most = math.max(most, counts[i][j]) end end
    local cw = math.max(#tostring(most), 1) + 1
    for j = 1, k do cw = math.max(cw, #name(j) + 1) end
    local cell, label = "%" .. cw .. "s", "%" .. cw .. "d"
    local lines = {"confusion: rows are the true class, columns the predicted one"}
    local head = {fmt("%-7s", "")}
    for j = 1, k do head[#head + 1] = fmt(cell, name(j)) end
    head[#head + 1] = "  accuracy"
    lines[#lines + 1] = table.concat(head)
    local right, total = 0, 0
    for i = 1, k do
      local row, n = {fmt("%-7s", name(i))}, 0
      for j = 1, k do row[#row + 1] = fmt(label, counts[i][j]); n = n + counts[i][j] end
      row[#row + 1] = n > 0 and fmt("  %6.1f%%", 100 * counts[i][i] / n) or "       -"
      lines[#lines + 1] = table.concat(row)
      right, total = right + counts[i][i], total + n
    end
    lines[#lines + 1] = fmt("overall %.2f%% of %d", 100 * right / math.max(total, 1), total)
    local text = table.concat(lines, "\n")
    setmetatable(counts, {__tostring = function() return text end})
  end
  return counts
end

return confusion

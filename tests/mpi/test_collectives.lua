-- vela.dist's collectives under mpirun -np 2 (CTest: mpi.collectives), on the cpu
-- and every usable Vulkan device: allreduce sum/mean/max and broadcast against
-- sums written out here in float64 from each rank's known values, a strided
-- view, a list of matrices in one call, a barrier, and mismatched shapes or
-- ops raising the same error on every rank. Also runs without mpirun (one rank).
local t = dofile("tests/lua/t.lua")
local vela = require "vela"
local dist = require "vela.dist"

local rank, size = dist.rank(), dist.size()

-- Rank r's value at (i, j): exact in float32, different on every rank.
local function v(r, i, j) return (r + 1) * (i + 10 * j) + 0.25 * r end

local function filled(r, rows, cols, dev)
  local flat = {}
  for j = 1, cols do for i = 1, rows do flat[(j - 1) * rows + i] = v(r, i, j) end end
  return vela.matrix(rows, cols, flat, "float32", dev)
end

local function expect(m, f, what)
  local got = m:to("cpu"):totable()
  for i = 1, m.rows do
    for j = 1, m.cols do
      local want = f(i, j)
      assert(got[i][j] == want, ("%s: (%d, %d) is %.9g, expected %.9g"):format(what, i, j, got[i][j], want))
    end
  end
end

local devs = {"cpu"}
for _, d in ipairs(vela.devices()) do
  if d.usable and d.id ~= "cpu" then devs[#devs + 1] = d.id end
end

for _, dev in ipairs(devs) do
  t.test(dev .. ": allreduce sum, mean, max against hand sums", function()
    local function total(i, j) local s = 0 for r = 0, size - 1 do s = s + v(r, i, j) end return s end
    local m = filled(rank, 3, 5, dev)
    assert(dist.allreduce(m) == m, "allreduce returns its argument")
    expect(m, total, "sum")
    m = filled(rank, 3, 5, dev)
    dist.allreduce(m, "mean")
    expect(m, function(i, j) return total(i, j) / size end, "mean")
    m = filled(rank, 3, 5, dev)
    dist.allreduce(m, "max")
    expect(m, function(i, j) return v(size - 1, i, j) end, "max")
  end)

  t.test(dev .. ": a strided view and a list in one call", function()
    local big = vela.zeros(6, 6, "float32", dev)
    local view = big:view(2, 2, 3, 4)  -- leading dimension 6, offset: only the view changes
    vela.copy(filled(rank, 3, 4, dev), view)
    local other = filled(rank, 2, 1, dev)
    dist.allreduce({view, other}, "sum")
    local function total(i, j) local s = 0 for r = 0, size - 1 do s = s + v(r, i, j) end return s end
    expect(view, total, "view")
    expect(other, total, "second matrix")
    local b = big:to("cpu"):totable()
    assert(b[1][1] == 0 and b[6][6] == 0 and b[5][2] == 0, "elements outside the view were written")
  end)

  t.test(dev .. ": broadcast from the last rank", function()
    local m = filled(rank, 4, 2, dev)
    dist.broadcast(m, size - 1)
    expect(m, function(i, j) return v(size - 1, i, j) end, "broadcast")
  end)
end

t.test("barrier, shard, stats", function()
  dist.barrier()
  local covered = 0
  for r = 0, 2 do
    local first, count = dist.shard(128, r, 3)
    assert(first == covered + 1, "shards are contiguous")
    covered = covered + count
  end
  assert(covered == 128, "the shards cover the batch")
  assert(select(2, dist.shard(128, 0, 3)) == 43 and select(2, dist.shard(128, 2, 3)) == 42)
  if size > 1 then assert(dist.stats().bytes > 0, "stats count the bytes reduced") end
end)

t.test("mismatched shapes and ops: the same error on every rank", function()
  if size == 1 then return end
  local m = vela.zeros(rank == 0 and 2 or 3, 2)
  local err = t.raises(function() dist.allreduce(m) end, "dist.allreduce: the ranks disagree", "rank 1", "3×2", "2×2")
  t.raises(function() dist.allreduce(vela.zeros(2, 2), rank == 0 and "sum" or "max") end, "the ranks disagree")
  t.raises(function() dist.broadcast(vela.zeros(2, 2), 0, nil) end, "at most 2 arguments")
  -- Still usable after the errors: the next collective agrees.
  local ok = vela.ones(1, 1)
  dist.allreduce(ok)
  assert(ok:get(1, 1) == size, err)
end)

t.test("bad arguments name the function and the argument", function()
  t.raises(function() dist.allreduce(vela.zeros(1, 1), "avg") end, "dist.allreduce", "#2", "'avg'")
  t.raises(function() dist.allreduce({}) end, "dist.allreduce", "#1", "empty table")
  t.raises(function() dist.allreduce({vela.zeros(1, 1), 3}) end, "element 2")
  t.raises(function() dist.allreduce(vela.zeros(1, 1, "uint8")) end, "uint8")
  t.raises(function() dist.broadcast(vela.zeros(1, 1), size) end, "dist.broadcast", "root must be a rank in 0..")
end)

t.done()

-- vela.dist: collectives across processes, over Open MPI (docs/dist.md).
--
-- dist.rank(), dist.size(), dist.allreduce(m [, op]), dist.broadcast(m [, root]),
-- dist.barrier() on float32 matrices of any device, staged through host
-- memory; m may be one matrix or a list of them (one message for the list).
-- Under mpirun MPI starts when this module is first required (the C++ side,
-- src/dist/binding.cpp, loads the MPI shim then); without mpirun there is one
-- rank and every collective returns its argument as it is, after the same
-- argument checks. The training helpers (dist.shard, dist.sync, dist.reduce_grads,
-- dist.hash) are what nn.fit{dist = true} uses (lua/vela/parallel.lua).
local vela = require "vela"
local native = require "vela.dist_native"

local dist = {}
local fmt = string.format

local rank, size = 0, 1
if native.launched() then rank, size = native.init() end

function dist.rank() return rank end
function dist.size() return size end
-- True when several ranks run (a collective moves data).
function dist.active() return size > 1 end

local Matrix = getmetatable(vela.zeros(0, 0, "float32", "cpu"))

-- m: a matrix or a non-empty list of matrices, as a list; float32 and live.
local function as_list(fn, m)
  local list = getmetatable(m) == Matrix and {m} or m
  if type(list) ~= "table" or #list == 0 then
    error(fmt("%s: bad argument #1 (a matrix or a list of matrices expected, got %s)", fn,
      type(m) == "table" and "an empty table" or type(m)), 3)
  end
  for i, x in ipairs(list) do
    if getmetatable(x) ~= Matrix then
      error(fmt("%s: bad argument #1 (element %d is a %s, expected a matrix)", fn, i, type(x)), 3)
    end
    if x:dtype() ~= "float32" then
      error(fmt("%s: bad argument #1 (matrix %d is %s; collectives take float32)", fn, i, x:dtype()), 3)
    end
  end
  return list
end

local function check_nargs(fn, n, ...)
  if select("#", ...) > n then
    error(fmt("%s: at most %d arguments expected, got %d", fn, n, select("#", ...)), 3)
  end
end

local ops = {sum = 0, max = 1, mean = 2}

-- dist.allreduce(m [, "sum"|"mean"|"max"]) → m: every rank's m replaced by the
-- elementwise sum (mean, max) over the ranks, the same bits on every rank.
function dist.allreduce(m, op, ...)
  check_nargs("dist.allreduce", 2, m, op, ...)
  local list = as_list("dist.allreduce", m)
  op = op or "sum"
  if ops[op] == nil then
    error(fmt("dist.allreduce: bad argument #2 (op must be \"sum\", \"mean\" or \"max\", got %s)",
      type(op) == "string" and "'" .. op .. "'" or type(op)), 2)
  end
  if size > 1 then native.allreduce(list, ops[op]) end
  return m
end

local function check_root(fn, root)
  root = root or 0
  if math.type(root) ~= "integer" or root < 0 or root >= size then
    error(fmt("%s: bad argument #2 (root must be a rank in 0..%d, got %s)", fn, size - 1, tostring(root)), 3)
  end
  return root
end

-- dist.broadcast(m [, root = 0]) → m: root's values copied into m on every rank.
function dist.broadcast(m, root, ...)
  check_nargs("dist.broadcast", 2, m, root, ...)
  local list = as_list("dist.broadcast", m)
  root = check_root("dist.broadcast", root)
  if size > 1 then native.broadcast(list, root) end
  return m
end

-- dist.barrier(): returns when every rank has called it.
function dist.barrier(...)
  check_nargs("dist.barrier", 0, ...)
  if size > 1 then native.barrier() end
end

-- dist.stats() → {calls =, bytes =, seconds =}: the allreduces of this
-- process so far (bytes per rank, staging included in seconds).
function dist.stats() return native.stats() end

-- dist.summary() → one line on the allreduces so far ("vela.dist: 2 ranks, 63
-- allreduces of 0.78 MiB each, 1.98 s in them on rank 0 (staging included)").
function dist.summary()
  local st = native.stats()
  return fmt("vela.dist: %d rank%s, %d allreduces of %.2f MiB each, %.2f s in them on rank %d (staging included)",
    size, size == 1 and "" or "s", st.calls, st.bytes / math.max(st.calls, 1) / 2^20, st.seconds, rank)
end

-- dist.hash(m) → 16 hex digits over the float32 bits of m (a matrix or a list):
-- equal hashes on every rank, or every replica, mean bit-identical values.
function dist.hash(m)
  return native.hash(as_list("dist.hash", m))
end

-- dist.quiet(): on every rank but 0, print and io.write print nothing from
-- now on, so a script's output appears once (stderr, where errors go, stays).
function dist.quiet()
  if rank > 0 then
    print = function() end  -- luacheck: ignore (the global, on purpose)
    io.output("/dev/null")
  end
end

-- ---------------------------------------------------------------------------
-- Data parallel training (nn.fit{dist = true} through lua/vela/parallel.lua)
-- ---------------------------------------------------------------------------

-- dist.shard(n [, r, p [, g]]) → first, count: rank r's columns of a batch of n
-- (1-based first). The first n % p ranks take one more; every rank's share
-- is contiguous and in rank order, so the p shards are the batch. With g (a
-- divisor of n), the shares are whole runs of g columns (sequences of g tokens:
-- nn.fit's group =), counted the same way in runs.
function dist.shard(n, r, p, g)
  r, p, g = r or rank, p or size, g or 1
  if math.type(g) ~= "integer" or g < 1 or n % g ~= 0 then
    error(fmt("dist.shard: g must be a positive integer that divides n = %s, got %s", tostring(n), tostring(g)), 2)
  end
  local units = n // g
  local base, extra = units // p, units % p
  local count = base + (r < extra and 1 or 0)
  local first = r * base + math.min(r, extra)
  return first * g + 1, count * g
end

local function params_of(fn, net)
  if type(net) ~= "table" or type(net.params) ~= "function" then
    error(fmt("%s: bad argument #1 (a net expected, got %s)", fn, type(net)), 3)
  end
  return net:params()
end

-- dist.sync(net): rank 0's parameters into every rank's net (before training).
function dist.sync(net)
  local ws = {}
  for i, p in ipairs(params_of("dist.sync", net)) do ws[i] = p[1] end
  return dist.broadcast(ws, 0)
end

-- dist.reduce_grads(net, count, n): every gradient ← Σ over ranks of
-- (count_r / n)·gradient_r, where each rank's loss averaged over its count_r
-- samples: the gradient of the whole batch's mean loss, on every rank.
function dist.reduce_grads(net, count, n)
  local gs = {}
  for i, p in ipairs(params_of("dist.reduce_grads", net)) do
    gs[i] = p[2]
    if count ~= n then vela.scal(count / n, p[2]) end
  end
  if size > 1 then native.allreduce(gs, ops.sum) end
end

-- dist.param_hash(net) → the hash of every parameter of net, in order.
function dist.param_hash(net)
  local ws = {}
  for i, p in ipairs(params_of("dist.param_hash", net)) do ws[i] = p[1] end
  return native.hash(ws)
end

if vela.doc then
  vela.doc("dist.rank", "dist.rank() -> r", "This process's rank, 0..dist.size()-1 (0 without mpirun). Example: if dist.rank() == 0 then print('lead') end", dist.rank)
  vela.doc("dist.size", "dist.size() -> p", "The number of processes mpirun started (1 without mpirun). Example: mpirun -np 2 build/vela -e 'print(require(\"vela.dist\").size())' prints 2 twice.", dist.size)
  vela.doc("dist.allreduce", "dist.allreduce(m [, \"sum\"|\"mean\"|\"max\"]) -> m",
    "In place on every rank: m ← the elementwise sum (mean, max) of every rank's m, the same bits on every rank (reduced on rank 0, then broadcast). m: a float32 matrix of any device, or a list of them (one message). Every rank must pass the same shapes, device and op, or every rank raises an error naming the ranks that differ. Example: dist.allreduce(ones(2, 2), \"sum\") holds dist.size() everywhere.", dist.allreduce)
  vela.doc("dist.broadcast", "dist.broadcast(m [, root = 0]) -> m",
    "In place: root's m copied into m on every rank (a matrix or a list). Example: dist.broadcast(w, 0).", dist.broadcast)
  vela.doc("dist.barrier", "dist.barrier()", "Returns when every rank has called it. Example: dist.barrier()", dist.barrier)
  vela.doc("dist.active", "dist.active() -> boolean", "True when mpirun started several ranks (collectives move data). Example: if dist.active() then dist.barrier() end", dist.active)
  vela.doc("dist.quiet", "dist.quiet()", "On ranks other than 0, print and io.write print nothing from then on: a script's output appears once (errors still reach stderr). Example: dist.quiet()", dist.quiet)
  vela.doc("dist.stats", "dist.stats() -> {calls, bytes, seconds}", "The allreduces this process has made: count, bytes per rank, seconds (staging included). Example: dist.stats().bytes", dist.stats)
  vela.doc("dist.summary", "dist.summary() -> string", "One line on this rank's allreduces so far: count, size, seconds. Example: print(dist.summary())", dist.summary)
  vela.doc("dist.hash", "dist.hash(m) -> hex", "A 64-bit FNV-1a hash of the float32 bits of m (or of a list, in order): the bit-identity check across ranks and replicas. Example: dist.hash(ones(2, 2))", dist.hash)
  vela.doc("dist.shard", "dist.shard(n [, rank, size [, group]]) -> first, count",
    "The columns of a batch of n a rank trains on: contiguous, in rank order, the first n % size ranks one more. With group = T (a divisor of n) the shares are whole runs of T columns (sequences; nn.fit's group =). Example: dist.shard(128, 1, 2) -> 65, 64; dist.shard(24, 1, 2, 8) -> 17, 8", dist.shard)
  vela.doc("dist.sync", "dist.sync(net)", "Rank 0's parameters into every rank's net. Example: dist.sync(net)", dist.sync)
  vela.doc("dist.reduce_grads", "dist.reduce_grads(net, count, n)",
    "After net:backward on this rank's count of a batch of n: every gradient becomes the whole batch's, on every rank (each scaled by count/n, then summed). Example: dist.reduce_grads(net, 64, 128)", dist.reduce_grads)
  vela.doc("dist.param_hash", "dist.param_hash(net) -> hex", "dist.hash of every parameter of net. Example: dist.param_hash(net)", dist.param_hash)
end

return dist

-- The rank named by VELA_FAULT_RANK (default 1) fails while the others wait in
-- an allreduce that can never complete: VELA_FAULT=error raises a Lua error,
-- VELA_FAULT=kill kills its own process (SIGKILL). tests/mpi/fault.sh checks
-- that every rank ends, with a non-zero status, naming the failed rank.
local vela = require "vela"
local dist = require "vela.dist"
local bad = tonumber(os.getenv("VELA_FAULT_RANK") or "1")
dist.barrier()
if dist.rank() == bad then
  if os.getenv("VELA_FAULT") == "kill" then
    local pid = io.open("/proc/self/stat"):read("n")
    os.execute("kill -9 " .. math.tointeger(pid))
  end
  error("planted fault on rank " .. dist.rank())
end
dist.allreduce(vela.ones(4, 4))  -- waits for the failed rank
print("rank " .. dist.rank() .. " finished: the fault did not stop it")

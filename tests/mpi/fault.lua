-- The rank named by VELA_FAULT_RANK (default 1) fails while the others wait in
-- an allreduce that can never complete: VELA_FAULT=error raises a Lua error,
-- VELA_FAULT=kill kills its own process (SIGKILL). VELA_FAULT=interrupt: no
-- rank fails; every rank writes its pid to $VELA_FAULT_DIR/rank<r>.pid and
-- reduces forever, until mpirun gets Ctrl-C (SIGINT). tests/mpi/fault.sh
-- checks that every rank ends, with a non-zero status, naming the failed rank.
local vela = require "vela"
local dist = require "vela.dist"
local bad = tonumber(os.getenv("VELA_FAULT_RANK") or "1")
local mode = os.getenv("VELA_FAULT")
if mode == "interrupt" then
  local pid = math.tointeger(io.open("/proc/self/stat"):read("n"))
  local f = assert(io.open(os.getenv("VELA_FAULT_DIR") .. "/rank" .. dist.rank() .. ".pid", "w"))
  f:write(pid, "\n")
  f:close()
  local m = vela.ones(1000, 1)
  while true do dist.allreduce(m, "mean") end
end
dist.barrier()
if dist.rank() == bad then
  if mode == "kill" then
    local pid = io.open("/proc/self/stat"):read("n")
    os.execute("kill -9 " .. math.tointeger(pid))
  end
  error("planted fault on rank " .. dist.rank())
end
dist.allreduce(vela.ones(4, 4))  -- waits for the failed rank
print("rank " .. dist.rank() .. " finished: the fault did not stop it")

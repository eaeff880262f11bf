#!/usr/bin/env bash
# tests/mpi/fault.sh MPIRUN VELA error|kill: one rank of two fails (tests/mpi/fault.lua);
# passes when mpirun returns non-zero within 30 s, no rank finished, and the
# output names the failed rank (rank 1).
set -u
mpirun=$1 vela=$2 mode=$3
out=$(VELA_FAULT=$mode timeout 30 "$mpirun" --oversubscribe -np 2 "$vela" tests/mpi/fault.lua 2>&1)
rc=$?
echo "$out"
echo "fault.sh: mode $mode, mpirun exit status $rc"
if ((rc == 124)); then echo "fault.sh: FAIL: the ranks were still running after 30 s"; exit 1; fi
if ((rc == 0)); then echo "fault.sh: FAIL: mpirun exited 0"; exit 1; fi
if grep -q "finished: the fault did not stop it" <<<"$out"; then echo "fault.sh: FAIL: a rank went on"; exit 1; fi
if ! grep -Eq "rank 1( |,|\))" <<<"$out"; then echo "fault.sh: FAIL: the output does not name rank 1"; exit 1; fi
echo "fault.sh: pass"

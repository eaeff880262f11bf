#!/usr/bin/env bash
# tests/mpi/fault.sh MPIRUN VELA error|kill: one rank of two fails (tests/mpi/fault.lua);
# passes when mpirun returns non-zero within 30 s, no rank finished, and the
# output names the failed rank (rank 1).
# tests/mpi/fault.sh MPIRUN VELA interrupt: Ctrl-C (SIGINT) to mpirun while both ranks
# reduce; passes when mpirun has ended within 30 s and both ranks within 10 s more.
set -u
mpirun=$1 vela=$2 mode=$3
if [[ $mode == interrupt ]]; then
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' EXIT
  VELA_FAULT=interrupt VELA_FAULT_DIR=$dir "$mpirun" --oversubscribe -np 2 "$vela" tests/mpi/fault.lua &
  run=$!
  for ((i = 0; i < 300; i++)); do [[ -s $dir/rank0.pid && -s $dir/rank1.pid ]] && break; sleep 0.1; done
  [[ -s $dir/rank0.pid && -s $dir/rank1.pid ]] || { echo "fault.sh: FAIL: the ranks did not start"; kill -KILL $run; exit 1; }
  kill -INT $run
  for ((i = 0; i < 300; i++)); do kill -0 $run 2>/dev/null || break; sleep 0.1; done
  if kill -0 $run 2>/dev/null; then echo "fault.sh: FAIL: mpirun still running 30 s after SIGINT"; kill -KILL $run; exit 1; fi
  wait $run; rc=$?
  for r in 0 1; do
    pid=$(cat "$dir/rank$r.pid")
    # A rank may take a moment to be reaped after mpirun; a zombie has ended.
    for ((i = 0; i < 100; i++)); do
      [[ -e /proc/$pid && $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) != Z ]] || break
      sleep 0.1
    done
    if [[ -e /proc/$pid && $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) != Z ]]; then echo "fault.sh: FAIL: rank $r (pid $pid) outlived mpirun"; kill -KILL "$pid"; exit 1; fi
  done
  echo "fault.sh: mode interrupt, mpirun exit status $rc; both ranks ended"
  ((rc != 0)) || { echo "fault.sh: FAIL: mpirun exited 0 after SIGINT"; exit 1; }
  echo "fault.sh: pass"
  exit 0
fi
out=$(VELA_FAULT=$mode timeout 30 "$mpirun" --oversubscribe -np 2 "$vela" tests/mpi/fault.lua 2>&1)
rc=$?
echo "$out"
echo "fault.sh: mode $mode, mpirun exit status $rc"
if ((rc == 124)); then echo "fault.sh: FAIL: the ranks were still running after 30 s"; exit 1; fi
if ((rc == 0)); then echo "fault.sh: FAIL: mpirun exited 0"; exit 1; fi
if grep -q "finished: the fault did not stop it" <<<"$out"; then echo "fault.sh: FAIL: a rank went on"; exit 1; fi
if ! grep -Eq "rank 1( |,|\))" <<<"$out"; then echo "fault.sh: FAIL: the output does not name rank 1"; exit 1; fi
echo "fault.sh: pass"

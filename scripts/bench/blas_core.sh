#!/bin/bash
# OpenBLAS cores side by side on this machine, interleaved round by round so a
# busy machine hurts all alike: "shipped" (VELA_BLAS_CORE=off: OpenBLAS's own
# pick), "vela" (vela's choice, blas_core.hpp) and each named core
# (OPENBLAS_CORETYPE=NAME). Prints every run, then the medians.
#
#   scripts/bench/blas_core.sh [build/vela] [rounds=3] [cores="Haswell Prescott"]
set -u
vela=${1:-build/vela} rounds=${2:-3} cores=${3:-"Haswell Prescott"}
here=$(cd "$(dirname "$0")/../.." && pwd)
grep -m1 'model name' /proc/cpuinfo
echo "uptime before: $(uptime)"
out=$(mktemp)
for r in $(seq "$rounds"); do
  for cfg in shipped vela $cores; do
    case $cfg in
      shipped) env=(env -u OPENBLAS_CORETYPE VELA_BLAS_CORE=off) ;;
      vela) env=(env -u OPENBLAS_CORETYPE -u VELA_BLAS_CORE) ;;
      *) env=(env OPENBLAS_CORETYPE="$cfg") ;;
    esac
    "${env[@]}" "$vela" "$here/scripts/bench/blas_core.lua" --reps 3 | sed "s/^/$cfg | /" | tee -a "$out"
  done
done
echo "uptime after: $(uptime)"
echo "medians over $rounds rounds (GFLOP/s wall, per cpu-second):"
grep GFLOP "$out" | sed -E 's/ +GFLOP\/s +/ /; s/ per cpu-s//' | awk -F' [|] ' '
  { k = $1 " | " substr($2, 1, 28); split(substr($2, 29), v, " "); n[k]++; W[k, n[k]] = v[1]; C[k, n[k]] = v[2]; if (!(k in seen)) { seen[k] = 1; order[++m] = k } }
  function med(A, k, c,   a, i, j, t) { for (i = 1; i <= c; i++) a[i] = A[k, i] + 0
    for (i = 1; i <= c; i++) for (j = i + 1; j <= c; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return a[int((c + 1) / 2)] }
  END { for (i = 1; i <= m; i++) printf "%-48s %8.1f %8.1f\n", order[i], med(W, order[i], n[order[i]]), med(C, order[i], n[order[i]]) }'
rm -f "$out"

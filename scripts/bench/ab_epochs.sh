#!/bin/bash
# Before/after of the MLP's training rate on a shared, noisy machine:
# scripts/bench/epoch_median.lua under two vela binaries, interleaved (A B,
# B A, ...), each in the foreground (foreground.sh), each from its own source
# tree (a binary finds its Lua modules under ../share/vela/lua or its tree);
# prints each run, then the medians, the ratio and how many rounds B won.
#
#   scripts/bench/ab_epochs.sh BEFORE/vela AFTER/vela [rounds=10] [epochs=6]
set -u
[ $# -ge 2 ] || { echo "usage: $0 BEFORE/vela AFTER/vela [rounds=10] [epochs=6]" >&2; exit 2; }
A=$1 B=$2 rounds=${3:-10} epochs=${4:-6}
here=$(cd "$(dirname "$0")/../.." && pwd)
run() { (cd "$here" && "$here/scripts/bench/foreground.sh" "$1" scripts/bench/epoch_median.lua epochs="$epochs" | tail -1); }
echo "start $(date -u +%T), load $(cut -d' ' -f1-3 /proc/loadavg)"
out=""
for i in $(seq "$rounds"); do
  order="A B"; [ $((i % 2)) = 0 ] && order="B A"
  for w in $order; do
    bin=$A; [ "$w" = B ] && bin=$B
    line="$i $w $(run "$bin")"; echo "$line"; out+="$line"$'\n'
  done
done
echo "end $(date -u +%T), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$out" | awk 'NF >= 4 { r[$1, $2] = $3; c[$2, ++n[$2]] = $4; w[$2, n[$2]] = $3; k = $1 > k ? $1 : k }
  function med(t, s, m,   a, i, j, x) { for (i = 1; i <= m; i++) a[i] = t[s, i]
    for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { x = a[i]; a[i] = a[j]; a[j] = x }
    return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2 }
  END { won = 0; for (i = 1; i <= k; i++) won += r[i, "B"] > r[i, "A"]
    a = med(w, "A", n["A"]); b = med(w, "B", n["B"]); ac = med(c, "A", n["A"]); bc = med(c, "B", n["B"])
    printf "median ex/s: A %.0f wall, %.0f per cpu-s; B %.0f wall, %.0f per cpu-s; B/A %.3f wall, %.3f per cpu-s; B ahead in %d of %d rounds\n", a, ac, b, bc, b / a, bc / ac, won, k }'

#!/bin/bash
# Before/after on a shared machine: the MLP benchmark (scripts/bench/mnist.lua,
# cpu only, Fashion-MNIST by default) with two vela binaries and the PyTorch
# twin, interleaved rep by rep so that other work on the machine hurts all
# alike; prints each rep, then the medians and the ratios, and the load.
#
#   scripts/bench/ab_mlp.sh BEFORE/vela AFTER/vela [reps=5] [batch=128] [epochs=4] [set=fashion]
#
# Each binary runs this tree's mnist.lua from its own source tree (its lua/
# modules, its data/); the figures are mnist.lua's: the best epoch's examples/s, wall clock and per
# processor-second. PyTorch runs at its default thread count (1 here).
set -u
before=$1 after=$2 reps=${3:-5} batch=${4:-128} epochs=${5:-4} set=${6:-fashion}
here=$(cd "$(dirname "$0")/../.." && pwd)
dir=data/mnist; [ "$set" = fashion ] && dir=data/fashion-mnist
py=""
for cand in python3 /usr/bin/python3; do
  if $cand -c 'import torch' 2>/dev/null; then py=$cand; break; fi
done
vela_run() {  # binary -> "wall cpu"
  local root; root=$(cd "$(dirname "$1")/.." && pwd)
  (cd "$root" && "$1" "$here/scripts/bench/mnist.lua" devices=cpu torch=no epochs="$epochs" batch="$batch" set="$set") |
    sed -nE 's/^cpu +([0-9]+) ex\/s \( *([0-9]+) per.*/\1 \2/p'
}
torch_run() {
  [ -z "$py" ] && { echo "nan nan"; return; }
  (cd "$here" && $py scripts/bench/mnist_torch.py --epochs "$epochs" --batch "$batch" --dir "$dir") |
    sed -nE 's/^ *([0-9]+) ex\/s \( *([0-9]+) per.*/\1 \2/p'
}
echo "uptime before: $(uptime)"
rows=""
for r in $(seq "$reps"); do
  b=$(vela_run "$before"); a=$(vela_run "$after"); t=$(torch_run)
  echo "rep $r   before $b   after $a   pytorch $t   (wall, per cpu-second)"
  rows+="$b $a $t"$'\n'
done
echo "uptime after: $(uptime)"
echo "$rows" | awk 'NF == 6 {for (i = 1; i <= 6; i++) v[i, NR] = $i; n = NR}
  function med(c,   k, a, m, t, i, j) { m = 0; for (k = 1; k <= n; k++) if ((c, k) in v) a[++m] = v[c, k]
    for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2 }
  END { bw = med(1); bc = med(2); aw = med(3); ac = med(4); tw = med(5); tc = med(6)
    printf "median wall ex/s:        before %7.0f   after %7.0f (x%.2f)   pytorch %7.0f (after/pytorch x%.2f)\n", bw, aw, aw / bw, tw, aw / tw
    printf "median per cpu-second:   before %7.0f   after %7.0f (x%.2f)   pytorch %7.0f (after/pytorch x%.2f)\n", bc, ac, ac / bc, tc, ac / tc }'

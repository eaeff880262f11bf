#!/usr/bin/env bash
# What SwiftShader's JIT makes of the operations a GEMM kernel is built from,
# on this CPU (docs/results.md, "SwiftShader's GEMM against its own
# ceiling"): its own multiply-add peak (fma() and a * b + c), and the
# processor time of one load, store, subgroup operation, shared-memory access
# or barrier per 4-lane subgroup, and how many threads the process has while
# it runs a dispatch. Builds lavapipe_probe's harness and these shaders into a
# temporary folder.
#   scripts/bench/swiftshader_probe/probe.sh [reps]     (MODES="0 5" to run some rows only)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
reps=${1:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export VK_ICD_FILENAMES=${VK_ICD_FILENAMES:-/usr/lib/chromium/vk_swiftshader_icd.json}
g++ -O2 -std=c++17 -o "$tmp/probe" "$here/../lavapipe_probe/probe.cpp" -lvulkan
n=4096
if [ -z "${MODES:-}" ]; then
  for op in 0 1; do
    for wg in 4 64 256; do
      glslc --target-env=vulkan1.2 -O -DWG=$wg -DOP=$op -o "$tmp/peak.spv" "$here/peak.comp"
      # flops per workgroup: WG lanes x n iterations x 96 multiply-adds x 2
      echo -n "multiply-add peak, $([ $op = 0 ] && echo 'fma()' || echo 'a * b + c'), $wg lanes a workgroup (units: flops): "
      PROBE_THREADS=1 "$tmp/probe" "$tmp/peak.spv" $((32768 / wg)) "$reps" $((wg * n * 96 * 2)) $n 2>"$tmp/threads" | sed 's/^[^:]*: //'
      cat "$tmp/threads"
    done
  done
fi
names=("4-byte load, per-lane index" "4-byte load, one index" "16-byte load (vec4), per-lane index"
       "subgroupBroadcast, constant lane" "subgroupShuffle, constant lane" "shared-memory load, per-lane index"
       "none (the loop and the multiply-add)" "barrier" "shared-memory store, per-lane index"
       "4-byte store, per-lane index" "storage-buffer descriptor, 4 bytes, per-lane index"
       "texelFetch R32_SFLOAT, per-lane index" "none, with a vec4's adds (baseline of the vec4 row)"
       "4-byte load, consecutive lanes consecutive floats" "shared-memory load, consecutive lanes consecutive floats"
       "storage-buffer descriptor, 4 bytes, consecutive lanes consecutive floats"
       "4-byte load through a reference per lane, one index")
n=1024
for m in ${MODES:-$(seq 0 16)}; do
  for wg in ${WGS:-4}; do
    glslc --target-env=vulkan1.2 -O -DMODE=$m -DWG=$wg -o "$tmp/ops.spv" "$here/ops.comp"
    echo -n "${names[$m]}, $wg lanes a workgroup (units: operations of 4 lanes): "
    "$tmp/probe" "$tmp/ops.spv" $((4096 / wg)) "$reps" $((n * 8 * wg / 4)) $n | sed 's/^[^:]*: //'
  done
done

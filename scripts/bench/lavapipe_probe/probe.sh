#!/usr/bin/env bash
# What lavapipe's JIT makes of the operations a GEMM kernel is built from, on
# this CPU (docs/results.md, "lavapipe's GEMM on the AMD EPYC"): its own
# multiply-add peak, and the processor time of one load or subgroup operation
# per 8-lane subgroup. Builds the harness and shaders into a temporary folder.
#   scripts/bench/lavapipe_probe/probe.sh [reps]     (MODES="8 12" to run some loads only)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
reps=${1:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export VK_ICD_FILENAMES=${VK_ICD_FILENAMES:-/usr/share/vulkan/icd.d/lvp_icd.x86_64.json}
g++ -O2 -std=c++17 -o "$tmp/probe" "$here/probe.cpp" -lvulkan
n=4096
glslc --target-env=vulkan1.2 -O -DWG=8 -o "$tmp/peak8.spv" "$here/peak.comp"
PROBE_LIMITS=1 "$tmp/probe" "$tmp/peak8.spv" 1 1 1 1 >/dev/null  # the device's limits, as the harness reads them
for wg in 8 64; do
  glslc --target-env=vulkan1.2 -O -DWG=$wg -o "$tmp/peak$wg.spv" "$here/peak.comp"
  # flops per workgroup: WG lanes x n iterations x 96 fma x 2
  echo -n "multiply-add peak, $wg lanes a workgroup (units: flops): "
  "$tmp/probe" "$tmp/peak$wg.spv" $((32768 / wg)) "$reps" $((wg * n * 96 * 2)) $n | sed 's/^[^:]*: //'
done
names=("4-byte load, per-lane addresses" "4-byte load, one address" "8-byte load as uint64" "8-byte load as vec2"
       "subgroupBroadcast" "subgroupShuffle, constant lane" "shared-memory load" "none (the loop and the add)"
       "storage-buffer descriptor, 4 bytes, per-lane index" "storage-buffer descriptor, vec4, per-lane index"
       "uniform buffer, vec4, per-lane index" "uniform buffer, vec4, one index"
       "texelFetch R32_SFLOAT, per-lane index" "texelFetch R32G32B32A32_SFLOAT, per-lane index"
       "imageLoad R32_SFLOAT storage texel buffer, per-lane index" "texelFetch R32_SFLOAT, one index"
       "buffer reference, vec4, per-lane address" "none, with a vec4's adds (baseline of the vec4 rows)"
       "imageStore R32_SFLOAT storage texel buffer, per-lane index" "4-byte store through a buffer reference, per-lane address")
n=1024
for m in ${MODES:-$(seq 0 19)}; do
  glslc --target-env=vulkan1.2 -O -DMODE=$m -o "$tmp/loads$m.spv" "$here/loads.comp"
  echo -n "${names[$m]} (units: operations of 8 lanes): "
  "$tmp/probe" "$tmp/loads$m.spv" 1024 "$reps" $((n * 8)) $n | sed 's/^[^:]*: //'
done

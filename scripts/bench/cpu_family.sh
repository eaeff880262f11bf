#!/bin/bash
# One sitting of the figures docs/results.md's per-CPU-family tables hold
# (issue 29): the CPU, its flags and the BLAS core in use; the MLP and the
# CNN against their bounds; both against PyTorch, with the CNN's peak memory;
# elementwise kernels against NumPy and PyTorch; lavapipe's and SwiftShader's
# mm against the FMA peak and the MLP on lavapipe against the cpu device; the
# first mm of a process on each driver. Each command's output is printed
# under its command line, so the table's rows can be traced to it.
#
# "As shipped" is whatever the environment says: OPENBLAS_CORETYPE, if set,
# is respected by vela and named in the header lines. To compare with vela's
# own choice of core undone, run again with VELA_BLAS_CORE=off.
#
#   scripts/bench/cpu_family.sh [build/vela]      (about 15 minutes on 2 quiet cores)
set -u
vela=${1:-build/vela}
here=$(cd "$(dirname "$0")/../.." && pwd)
cd "$here" || exit 1
lvp=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json
sws=$(dpkg -L chromium-common 2>/dev/null | grep '/vk_swiftshader_icd\.json$' | head -1)
run() {  # run [VAR=value...] command...: print the line, then its output
  echo
  echo "\$ $*"
  env "$@" 2>&1
}
echo "date: $(date -u '+%F %H:%M UTC'); commit: $(git rev-parse --short HEAD 2>/dev/null)"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'); $(nproc) cores"
echo "flags: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx|avx2|fma|avx512f|avx512bw|avx512_bf16|amx_tile)$' | tr '\n' ' ')"
echo "environment: OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-(unset)} VELA_BLAS_CORE=${VELA_BLAS_CORE:-(unset)} LP_NATIVE_VECTOR_WIDTH=${LP_NATIVE_VECTOR_WIDTH:-(unset)}"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
run "$vela" scripts/bench/bound.lua epochs=3 set=fashion
run "$vela" scripts/bench/mnist.lua epochs=3 devices=cpu set=fashion torch_threads="$(nproc)"
run "$vela" scripts/bench/cnn.lua epochs=2 devices=cpu
run "$vela" scripts/bench/elementwise.lua --rounds 3
for icd in "$lvp" "$sws"; do
  [ -n "$icd" ] && [ -e "$icd" ] || continue
  run VK_ICD_FILENAMES="$icd" "$vela" scripts/bench/kernels.lua --devices vulkan:0 --sizes 1024 --elems 1048576 --calls 2000
  run VK_ICD_FILENAMES="$icd" "$vela" scripts/bench/mnist.lua epochs=2 devices=cpu,vulkan:0 torch=no
  run VK_ICD_FILENAMES="$icd" scripts/bench/first_use.sh 2 vulkan:0 "$vela"
done
echo
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

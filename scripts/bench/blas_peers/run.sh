#!/usr/bin/env bash
# BLIS and oneDNN (Debian bookworm's) beside OpenBLAS and vela's own paths, at
# vela's shapes: sgemm 1024³, the MLP's three products, the CNN's second conv
# as products, and oneDNN's convolution primitives against vela's conv kernels.
# A measurement, not a dependency: nothing here is built by CMake or CI, and
# scripts/setup.sh does not install these libraries. To run it:
#
#   apt-get install libblis-dev libblis4-pthread libdnnl-dev    (root)
#   scripts/bench/blas_peers/run.sh [rounds=7] [vela=build/vela]
#
# One binary per library (OpenBLAS and BLIS both export cblas_sgemm, so never
# both in one process), compiled with g++ -O2 into build/blas_peers/. Each round
# runs every library once per configuration, in the same order (A, B, C, A, B,
# C ...); the summary prints the medians over the rounds (each run's figure is
# itself the median of 5 timings) with their range, wall and per cpu-second
# (process cpu time, every thread), and the load average seen by each round.
# Raw lines: build/blas_peers/raw-DATE.txt (summary.py FILE prints them again).
# docs/cpu.md, "BLIS and oneDNN from Debian".
set -euo pipefail
cd "$(dirname "$0")/../../.."
rounds=${1:-7}
vela=${2:-build/vela}
here=scripts/bench/blas_peers
out=build/blas_peers
mkdir -p "$out"
lib=/usr/lib/x86_64-linux-gnu

missing=()
[ -e "$lib/libopenblas.so" ] || missing+=("OpenBLAS ($lib/libopenblas.so: apt-get install libopenblas-dev)")
[ -e "$lib/blis-pthread/libblis.so.4" ] || missing+=("BLIS ($lib/blis-pthread/libblis.so.4: apt-get install libblis4-pthread)")
[ -e /usr/include/oneapi/dnnl/dnnl.hpp ] && [ -e "$lib/libdnnl.so" ] ||
  missing+=("oneDNN (/usr/include/oneapi/dnnl/dnnl.hpp, $lib/libdnnl.so: apt-get install libdnnl-dev)")
[ -x "$vela" ] || missing+=("vela ($vela: scripts/setup.sh builds it)")
if [ ${#missing[@]} -gt 0 ]; then
  echo "blas_peers: missing, nothing measured:" >&2
  printf '  %s\n' "${missing[@]}" >&2
  exit 1
fi

cxx="g++ -O2 -std=c++20 -pthread"
$cxx -DPEER_OPENBLAS "$here/gemm_bench.cpp" -o "$out/gemm_openblas" -lopenblas
# BLIS's pthread build by path, found again at run time through the rpath (not the
# libblis.so.4 alternative, which may point at the OpenMP build)
$cxx -DPEER_BLIS "$here/gemm_bench.cpp" -o "$out/gemm_blis" "$lib/blis-pthread/libblis.so.4" \
  -Wl,-rpath,"$lib/blis-pthread"
$cxx -fopenmp -DPEER_DNNL "$here/gemm_bench.cpp" -o "$out/gemm_dnnl" -ldnnl
$cxx -fopenmp "$here/conv_dnnl.cpp" -o "$out/conv_dnnl" -ldnnl
for b in gemm_openblas gemm_blis gemm_dnnl; do
  n=$(ldd "$out/$b" | grep -cE 'libopenblas|libblis|libblas' || true)
  [ "$b" = gemm_dnnl ] && want=0 || want=1
  [ "$n" = "$want" ] || { echo "blas_peers: $b links $n BLAS libraries, expected $want" >&2; exit 1; }
done

raw=$out/raw-$(date -u +%Y%m%d-%H%M).txt
{
  echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD), $rounds rounds"
  echo "cpu $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')," \
    "family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')," \
    "model $(grep -m1 '^model[[:space:]]*:' /proc/cpuinfo | cut -d: -f2 | tr -d ' '), $(nproc) cpus"
  # oneDNN's own account of its ISA and of the implementation each primitive took
  ONEDNN_VERBOSE=1 "$out/conv_dnnl" 1 1 1 | grep -E '^onednn_verbose,info,cpu,(isa|runtime)' | sed 's/^/verbose /' || true
} > "$raw"
for r in $(seq 1 "$rounds"); do
  echo "round $r/$rounds ($(cut -d' ' -f1-3 /proc/loadavg))" >&2
  echo "load $r $(cut -d' ' -f1 /proc/loadavg)" >> "$raw"
  for t in 1 2; do
    for l in openblas blis dnnl; do "$out/gemm_$l" "$here/shapes.txt" "$t" lib >> "$raw"; done
    if [ "$t" = 2 ]; then
      for l in openblas blis dnnl; do "$out/gemm_$l" "$here/shapes.txt" 2 split >> "$raw"; done
    fi
    "$vela" "$here/vela_peers.lua" "$t" 60 5 peak >> "$raw"
    "$out/conv_dnnl" "$t" >> "$raw"
  done
done
echo "raw lines: $raw"
python3 "$here/summary.py" "$raw"

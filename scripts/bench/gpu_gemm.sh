#!/usr/bin/env bash
# mm_tiled's blocks side by side on a GPU: scripts/bench/gpu_gemm.lua once with
# the block record_gemm chooses and once per block named in VELA_MM_TILE.
#   scripts/bench/gpu_gemm.sh [build/vela] [gpu_gemm.lua options...]
# VELA_GPU_GEMM_TILES="auto 128 ..." picks the blocks (src/vulkan/kernels_blas.cpp, kTileShapes).
set -uo pipefail
cd "$(dirname "$0")/../.."
vela=${1:-build/vela}
shift || true
for tile in ${VELA_GPU_GEMM_TILES:-auto 128 128k8 64 32}; do
  VELA_MM_TILE=$tile "$vela" scripts/bench/gpu_gemm.lua "$@" || echo "gpu_gemm.sh: block $tile failed"
  echo
done

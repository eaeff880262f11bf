#!/usr/bin/env bash
# mm_tiled's blocks side by side on a GPU: scripts/bench/gpu_gemm.lua once with
# the block record_gemm chooses and once per block named in VELA_MM_TILE.
#   scripts/bench/gpu_gemm.sh [build/vela] [gpu_gemm.lua options...]
set -uo pipefail
cd "$(dirname "$0")/../.."
vela=${1:-build/vela}
shift || true
for tile in auto 128 128db 128k16 128k16db 64 32; do
  VELA_MM_TILE=$tile "$vela" scripts/bench/gpu_gemm.lua "$@" || echo "gpu_gemm.sh: block $tile failed"
  echo
done

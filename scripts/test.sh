#!/usr/bin/env bash
# The test command: builds when the build is missing or stale (through
# setup.sh), then runs every test in CTest with the Khronos validation layer on
# (a validation message fails the test that caused it).
#   scripts/test.sh              the Release build in build/
#   scripts/test.sh --sanitize   AddressSanitizer + UBSan build in build-sanitize/
set -euo pipefail
cd "$(dirname "$0")/.."

build=build
args=()
for a in "$@"; do
  case "$a" in
    --sanitize) build=build-sanitize; args+=(--sanitize) ;;
    -h|--help) echo "usage: scripts/test.sh [--sanitize]"; exit 0 ;;
    *) echo "test.sh: unknown option '$a'" >&2; exit 2 ;;
  esac
done

stale=1
if [[ -x $build/vela && -x $build/vela_tests ]]; then
  newer=$(find CMakeLists.txt cmake src shaders lua tests scripts -newer "$build/vela" -type f 2>/dev/null | head -1)
  [[ -z $newer ]] && stale=0
fi
((stale)) && scripts/setup.sh "${args[@]}"

export VELA_VALIDATE=1
if [[ $build == build-sanitize ]]; then
  # The Vulkan loader and Mesa's drivers keep allocations until exit; only our code is checked for leaks.
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0"
  export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
fi
cd "$build"
ctest --output-on-failure -j"$(nproc)" --timeout 600

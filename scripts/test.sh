#!/usr/bin/env bash
# The test command: builds when the build is missing or stale (through
# setup.sh), then runs every test in CTest with the Khronos validation layer on
# (a validation message fails the test that caused it), every Vulkan test on
# each of the two software drivers, one pass per driver:
#   1. lavapipe (vulkan:0): the whole suite;
#   2. SwiftShader (vulkan:0 in this pass): every Vulkan, kernel and op test,
#      the Lua tests, the MPI tests and the fuzzer (the Catch cases named vulkan*/kernels*/ops*, lua.*,
#      mpi.*, fuzz; the fuzzer there on the Vulkan device alone, 20,000 calls: pass 1
#      fuzzed the cpu); with --sanitize, of the Lua tests only the driver-specific ones,
#      and without the validation layer (the plain pass 2 validates every one of its tests);
#   3. both drivers at once: devices() lists vulkan:0 lavapipe, vulkan:1
#      SwiftShader, each selectable by name; data parallel training over
#      cpu + both (parallel.devices).
# Both drivers must be present: without one the command fails and says which.
# VELA_LAVAPIPE_ICD / VELA_SWIFTSHADER_ICD name the drivers' manifests where
# they are not in Debian's places.
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

# The drivers' manifests (ICD JSON files), given to the Vulkan loader per pass.
find_icd() {
  local f
  for f in "$@"; do [[ -f $f ]] && { echo "$f"; return 0; }; done
  return 0
}
lvp_icd=${VELA_LAVAPIPE_ICD:-$(find_icd /usr/share/vulkan/icd.d/lvp_icd."$(uname -m)".json \
  /usr/share/vulkan/icd.d/lvp_icd.*.json /etc/vulkan/icd.d/lvp_icd.*.json /usr/local/share/vulkan/icd.d/lvp_icd.*.json)}
sws_icd=${VELA_SWIFTSHADER_ICD:-$(find_icd $(dpkg -L chromium-common 2>/dev/null | grep '/vk_swiftshader_icd\.json$') \
  /usr/local/share/vulkan/icd.d/vk_swiftshader_icd.json /usr/lib/chromium/vk_swiftshader_icd.json)}
missing=()
[[ -n $lvp_icd && -f $lvp_icd ]] || missing+=("lavapipe (Debian package mesa-vulkan-drivers)")
[[ -n $sws_icd && -f $sws_icd ]] || missing+=("SwiftShader (Debian package chromium-common)")
if ((${#missing[@]})); then
  printf 'test.sh: missing Vulkan driver: %s\n' "${missing[@]}" >&2
  echo "test.sh: every Vulkan test runs on both software drivers; scripts/setup.sh installs them" >&2
  exit 1
fi

export VELA_VALIDATE=1
if [[ $build == build-sanitize ]]; then
  # The Vulkan loader and Mesa's drivers keep allocations until exit; only our code is checked for leaks.
  # intercept_tls_get_addr=0: up to GCC 13, the runtime's __tls_get_addr interceptor takes a dynamic TLS
  # block (the drivers' thread-locals; vela's own are static) whose start lies 16 bytes into a page for a
  # pre-2.25 glibc header and reads the two words before it as an address and a size; LeakSanitizer's
  # stop-the-world tracer then dies at exit ("Tracer caught signal 11", "LeakSanitizer has encountered a
  # fatal error") after the test has passed. Where the blocks land depends on the environment, so a test
  # could crash every time under ctest and never by hand (lua.test_surface on SwiftShader did).
  # quarantine_size_mb=16 (the default keeps 256 MB of freed memory unusable): lavapipe's
  # shaders allocate per workgroup through AddressSanitizer, and the quarantine's page
  # faults were most of the sanitized passes' system time ("vulkan gemm: grids beyond
  # 65,535 workgroups" 26.4 -> 17.7 s on a Zen 5); a use of memory freed within the last
  # 16 MB of frees is still caught, which is where use-after-free bugs in vela's own code
  # (a buffer used right after its release) would land.
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:intercept_tls_get_addr=0:quarantine_size_mb=16"
  export LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
fi
# Under the sanitizers pass 1 makes 20,000 fuzzer calls per device as pass 2 does (50,000 in the plain
# passes; lavapipe's run of it was the sanitized pass's longest test). Lavapipe keeps vela's width there:
# at LP_NATIVE_VECTOR_WIDTH=256 the Vulkan cases took 5-10% less (Zen 5), lua.test_conv twice as long.
pass1_env=()
[[ $build == build-sanitize ]] && pass1_env+=(VELA_FUZZ_CALLS=20000)
cd "$build"
status=0
# Each banner gives the seconds since test.sh began (the build before pass 1),
# so a CI log shows where its 30 minutes went.
echo "test.sh: pass 1 of 3: the whole suite, Vulkan on lavapipe ($lvp_icd) [$SECONDS s since test.sh began]"
env VK_ICD_FILENAMES="$lvp_icd" VELA_TEST_DRIVERS=llvmpipe "${pass1_env[@]}" \
  ctest --output-on-failure -j"$(nproc)" --timeout 600 || status=1
sws_tests='^(vulkan|kernels|ops|lua\.|mpi\.|fuzz$)'
sws_env=()
sws_skip='^$'  # nothing
sws_what="the Vulkan, kernel, op and Lua tests and the fuzzer"
if [[ $build == build-sanitize ]]; then
  # SwiftShader keeps no compiled kernel between processes, so each Lua test
  # compiles its kernels again; under the sanitizers its pass keeps the Lua
  # tests of host code that differs per driver (the plain pass runs them all
  # on SwiftShader), so that CI stays within 30 minutes on 2 cores.
  sws_tests='^(vulkan|kernels|ops|mpi\.|fuzz$|lua\.test_(user_kernel_interrupt|first_use|vk_heap_budget|disk_cache|user_kernels|faults|nn_devices)$)'
  # The seven large GEMM sweeps (0.3-3 minutes each here under the sanitizers,
  # their float64 reference loops and SwiftShader compiling each kernel
  # variant) run sanitized on lavapipe and plain on SwiftShader; the same host
  # code records them on both.
  sws_skip='^vulkan (mm: transposes, α and β|mm: sizes and leading dimensions that take|mm: a transposed c, and even sizes|dense: fused bias and each activation|mm: operands through texel views|mm: 8-byte loads of b|mm: mm_tiled.s blocks)'
  sws_what="the Vulkan, kernel and op tests but the seven GEMM sweeps, the fuzzer and the driver-specific Lua tests, without validation,"
  # The validation layer is off in this pass alone: every test of it ran validated on SwiftShader in the
  # plain pass 2 (the same Vulkan calls; the sanitizers check vela's host code, not the calls), and the
  # layer (its allocations through AddressSanitizer's) was over a quarter of it (350 -> 253 s on a Zen 5, the
  # unary kernels' case 36 -> 19 s). The sanitized lavapipe pass keeps it (a slower run's timing).
  sws_env+=(VELA_VALIDATE=0)
fi
echo "test.sh: pass 2 of 3: $sws_what on SwiftShader ($sws_icd) [$SECONDS s]"
env VK_ICD_FILENAMES="$sws_icd" VELA_TEST_DRIVERS=swiftshader VELA_FUZZ_DEVICES=vulkan:0 VELA_FUZZ_CALLS=20000 \
  "${sws_env[@]}" ctest --output-on-failure -j"$(nproc)" --timeout 600 -R "$sws_tests" -E "$sws_skip" || status=1
echo "test.sh: pass 3 of 3: both drivers at once [$SECONDS s]"
env VK_ICD_FILENAMES="$lvp_icd:$sws_icd" VELA_TEST_DRIVERS=llvmpipe,swiftshader \
  ctest --output-on-failure --timeout 600 -R '^(vulkan drivers:|parallel\.)' || status=1
((status == 0)) && echo "test.sh: all passes passed [$SECONDS s]" || echo "test.sh: a pass failed (see above) [$SECONDS s]" >&2
exit $status

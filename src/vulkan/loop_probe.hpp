// The loop probe of kernels written at the prompt. llvmpipe (lavapipe, and
// the cpu device, which runs user kernels through it) ends every loop of a
// shader invocation once its loops have run 65,535 iterations in all, without
// an error; a user's loop cannot be split by construction as the built-in
// kernels' are, so a cut is detected instead. Every user kernel ends with a
// probe loop of two iterations (vela_probe, src/userk/glsl.cpp)
// whose bounds no compiler can count: once the driver's count is spent it runs
// once, and the invocation sets a status word whose address the device passes
// as specialization constants 2 and 3 (low, high word; 0: no probe). The host
// reads the word when the work has completed and raises loop_cut_message in
// place of silently cut results. The cpu device's runner also sets constant 4
// (CHUNKED): it runs a grid in parts, and the word after the status word
// holds the part's first invocation, which id() adds (src/userk/host_runner.cpp).
//
// The stop word, the third word at the same address (kStopWord), lets Ctrl-C
// stop a user kernel that runs: a general kernel reads it (coherent, volatile)
// at its start and, on drivers that do not bound loops (checks_loops), once
// every 256 iterations of its loops (src/userk/glsl.cpp puts a check in front
// of every loop condition of the user's text), and returns once it is nonzero. The host sets it when Ctrl-C comes while it
// waits, and clears it once the work submitted before has completed: the cpu's
// runner and a Vulkan device with conditional rendering at once (the wait),
// one without it before its next submission (stream.cpp).
#pragma once
#include <cstdint>
#include <string>

namespace vela::vk {

// Whether a user kernel reads the stop word in its loops on this driver (the
// loop_check specialization constant): llvmpipe bounds an invocation's loops
// itself (65,535 iterations, above), so the check at the kernel's start
// suffices there, and a check in the loops would cost: it executes both sides
// of a branch under a lane mask, so the masked load ran every iteration
// (a loop of checked reads took 25% longer; docs/results.md).
inline bool checks_loops(const std::string& driver) { return driver != "llvmpipe"; }

// The words at the loop status address: the status, the part's first invocation (cpu), the stop word.
inline constexpr uint32_t kStatusWords = 3, kStopWord = 2;

// names: the kernel's name, or the kernels that may have been cut, comma-separated.
inline std::string loop_cut_message(const std::string& names) {
    return names + ": an invocation's loops ran 65,535 iterations in all, after which this driver (llvmpipe) "
                   "ends them without an error, so the results are incomplete and the written matrices hold "
                   "partial values (give each invocation fewer iterations: more invocations, or several calls on "
                   "parts of the matrices; SwiftShader and GPUs have no such limit)";
}

}  // namespace vela::vk

// Kernels written at the prompt: what the Lua layer (src/lua/user_kernels.cpp)
// hands a Device to run. The GLSL is compiled to SPIR-V once, in-process, by
// src/userk/compiler.cpp; every device that runs user kernels runs that
// SPIR-V (the Vulkan devices directly, the cpu through a software driver).
//
// The push-constant block of every user kernel, in this order (std430):
//   View m[0..matrices)   24 bytes each (shaders/common.glsl)
//   uint n                invocations wanted; the grid is rounded up to whole workgroups
//   32-bit scalars        float, int or uint, as declared
// Specialization constant 0 is the workgroup size (chosen per device).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/matrix.hpp"

namespace vela {

struct MapProgram;  // core/map_expr.hpp

constexpr uint32_t kUserViewBytes = 24;
constexpr uint32_t kUserPushBytes = 128;  // the pipeline layout's push range (src/vulkan/pipelines.hpp)

struct UserKernel {
    const char* name = "";    // what profile, trace and errors call it (interned: lives for the process)
    const char* module = "";  // the SPIR-V's id, "user:" + hash of the generated source (interned)
    std::shared_ptr<const std::vector<uint32_t>> spirv;
    // map kernels index elements in column-major order (dense views take the
    // fast path: View::rows = 0); general kernels see every view with its
    // rows, and its columns in View::pad.
    bool elementwise = true;
    // map kernels whose expression core/map_expr.hpp can run natively: how the
    // cpu device runs them (null: through the software driver, as general kernels)
    std::shared_ptr<const MapProgram> program;
};

// A string kept for the life of the process, one copy per distinct value:
// kernel names and module ids are handed around as const char*.
const char* intern(const std::string& s);

struct UserCall {
    const UserKernel* kernel = nullptr;
    std::vector<Matrix> mats;   // in push order
    std::vector<bool> written;  // per matrix: may the kernel write it
    std::vector<uint32_t> scalars;  // bit patterns
    uint64_t invocations = 0;
};

// How the cpu device runs a general kernel (one whose map expression core/map_expr.hpp
// cannot run natively): on host memory, the cpu device's matrices, and waits.
// host[i] and bytes[i]: the start and size of the buffer holding call.mats[i].
// The cpu device receives one at registration (src/backends.cpp hands it
// src/userk/host_runner.cpp's, which runs the SPIR-V through a software Vulkan
// driver); the cpu code itself calls no Vulkan code.
using HostRunner = void (*)(const UserCall& call, void* const* host, const size_t* bytes);

// The cpu's error where it cannot run a general kernel: "cpu: <kernel>: kernels written at the
// prompt run on the cpu through a software Vulkan driver, and <why> (what to install); or move
// the matrices to a Vulkan device". Thrown by the runner, or by the cpu device when it has none.
[[noreturn]] void fail_no_host_runner(const char* kernel, const char* why);

}  // namespace vela

// Kernels written at the prompt (user_kernels.cpp): what the two files of
// the Lua side share. user_kernels.cpp: map, kernel and kernel_info (the
// constructors); user_kernels_call.cpp: calling a kernel (argument checks, then
// the device's run_user). The GLSL vela writes around the user's text and its
// compiler live in src/userk (glsl.hpp, compiler.hpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/user_kernel.hpp"
#include "lua/vela.hpp"
#include "userk/glsl.hpp"

namespace vela::lua::user {

constexpr const char* kSpecType = "vela.UserKernelSpec";
constexpr int kMaxMats = int(kUserPushBytes / kUserViewBytes);  // 5
constexpr int kMaxScalars = 30;
constexpr uint64_t kMaxInvocations = 0xffffffffull - 4096;  // 32-bit indices; a rounded-up grid must not wrap

using userk::Scalar;
using userk::Spec;
using userk::valid_name;
using userk::reserved;
using userk::matrix_rank;
using userk::free_names;
using userk::map_source;
using userk::kernel_source;

// Formats a message and raises it as a Lua error. Callers hold no C++ object
// that owns memory when they call this (lua_error skips destructors).
[[noreturn]] void lfail(lua_State* L, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// user_kernels_call.cpp
Spec* new_spec(lua_State* L);  // a Spec as userdata on top of the stack
// The kernel function's body: upvalue 1 the Spec, upvalue 2 the size (general kernels).
int call_kernel(lua_State* L);

}  // namespace vela::lua::user

// Kernels written at the prompt (user_kernels.cpp): what the three files of
// the Lua side share. user_kernels.cpp: map, kernel and kernel_info (the
// constructors); user_kernels_glsl.cpp: the GLSL vela writes around the
// user's text; user_kernels_call.cpp: calling a kernel (argument checks, then
// the device's run_user).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/user_kernel.hpp"
#include "lua/vela.hpp"
#include "vulkan/user_kernel.hpp"

namespace vela::lua::user {

constexpr const char* kSpecType = "vela.UserKernelSpec";
constexpr int kMaxMats = int(kUserPushBytes / kUserViewBytes);  // 5
constexpr int kMaxScalars = 30;
constexpr uint64_t kMaxInvocations = 0xffffffffull - 4096;  // 32-bit indices; a rounded-up grid must not wrap

struct Scalar {
    std::string name;
    char type = 'f';  // f float, i int, u uint
};

struct Spec {
    bool elementwise = true;
    std::string name;       // as errors and profile show it
    bool named = false;     // name given by the user (help finds it)
    std::string user_text;  // the expression or body
    std::string source;     // the whole generated shader
    std::string signature;
    std::vector<std::string> mats;  // map: the inputs; kernel: every matrix argument, in call order
    std::vector<Scalar> scalars;    // in push order
    UserKernel uk;
    vk::CompiledKernel compiled;
};

// Formats a message and raises it as a Lua error. Callers hold no C++ object
// that owns memory when they call this (lua_error skips destructors).
[[noreturn]] void lfail(lua_State* L, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// user_kernels_glsl.cpp
bool valid_name(const std::string& s);
// Names the generated code uses or GLSL reserves: not available as argument names.
bool reserved(const std::string& s);
// Matrix names of map expressions: x, y, z, u, v, w, each optionally followed
// by digits; their rank in that order (-1: not a matrix name).
int matrix_rank(const std::string& s);
// The free names of a GLSL expression (not called, not fields, not keywords, not in comments).
std::vector<std::string> free_names(const std::string& e);
std::string map_source(const Spec& s);     // the whole shader of a map kernel
std::string kernel_source(const Spec& s);  // the whole shader of a general kernel

// user_kernels_call.cpp
Spec* new_spec(lua_State* L);  // a Spec as userdata on top of the stack
// The kernel function's body: upvalue 1 the Spec, upvalue 2 the size (general kernels).
int call_kernel(lua_State* L);

}  // namespace vela::lua::user

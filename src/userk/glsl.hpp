// The GLSL vela writes around the text of a kernel written at the prompt (glsl.cpp): a
// kernel's description (Spec, filled by the Lua constructors in src/lua/user_kernels.cpp),
// the names the user may use, and the whole shaders of map and general kernels, which
// compiler.hpp turns into SPIR-V.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/user_kernel.hpp"
#include "userk/compiler.hpp"

namespace vela::userk {

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
    CompiledKernel compiled;
};

bool valid_name(const std::string& s);
// Names the generated code uses or GLSL reserves: not available as argument names.
bool reserved(const std::string& s);
// Matrix names of map expressions: x, y, z, u, v, w, each optionally followed
// by digits; their rank in that order (-1: not a matrix name).
int matrix_rank(const std::string& s);
// The free names of a GLSL expression (not called, not fields, not keywords, not in comments).
std::vector<std::string> free_names(const std::string& e);
// The body of a general kernel with a check of the stop word in front of every
// loop condition (vela_go(): Ctrl-C stops the kernel; vulkan/loop_probe.hpp), lines kept.
std::string guard_loops(const std::string& body);
std::string map_source(const Spec& s);     // the whole shader of a map kernel
std::string kernel_source(const Spec& s);  // the whole shader of a general kernel

}  // namespace vela::userk

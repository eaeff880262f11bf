// The expression of a map kernel (core/user_kernel.hpp) as a small program the
// cpu device runs natively (src/cpu/user_map.cpp), block by block in
// vectorised loops over the op table's functions, instead of through a
// software Vulkan driver, whose per-lane memory accesses made map("tanh(x)")
// 3-4x slower than the built-in tanh.
//
// The parser takes the subset of GLSL expressions whose meaning is plain:
// float and int literals, the kernel's matrices and scalars, + - * / on
// numbers, comparisons, && || ^^ !, ?:, parentheses, float(e), and calls of
// the op table's functions and of GLSL's scalar built-ins. Integer
// subexpressions are folded with GLSL's rules (they hold only literals).
// Anything else (vectors, swizzles, bit operations, integer calls, ...)
// gives no program, and the kernel runs through the driver as before: the
// text has already been compiled by glslang, so the parser never has to
// diagnose errors, only to recognise what it can run exactly.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace vela {

struct MapProgram {
    enum Op : uint8_t {
        input,   // matrix `index`
        scalar,  // scalar parameter `index`
        constant,
        neg, not_, add, sub, mul, div, lt, le, gt, ge, eq, ne, and_, or_, xor_, select,
        call1, call2, call3,  // fn: a function of the table in map_expr.cpp
    };
    struct Node {
        Op op;
        uint8_t fn = 0;
        uint16_t index = 0;
        int32_t a = -1, b = -1, c = -1;  // operand nodes
        float value = 0;                 // constant
    };
    std::vector<Node> nodes;  // in evaluation order; the last is the result
};

// Function numbers of MapProgram::Node::fn (call1/call2/call3).
enum MapFn : uint8_t {
    f_exp, f_log, f_tanh, f_expm1, f_log1p, f_sigmoid, f_relu, f_softplus, f_elu, f_gelu, f_leaky_relu,
    f_abs, f_sign, f_floor, f_ceil, f_trunc, f_fract, f_sqrt, f_inversesqrt, f_exp2, f_log2,
    f_sin, f_cos, f_tan, f_asin, f_acos, f_atan, f_sinh, f_cosh, f_radians, f_degrees,
    f_isnan, f_isinf,
    f_pow, f_min, f_max, f_mod, f_step, f_atan2,
    f_clamp, f_mix, f_smoothstep, f_fma,
};

// The program of `expr` whose free names are `mats` (inputs, in order) and
// `scalars` (in push order), or null when the expression is outside the subset.
std::shared_ptr<const MapProgram> parse_map(const std::string& expr, const std::vector<std::string>& mats,
                                            const std::vector<std::string>& scalars);

}  // namespace vela

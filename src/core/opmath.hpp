// The op table's math (core/opmath.h) as C++: the spellings that differ from
// GLSL, then the shared text, in namespace vela::opmath. The same file is
// compiled into every shader through the generated ops.glsl (cmake/opgen.cpp).
#pragma once
#include <bit>
#include <cmath>

namespace vela::opmath {

inline int as_int(float f) { return std::bit_cast<int>(f); }
inline float as_float(int i) { return std::bit_cast<float>(i); }
inline bool isnan_f(float x) { return x != x; }
inline float sqrt_f(float x) { return std::sqrt(x); }
inline float abs_f(float x) { return std::fabs(x); }
// GLSL's vec2 and vec3, as far as the shared text uses them (construction, .x .y .z).
struct vec2 {
    float x, y;
};
struct vec3 {
    float x, y, z;
};

// always_inline: the vectorised loops need the calls gone (GCC stops inlining them once a unit holds a clone per op).
#define VELA_INLINE [[gnu::always_inline]] inline
#define VELA_PRECISE
#define exp_fast_f exp_f  // the cpu has one exp
#include "core/opmath.h"
#undef exp_fast_f
#undef VELA_INLINE
#undef VELA_PRECISE

}  // namespace vela::opmath

// Map kernels on the cpu device, natively: the expression's program
// (core/map_expr.hpp) runs over blocks of kBlock elements of walk()'s runs,
// one vectorised loop per node (the op table's functions are the same
// core/opmath.h code as the built-in kernels' and the shaders'), with dense
// operands read and the result written in place, no copy.
// No errno and no FP traps are observed here (as in elementwise.cpp): GCC
// then vectorises the selects and the opmath functions.
#pragma GCC optimize("no-math-errno", "no-trapping-math")
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/map_expr.hpp"
#include "core/user_kernel.hpp"
#include "cpu/cpu_kernels.hpp"
#include "cpu/vmath.hpp"

namespace vela::cpu {

namespace {

constexpr int kBlock = 512;

#define VELA_SIMD_CLONES __attribute__((target_clones("avx2", "default")))
using Fn1 = void (*)(const float*, float*, int);
using Fn2 = void (*)(const float*, const float*, float*, int);
using Fn3 = void (*)(const float*, const float*, const float*, float*, int);

#define VELA_F1(name, expr)                                                      \
    VELA_SIMD_CLONES void name(const float* a, float* d, int n) {                \
        for (int i = 0; i < n; i++) {                                            \
            const float x = a[i];                                                \
            d[i] = (expr);                                                       \
        }                                                                        \
    }
#define VELA_F2(name, expr)                                                      \
    VELA_SIMD_CLONES void name(const float* a, const float* b, float* d, int n) { \
        for (int i = 0; i < n; i++) {                                            \
            const float x = a[i], y = b[i];                                      \
            d[i] = (expr);                                                       \
        }                                                                        \
    }
#define VELA_F3(name, expr)                                                                     \
    VELA_SIMD_CLONES void name(const float* a, const float* b, const float* c, float* d, int n) { \
        for (int i = 0; i < n; i++) {                                                           \
            const float x = a[i], y = b[i], z = c[i];                                           \
            d[i] = (expr);                                                                      \
        }                                                                                       \
    }

// The GLSL definitions (GLSL 4.60 §8) where C's differ or do not exist.
inline float glsl_min(float x, float y) { return y < x ? y : x; }
inline float glsl_max(float x, float y) { return x < y ? y : x; }
inline float glsl_sign(float x) { return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : 0.0f; }

// The op table's functions: cpu::exp_f, tanh_f, sigmoid_f (vmath.hpp: what the built-in loops use) and opmath's.
VELA_F1(f_exp, cpu::exp_f(x))
VELA_F1(f_log, opmath::log_f(x))
VELA_F1(f_tanh, cpu::tanh_f(x))
VELA_F1(f_expm1, opmath::expm1_f(x))
VELA_F1(f_log1p, opmath::log1p_f(x))
VELA_F1(f_sigmoid, cpu::sigmoid_f(x))
VELA_F1(f_relu, opmath::relu_f(x))
VELA_F1(f_softplus, opmath::softplus_f(x))
VELA_F1(f_elu, opmath::elu_f(x))
VELA_F1(f_gelu, opmath::gelu_f(x))
VELA_F1(f_leaky_relu, opmath::leaky_relu_f(x))
VELA_F1(f_abs, std::fabs(x))
VELA_F1(f_sign, glsl_sign(x))
VELA_F1(f_floor, std::floor(x))
VELA_F1(f_ceil, std::ceil(x))
VELA_F1(f_trunc, std::trunc(x))
VELA_F1(f_fract, x - std::floor(x))
VELA_F1(f_sqrt, std::sqrt(x))
VELA_F1(f_inversesqrt, 1.0f / std::sqrt(x))
VELA_F1(f_exp2, std::exp2(x))
VELA_F1(f_log2, std::log2(x))
VELA_F1(f_sin, std::sin(x))
VELA_F1(f_cos, std::cos(x))
VELA_F1(f_tan, std::tan(x))
VELA_F1(f_asin, std::asin(x))
VELA_F1(f_acos, std::acos(x))
VELA_F1(f_atan, std::atan(x))
VELA_F1(f_sinh, std::sinh(x))
VELA_F1(f_cosh, std::cosh(x))
VELA_F1(f_radians, x * 0.017453292519943295f)
VELA_F1(f_degrees, x * 57.29577951308232f)
VELA_F1(f_isnan, std::isnan(x) ? 1.0f : 0.0f)
VELA_F1(f_isinf, std::isinf(x) ? 1.0f : 0.0f)
VELA_F1(o_neg, -x)
VELA_F1(o_not, x == 0.0f ? 1.0f : 0.0f)
VELA_F2(f_pow, std::pow(x, y))
VELA_F2(f_min, glsl_min(x, y))
VELA_F2(f_max, glsl_max(x, y))
VELA_F2(f_mod, x - y * std::floor(x / y))
VELA_F2(f_step, y < x ? 0.0f : 1.0f)
VELA_F2(f_atan2, std::atan2(x, y))
VELA_F2(o_add, x + y)
VELA_F2(o_sub, x - y)
VELA_F2(o_mul, x * y)
VELA_F2(o_div, x / y)
VELA_F2(o_lt, x < y ? 1.0f : 0.0f)
VELA_F2(o_le, x <= y ? 1.0f : 0.0f)
VELA_F2(o_gt, x > y ? 1.0f : 0.0f)
VELA_F2(o_ge, x >= y ? 1.0f : 0.0f)
VELA_F2(o_eq, x == y ? 1.0f : 0.0f)
VELA_F2(o_ne, x != y ? 1.0f : 0.0f)
VELA_F2(o_and, (x != 0.0f) & (y != 0.0f) ? 1.0f : 0.0f)
VELA_F2(o_or, (x != 0.0f) | (y != 0.0f) ? 1.0f : 0.0f)
VELA_F2(o_xor, (x != 0.0f) != (y != 0.0f) ? 1.0f : 0.0f)
VELA_F3(f_clamp, glsl_min(glsl_max(x, y), z))
VELA_F3(f_mix, x * (1.0f - z) + y * z)
VELA_F3(f_fma, std::fma(x, y, z))
VELA_F3(o_select, x != 0.0f ? y : z)
inline float smoothstep(float e0, float e1, float v) {
    float t = glsl_min(glsl_max((v - e0) / (e1 - e0), 0.0f), 1.0f);
    return t * t * (3.0f - 2.0f * t);
}
VELA_F3(f_smoothstep, smoothstep(x, y, z))

Fn1 fn1(uint8_t f) {
    static const Fn1 table[] = {f_exp, f_log, f_tanh, f_expm1, f_log1p, f_sigmoid, f_relu, f_softplus, f_elu,
                                f_gelu, f_leaky_relu, f_abs, f_sign, f_floor, f_ceil, f_trunc, f_fract, f_sqrt,
                                f_inversesqrt, f_exp2, f_log2, f_sin, f_cos, f_tan, f_asin, f_acos, f_atan,
                                f_sinh, f_cosh, f_radians, f_degrees, f_isnan, f_isinf};
    static_assert(sizeof table / sizeof *table == vela::f_isinf + 1, "MapFn's one-argument functions");
    return table[f];
}
Fn2 fn2(uint8_t f) {
    static const Fn2 table[] = {f_pow, f_min, f_max, f_mod, f_step, f_atan2};
    static_assert(sizeof table / sizeof *table == vela::f_atan2 - vela::f_pow + 1, "MapFn's two-argument functions");
    return table[f - vela::f_pow];
}
Fn3 fn3(uint8_t f) {
    static const Fn3 table[] = {f_clamp, f_mix, f_smoothstep, f_fma};
    static_assert(sizeof table / sizeof *table == vela::f_fma - vela::f_clamp + 1, "MapFn's three-argument functions");
    return table[f - vela::f_clamp];
}
Fn2 op2(MapProgram::Op op) {
    switch (op) {
    case MapProgram::add: return o_add;
    case MapProgram::sub: return o_sub;
    case MapProgram::mul: return o_mul;
    case MapProgram::div: return o_div;
    case MapProgram::lt: return o_lt;
    case MapProgram::le: return o_le;
    case MapProgram::gt: return o_gt;
    case MapProgram::ge: return o_ge;
    case MapProgram::eq: return o_eq;
    case MapProgram::ne: return o_ne;
    case MapProgram::and_: return o_and;
    case MapProgram::or_: return o_or;
    default: return o_xor;
    }
}

// One run of n elements: operand k at p[k] with stride s[k]; the output is the last operand.
template <size_t K>
void run_block(const MapProgram& prog, const float* scalars, int64_t n, const std::array<float*, K>& p,
               const std::array<int64_t, K>& s) {
    const size_t nn = prog.nodes.size();
    thread_local std::vector<float> scratch;
    if (scratch.size() < nn * kBlock) scratch.resize(nn * kBlock);
    const float* src[256];
    const int first = int(std::min<int64_t>(n, kBlock));
    // constants and scalars: filled once per run
    for (size_t k = 0; k < nn; ++k) {
        const MapProgram::Node& nd = prog.nodes[k];
        if (nd.op == MapProgram::constant || nd.op == MapProgram::scalar) {
            float v = nd.op == MapProgram::constant ? nd.value : scalars[nd.index];
            float* r = &scratch[k * kBlock];
            for (int i = 0; i < first; ++i) r[i] = v;
            src[k] = r;
        }
    }
    float* out = p[K - 1];
    const int64_t so = s[K - 1];
    for (int64_t b = 0; b < n; b += kBlock) {
        const int nb = int(std::min<int64_t>(kBlock, n - b));
        for (size_t k = 0; k < nn; ++k) {
            const MapProgram::Node& nd = prog.nodes[k];
            float* r = &scratch[k * kBlock];
            float* d = k + 1 == nn && so == 1 ? out + b : r;
            switch (nd.op) {
            case MapProgram::constant:
            case MapProgram::scalar: break;
            case MapProgram::input: {
                const float* q = p[nd.index];
                const int64_t st = s[nd.index];
                if (st == 1) {
                    src[k] = q + b;
                } else {
                    for (int i = 0; i < nb; ++i) r[i] = q[(b + i) * st];
                    src[k] = r;
                }
                break;
            }
            case MapProgram::neg: o_neg(src[nd.a], d, nb), src[k] = d; break;
            case MapProgram::not_: o_not(src[nd.a], d, nb), src[k] = d; break;
            case MapProgram::select: o_select(src[nd.a], src[nd.b], src[nd.c], d, nb), src[k] = d; break;
            case MapProgram::call1: fn1(nd.fn)(src[nd.a], d, nb), src[k] = d; break;
            case MapProgram::call2: fn2(nd.fn)(src[nd.a], src[nd.b], d, nb), src[k] = d; break;
            case MapProgram::call3: fn3(nd.fn)(src[nd.a], src[nd.b], src[nd.c], d, nb), src[k] = d; break;
            default: op2(nd.op)(src[nd.a], src[nd.b], d, nb), src[k] = d; break;
            }
        }
        if (so != 1) {
            const float* r = src[nn - 1];
            for (int i = 0; i < nb; ++i) out[(b + i) * so] = r[i];
        }
    }
}

template <size_t K>
void run_k(const MapProgram& prog, const UserCall& call, const float* scalars) {
    std::array<const Matrix*, K> ms;
    for (size_t k = 0; k < K; ++k) ms[k] = &call.mats[k];
    walk<K>(ms, [&](int64_t n, const std::array<float*, K>& p, const std::array<int64_t, K>& s) {
        run_block<K>(prog, scalars, n, p, s);
    });
}

}  // namespace

void run_map(const MapProgram& prog, const UserCall& call) {
    float scalars[32];
    size_t ns = std::min<size_t>(call.scalars.size(), 32);
    std::memcpy(scalars, call.scalars.data(), ns * 4);
    switch (call.mats.size()) {
    case 1: return run_k<1>(prog, call, scalars);
    case 2: return run_k<2>(prog, call, scalars);
    case 3: return run_k<3>(prog, call, scalars);
    case 4: return run_k<4>(prog, call, scalars);
    default: return run_k<5>(prog, call, scalars);
    }
}

}  // namespace vela::cpu

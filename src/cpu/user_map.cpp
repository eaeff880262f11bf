// Map kernels on the cpu device, natively: the expression's program
// (core/map_expr.hpp) runs over blocks of kBlock elements of walk()'s runs,
// one vectorised loop per node (the op table's functions are the same
// core/opmath.h code as the built-in kernels' and the shaders'), with dense
// operands read and the result written in place, no copy.
// No errno and no FP traps are observed here (as in elementwise.cpp): GCC
// then vectorises the selects and the opmath functions.
#pragma GCC optimize("no-math-errno", "no-trapping-math", "fp-contract=off")
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

using Fn1 = void (*)(const float*, float*, int);
using Fn2 = void (*)(const float*, const float*, float*, int);
using Fn3 = void (*)(const float*, const float*, const float*, float*, int);

// The GLSL definitions (GLSL 4.60 §8) where C's differ or do not exist.
inline float glsl_min(float x, float y) { return y < x ? y : x; }
inline float glsl_max(float x, float y) { return x < y ? y : x; }
inline float glsl_sign(float x) { return x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : 0.0f; }
inline float smoothstep(float e0, float e1, float v) {
    float t = glsl_min(glsl_max((v - e0) / (e1 - e0), 0.0f), 1.0f);
    return t * t * (3.0f - 2.0f * t);
}

// Every loop three times, as the built-in elementwise loops (elementwise.cpp):
// x86-64-v4 with 512-bit vectors, x86-64-v3, the baseline; the set for this
// CPU is chosen at startup. No FMA contraction (fp-contract=off above): the
// drivers evaluate the op table's polynomials unfused too, so a map gives the
// same bits on the cpu and the Vulkan devices.
namespace v4 {
#define VELA_LOOP_ATTR __attribute__((target("arch=x86-64-v4,prefer-vector-width=512")))
#include "cpu/user_map_loops.inc"
#undef VELA_LOOP_ATTR
}  // namespace v4
namespace v3 {
#define VELA_LOOP_ATTR __attribute__((target("arch=x86-64-v3")))
#include "cpu/user_map_loops.inc"
#undef VELA_LOOP_ATTR
}  // namespace v3
namespace base {
#define VELA_LOOP_ATTR
#include "cpu/user_map_loops.inc"
#undef VELA_LOOP_ATTR
}  // namespace base

int detect_isa() {  // 4, 3 or 0: the criteria of elementwise.cpp
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return 4;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2")) return 3;
    return 0;
}
const int kIsa = detect_isa();
Fn1 fn1(uint8_t f) { return kIsa == 4 ? v4::fn1(f) : kIsa == 3 ? v3::fn1(f) : base::fn1(f); }
Fn2 fn2(uint8_t f) { return kIsa == 4 ? v4::fn2(f) : kIsa == 3 ? v3::fn2(f) : base::fn2(f); }
Fn3 fn3(uint8_t f) { return kIsa == 4 ? v4::fn3(f) : kIsa == 3 ? v3::fn3(f) : base::fn3(f); }
Fn2 op2(MapProgram::Op op) { return kIsa == 4 ? v4::op2(op) : kIsa == 3 ? v3::op2(op) : base::op2(op); }
Fn1 o_neg() { return kIsa == 4 ? v4::o_neg : kIsa == 3 ? v3::o_neg : base::o_neg; }
Fn1 o_not() { return kIsa == 4 ? v4::o_not : kIsa == 3 ? v3::o_not : base::o_not; }
Fn3 o_select() { return kIsa == 4 ? v4::o_select : kIsa == 3 ? v3::o_select : base::o_select; }

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
            case MapProgram::neg: o_neg()(src[nd.a], d, nb), src[k] = d; break;
            case MapProgram::not_: o_not()(src[nd.a], d, nb), src[k] = d; break;
            case MapProgram::select: o_select()(src[nd.a], src[nd.b], src[nd.c], d, nb), src[k] = d; break;
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
    if (ns > 0) std::memcpy(scalars, call.scalars.data(), ns * 4);  // data() may be null when there are none
    switch (call.mats.size()) {
    case 1: return run_k<1>(prog, call, scalars);
    case 2: return run_k<2>(prog, call, scalars);
    case 3: return run_k<3>(prog, call, scalars);
    case 4: return run_k<4>(prog, call, scalars);
    default: return run_k<5>(prog, call, scalars);
    }
}

}  // namespace vela::cpu

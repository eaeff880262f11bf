// The branch-free float exp, tanh and sigmoid the CPU loops vectorise (libm's
// are scalar calls): the op table's math, core/opmath.h, shared with the shaders
// (exp and sigmoid as the cpu's own copies of it, below).
//
// gelu and gelu′ are the cpu's own: opmath's carry every sum and product as a
// float pair (shaders have no fast double); here the same tanh form is computed
// in double (half the lanes, far fewer operations: 1.2x and 1.6x faster on AVX2,
// scripts/bench/act_cpu.lua, docs/results.md), rounded once to float: within
// 0.5 ulp + 10⁻⁹ of float64 wherever the result is a normal float (the 2-ulp
// contract, tests/test_ops.cpp and tests/test_cpu_act.cpp). They hide opmath's
// gelu_f and gelu_prime_f by name in elementwise.cpp's loops (its `using
// namespace opmath` makes opmath's names members of vela, searched after
// vela::cpu), so the stride-1, strided, fused-backward and dense paths all use
// these, bit-identically. A user map kernel's gelu_f is still opmath's.
#pragma once
#include <bit>
#include <cstdint>

#include "core/opmath.hpp"

namespace vela::cpu {

using opmath::tanh_f;

// exp and sigmoid: opmath's exp_f and sigmoid_f bit for bit (the same
// operations in the same order) without the steps a CPU does not need, so the
// loops vectorise to fewer instructions: the final select of a NaN argument (a
// NaN stays a NaN through the clamps, which keep it, and the arithmetic; the
// shaders keep opmath's select: GLSL's int conversion of a NaN is undefined),
// exp_f's sanitising of it to 0, and in sigmoid −|x| as one sign-bit OR (−0 for
// −0, where opmath's is +0: e^−0 = e^+0 in exp_r_f). tests/test_cpu_isa.cpp
// holds them to opmath's bits.

[[gnu::always_inline]] inline float exp_f(float x) {
    float xc = 89.0f < x ? 89.0f : x;  // a NaN stays
    xc = -104.0f > xc ? -104.0f : xc;
    return opmath::exp_clamped_f(xc);
}

[[gnu::always_inline]] inline float sigmoid_f(float x) {
    float a = std::bit_cast<float>(std::bit_cast<uint32_t>(x) | 0x80000000u);  // −|x|
    a = -104.0f > a ? -104.0f : a;
    const int ki = opmath::exp_k_f(a);
    const float p = opmath::exp_r_f(a, ki) * 2.32830644e-10f;  // p·2^−32 (opmath's sigmoid_f)
    const float q = std::bit_cast<float>((95 - ki) << 23);    // 2^(−k−32)
    return (x < 0.0f ? p : q) / (q + p);
}

namespace gelu_detail {
inline constexpr double kC1 = 1.5957691216057308;                  // 2√(2/π): 2u = x·(c1 + c2·x²)
inline constexpr double kC2 = 0.044715 * 1.5957691216057308;      // 0.044715·c1
inline constexpr double kRound = 6755399441055744.0;               // 1.5·2^52: adding it rounds to an integer

// e^a for a in [−230, 0] in double (relative error below 3·10⁻¹⁰, 0.005 of a
// float ulp): a = k·ln2 + r, |r| ≤ ln2/2, ln2 in Cephes' two parts (k·L1
// exact), e^r by Taylor to r⁸ (truncation below 2·10⁻¹⁰; to r¹⁰ it was 2·10⁻¹³
// and gelu 8-10% slower, for no change in the worst ulp that shows: 0.50 and
// 0.53), times 2^k built from the bits (k ≥ −332: normal).
[[gnu::always_inline]] inline double exp_neg(double a) {
    const double t = a * 1.4426950408889634 + kRound;
    const int64_t k = std::bit_cast<int64_t>(t) - std::bit_cast<int64_t>(kRound);
    const double kd = t - kRound;
    const double r = (a - kd * 6.93145751953125e-1) - kd * 1.42860682030941723212e-6;
    // Estrin's scheme (pairs, then r², r⁴): a chain of 5 operations after r², not Horner's 16.
    const double r2 = r * r, r4 = r2 * r2;
    const double p01 = 1.0 + r, p23 = 0.5 + r * (1.0 / 6), p45 = 1.0 / 24 + r * (1.0 / 120),
                 p67 = 1.0 / 720 + r * (1.0 / 5040);
    const double p = (p01 + r2 * p23) + r4 * ((p45 + r2 * p67) + r4 * (1.0 / 40320));
    return p * std::bit_cast<double>((k + 1023) << 52);
}

// x clamped to [−14, 14], NaN to 0 (the callers select the tails and NaN).
[[gnu::always_inline]] inline double clamp14(float x) {
    float c = x < -14.0f ? -14.0f : x;
    c = c > 14.0f ? 14.0f : c;
    return x != x ? 0.0 : double(c);
}
}  // namespace gelu_detail

// gelu(x) = x·σ(2u): with E = e^−|2u|, σ = 1/(1 + E) for 2u ≥ 0, E/(1 + E) below.
// |x| > 14: x itself, or −0 (below half the smallest float), as opmath's.
[[gnu::always_inline]] inline float gelu_f(float xf) {
    using namespace gelu_detail;
    const double x = clamp14(xf);
    const double a = x * (kC1 + kC2 * (x * x));
    const bool neg = a < 0.0;
    const double e = exp_neg(neg ? a : -a);
    float v = float(x * ((neg ? e : 1.0) / (1.0 + e)));
    v = xf > 14.0f ? xf : (xf < -14.0f ? -0.0f : v);
    return xf != xf ? xf : v;
}

// gelu′(z) = σ·(1 + z·(1 − σ)·(2u)′), (2u)′ = c1 + 3c2·z², σ = σ(2u). Within 1/64 of
// gelu′'s zero z0 = −0.752461422…, where the bracket cancels, opmath's Taylor series
// about z0 (its coefficients), in double: gelu″(z0)·d·(1 + h3·d + … + h6·d⁴), d = z − z0.
[[gnu::always_inline]] inline float gelu_prime_f(float zf) {
    using namespace gelu_detail;
    const double z = clamp14(zf);
    const double z2 = z * z;
    const double a = z * (kC1 + kC2 * z2);
    const bool neg = a < 0.0;
    const double e = exp_neg(neg ? a : -a);
    const double rd = 1.0 / (1.0 + e);
    const double s = (neg ? e : 1.0) * rd, oms = (neg ? 1.0 : e) * rd;  // σ and 1 − σ
    const double v = s * (1.0 + z * (kC1 + 3.0 * kC2 * z2) * oms);
    const double dz = (z + 0.7524614334106445) - 1.1339627903339533e-8;  // z − z0, the first sum exact
    const double q = dz * (0.9003679752349854 + dz * (-0.03667018935084343 + dz * (-0.26474085450172424 +
                     dz * -0.03861367329955101)));
    const double at_zero = (0.4304001033306122 - 1.2305753749330961e-8) * dz * (1.0 + q);
    float w = float(std::fabs(dz) < 0.015625 ? at_zero : v);
    w = zf > 14.0f ? 1.0f : (zf < -14.0f ? -0.0f : w);
    return zf != zf ? zf : w;
}

}  // namespace vela::cpu

// Philox 4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
// 3", SC'11; the Random123 definition), the counter-based generator behind
// rand and randn on every device.
//
// Element k of a view (its column-major logical index) is drawn from
//   philox4x32_10(counter = {lo32(k), hi32(k), 0, 0}, key = {lo32(seed), hi32(seed)})
// so a value depends only on (seed, k): not on the device, the thread
// layout, or the view's leading dimension.
//
//   uniform: w0 >> 8 scaled by 2^-24: one of 2^24 evenly spaced values in [0, 1).
//   normal:  Box–Muller, z = sqrt(−2·ln u1) · cos(2π·u2) with
//            u1 = ((w0 >> 8) + 1)·2^-24 ∈ (0, 1], u2 = (w1 >> 8)·2^-24.
//
// The normal must be bit-identical between this file and its GLSL twin
// shaders/philox.glsl on any GPU. GPUs approximate division, sqrt, log, exp
// and cos differently, and may fuse a·b + c; only integer operations, exact
// int→float conversions of small integers, and correctly rounded float
// +, −, × are the same everywhere. So the normal uses only those:
//   ln u1:  u1 = m·2^e with m ∈ [√½, √2] split off with integer bit operations;
//           ln m = 2·atanh(s), s = (m − 1)/(m + 1), the reciprocal by four
//           Newton steps y ← y·(2 − h·y) from y = 2 − h (h = (m + 1)/2), and
//           atanh by its odd series to s¹¹ (|s| ≤ 0.172, error < 1e-11);
//           ln u1 = (e − 24)·ln2 (split in hi + lo) + ln m.
//   sqrt r: the inverse-square-root bit trick (0x5f3759df) and four Newton
//           steps y ← y·(1.5 − ½·r·y·y), then sqrt = r·y.
//   cos θ:  θ = 2π·u2 = q·π/2 + x with q the nearest quarter turn and x in
//           [−π/4, π/4) computed exactly from the integer; cos x and sin x
//           by Taylor polynomials to x¹⁰ and x⁹ (error < 2e-9), then the
//           quadrant picks ±cos x or ±sin x.
// Every constant is given by its bit pattern (the same in both files), no
// value is ever subnormal (GPUs may flush those), and this file is compiled
// with -ffp-contract=off (the GLSL twin marks its temporaries `precise`).
// |z| ≤ 5.78; the tails beyond that (probability 8e-9) are cut.
#pragma once
#include <array>
#include <cstdint>

namespace vela::philox {

using Counter = std::array<uint32_t, 4>;
using Key = std::array<uint32_t, 2>;

inline Counter philox4x32_10(Counter c, Key k) {
    constexpr uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u, W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
    for (int round = 0; round < 10; round++) {
        if (round > 0) k[0] += W0, k[1] += W1;
        uint64_t p0 = uint64_t(M0) * c[0], p1 = uint64_t(M1) * c[2];
        c = {uint32_t(p1 >> 32) ^ c[1] ^ k[0], uint32_t(p1), uint32_t(p0 >> 32) ^ c[3] ^ k[1], uint32_t(p0)};
    }
    return c;
}

inline Counter draw(uint64_t seed, uint64_t k) {
    return philox4x32_10({uint32_t(k), uint32_t(k >> 32), 0, 0}, {uint32_t(seed), uint32_t(seed >> 32)});
}

inline float uniform(uint64_t seed, uint64_t k) { return float(draw(seed, k)[0] >> 8) * 0x1p-24f; }
float normal(uint64_t seed, uint64_t k);

// The pieces of the normal, exposed for tests.
float normal_from_bits(uint32_t w0, uint32_t w1);
float log_unit(uint32_t a);    // ln((a + 1)·2^-24), a < 2^24
float sqrt_small(float r);     // √r for 0 ≤ r < 64
float cos_turn(uint32_t b);    // cos(2π·b·2^-24), b < 2^24

// Fill n elements at out, out + stride, ... with the values of indices k0, k0 + 1, ...
void fill_uniform(uint64_t seed, uint64_t k0, int64_t n, float* out, int64_t stride);
void fill_normal(uint64_t seed, uint64_t k0, int64_t n, float* out, int64_t stride);

}  // namespace vela::philox

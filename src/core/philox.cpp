// The float part of Philox normals; see philox.hpp for why every operation
// here is an integer operation or a single correctly rounded +, − or ×.
// Keep each expression in step with shaders/philox.glsl.
#pragma GCC optimize("fp-contract=off")
#include "core/philox.hpp"

#include <bit>

namespace vela::philox {

namespace {

inline float bits(uint32_t u) { return std::bit_cast<float>(u); }

// Constants by bit pattern, identical in shaders/philox.glsl.
const float kSqrt2 = bits(0x3fb504f3u);
const float kLn2Hi = bits(0x3f317200u), kLn2Lo = bits(0x35bfbe8eu);
const float kInv3 = bits(0x3eaaaaabu), kInv5 = bits(0x3e4ccccdu), kInv7 = bits(0x3e124925u);
const float kInv9 = bits(0x3de38e39u), kInv11 = bits(0x3dba2e8cu);
const float kC2 = bits(0xbf000000u), kC4 = bits(0x3d2aaaabu), kC6 = bits(0xbab60b61u);
const float kC8 = bits(0x37d00d01u), kC10 = bits(0xb493f27eu);
const float kS3 = bits(0xbe2aaaabu), kS5 = bits(0x3c088889u), kS7 = bits(0xb9500d01u), kS9 = bits(0x3638ef1du);
const float kTurn = bits(0x34c90fdbu);  // 2π·2^-24

}  // namespace

float log_unit(uint32_t a) {
    float f = float(a + 1u);  // exact: a + 1 ≤ 2^24
    uint32_t u = std::bit_cast<uint32_t>(f);
    int e = int(u >> 23) - 127;
    float m = bits((u & 0x007fffffu) | 0x3f800000u);  // f = m·2^e, m ∈ [1, 2)
    if (m > kSqrt2) {
        m = m * 0.5f;
        e = e + 1;
    }
    float h = (m + 1.0f) * 0.5f;  // ∈ [0.85, 1.21]
    float y = 2.0f - h;
    y = y * (2.0f - h * y);
    y = y * (2.0f - h * y);
    y = y * (2.0f - h * y);
    y = y * (2.0f - h * y);  // ≈ 1/h
    float s = (m - 1.0f) * y * 0.5f;  // (m − 1)/(m + 1); m − 1 is exact
    float z = s * s;
    float p = kInv11;
    p = p * z + kInv9;
    p = p * z + kInv7;
    p = p * z + kInv5;
    p = p * z + kInv3;
    float lnm = (s + s * (z * p)) * 2.0f;
    float ef = float(e - 24);
    return ef * kLn2Hi + (ef * kLn2Lo + lnm);
}

float sqrt_small(float r) {
    float y = bits(0x5f3759dfu - (std::bit_cast<uint32_t>(r) >> 1));
    float hr = 0.5f * r;
    y = y * (1.5f - hr * y * y);
    y = y * (1.5f - hr * y * y);
    y = y * (1.5f - hr * y * y);
    y = y * (1.5f - hr * y * y);
    return r * y;
}

float cos_turn(uint32_t b) {
    uint32_t q = (b + (1u << 21)) >> 22;      // nearest quarter turn, 0..4
    int32_t rem = int32_t(b) - int32_t(q << 22);  // ∈ [−2^21, 2^21)
    float x = float(rem) * kTurn;             // ∈ [−π/4, π/4)
    float z = x * x;
    float c = kC10;
    c = c * z + kC8;
    c = c * z + kC6;
    c = c * z + kC4;
    c = c * z + kC2;
    c = c * z + 1.0f;
    float s = kS9;
    s = s * z + kS7;
    s = s * z + kS5;
    s = s * z + kS3;
    s = x + x * (z * s);
    switch (q & 3u) {
        case 0: return c;
        case 1: return -s;
        case 2: return -c;
        default: return s;
    }
}

float normal_from_bits(uint32_t w0, uint32_t w1) {
    float r = -2.0f * log_unit(w0 >> 8);
    return sqrt_small(r) * cos_turn(w1 >> 8);
}

float normal(uint64_t seed, uint64_t k) {
    Counter w = draw(seed, k);
    return normal_from_bits(w[0], w[1]);
}

void fill_uniform(uint64_t seed, uint64_t k0, int64_t n, float* out, int64_t stride) {
    for (int64_t i = 0; i < n; i++) out[i * stride] = uniform(seed, k0 + uint64_t(i));
}

void fill_normal(uint64_t seed, uint64_t k0, int64_t n, float* out, int64_t stride) {
    for (int64_t i = 0; i < n; i++) out[i * stride] = normal(seed, k0 + uint64_t(i));
}

}  // namespace vela::philox

// Branch-free float exp, tanh and sigmoid that the compiler can vectorise
// (libm's are scalar calls). Accuracy about 2 ulp over the whole range,
// with gradual underflow, overflow to inf and NaN passed through.
#pragma once
#include <bit>
#include <cstdint>

namespace vela::cpu {

inline float exp_f(float x) {
    // Cody–Waite: x = k·ln2 + r, |r| ≤ ln2/2, e^x = 2^k·e^r (Cephes expf polynomial).
    float xc = x > 89.0f ? 89.0f : x;
    xc = xc < -104.0f ? -104.0f : xc;
    xc = x == x ? xc : 0.0f;
    float t = xc * 1.44269504088896341f + 12582912.0f;  // round to nearest via 1.5·2^23
    float k = t - 12582912.0f;
    int32_t ki = std::bit_cast<int32_t>(t) - 0x4B400000;
    float r = xc - k * 0.693359375f;
    r = r - k * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    float e = p * r * r + r + 1.0f;
    // 2^k as two factors so k ∈ [−150, 128] never leaves the normal exponents.
    int32_t k1 = ki / 2, k2 = ki - k1;
    float s1 = std::bit_cast<float>((k1 + 127) << 23), s2 = std::bit_cast<float>((k2 + 127) << 23);
    float v = e * s1 * s2;
    return x == x ? v : x;
}

inline float tanh_f(float x) {
    float ax = x < 0 ? -x : x;
    float z = x * x;  // small |x|: odd polynomial (Cephes tanhf)
    float small = ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z +
                    1.33314422036e-1f) * z - 3.33332819422e-1f) * z * x + x;
    float e = exp_f(2.0f * ax);
    float big = 1.0f - 2.0f / (e + 1.0f);
    big = x < 0 ? -big : big;
    return ax < 0.625f ? small : big;
}

inline float sigmoid_f(float x) {
    float e = exp_f(x < 0 ? x : -x);  // e^−|x| ≤ 1: no overflow, exact tails on both sides
    float s = 1.0f / (1.0f + e);
    return x >= 0 ? s : e * s;
}

}  // namespace vela::cpu

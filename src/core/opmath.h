// The math of the elementwise ops, written ONCE in the subset that C++ and
// GLSL share (float, int, ?:, function calls, literals with an f suffix), so
// the cpu device (src/cpu) and every shader (through the generated ops.glsl)
// compute the same functions: the rows of src/core/ops.def call these.
//
// Branch-free where it matters: the CPU loops vectorise them (see
// src/cpu/elementwise.cpp). Accuracy about 1-2 ulp over the whole range, with
// gradual underflow, overflow to inf and NaN passed through.
//
// Shader compilers may reassociate float arithmetic unless a value is marked
// `precise` (VELA_PRECISE): the rounding tricks below are so marked.
//
// The includer defines the few spellings that differ: VELA_INLINE (inline / empty), VELA_PRECISE,
// as_int, as_float (bit casts), isnan_f, sqrt_f, abs_f, exp_fast_f (the driver's exp
// on GPUs, exp_f on the cpu: used where its error cannot reach the result).
// C++: src/core/opmath.hpp; GLSL: the ops.glsl written by cmake/opgen.cpp.

// e^x. Cody–Waite: x = k·ln2 + r, |r| ≤ ln2/2, e^x = 2^k·e^r (Cephes expf polynomial).
VELA_INLINE float exp_f(float x) {
    float xc = x > 89.0f ? 89.0f : x;
    xc = xc < -104.0f ? -104.0f : xc;
    xc = isnan_f(x) ? 0.0f : xc;
    VELA_PRECISE float t = xc * 1.44269504088896341f + 12582912.0f;  // round to nearest via 1.5·2^23
    int ki = as_int(t) - 0x4B400000;
    float k = float(ki);
    VELA_PRECISE float r = xc - k * 0.693359375f;  // precise: a compiler must not fold the two ln2 parts
    r = r - k * -2.12194440e-4f;
    float poly = 1.9875691500e-4f;
    poly = poly * r + 1.3981999507e-3f;
    poly = poly * r + 8.3334519073e-3f;
    poly = poly * r + 4.1665795894e-2f;
    poly = poly * r + 1.6666665459e-1f;
    poly = poly * r + 5.0000001201e-1f;
    float e = poly * r * r + r + 1.0f;
    // 2^k as two factors so k ∈ [−150, 128] never leaves the normal exponents.
    int k1 = ki >> 1;  // floor(ki / 2): an arithmetic shift, cheaper than the division
    int k2 = ki - k1;
    float v = e * as_float((k1 + 127) << 23) * as_float((k2 + 127) << 23);
    return isnan_f(x) ? x : v;
}

// e^x − 1 without the cancellation near 0: a Taylor polynomial for |x| < ln2/2
// (the first omitted term is below 2^−30 relative there), e^x − 1 elsewhere.
VELA_INLINE float expm1_f(float x) {
    float s = x * (1.0f / 2.0f + x * (1.0f / 6.0f + x * (1.0f / 24.0f + x * (1.0f / 120.0f + x * (1.0f / 720.0f +
              x * (1.0f / 5040.0f + x * (1.0f / 40320.0f)))))));
    float small = x + x * s;
    float big = exp_f(x) - 1.0f;
    float ax = x < 0.0f ? -x : x;
    return ax < 0.34657359f ? small : big;
}

// ln x for x > 0 (Cephes logf): x = m·2^e with m ∈ [√½, √2), ln(1 + (m − 1)) by a
// polynomial; 0 → −inf, negative → NaN, inf and NaN pass through.
VELA_INLINE float log_f(float x) {
    // Subnormals from their bits (x = bits·2^−149; float(bits) is exact): a
    // driver that flushes subnormal arithmetic to zero (SwiftShader) gives the same.
    int ib = as_int(x);
    bool sub = ib > 0 && ib < 8388608;
    float xs = sub ? float(ib) : x;
    int i = as_int(xs);
    int e = ((i >> 23) & 255) - 126 - (sub ? 149 : 0);
    float m = as_float((i & 8388607) | 1056964608);  // mantissa in [0.5, 1)
    bool lo = m < 0.707106781186547524f;
    e = lo ? e - 1 : e;
    float y = lo ? m + m - 1.0f : m - 1.0f;
    float z = y * y;
    float poly = 7.0376836292e-2f;
    poly = poly * y - 1.1514610310e-1f;
    poly = poly * y + 1.1676998740e-1f;
    poly = poly * y - 1.2420140846e-1f;
    poly = poly * y + 1.4249322787e-1f;
    poly = poly * y - 1.6668057665e-1f;
    poly = poly * y + 2.0000714765e-1f;
    poly = poly * y - 2.4999993993e-1f;
    poly = poly * y + 3.3333331174e-1f;
    float fe = float(e);
    VELA_PRECISE float r = poly * y * z;
    r = r + fe * -2.12194440e-4f;
    r = r - 0.5f * z;
    r = y + r;
    r = r + fe * 0.693359375f;
    float inf = as_float(2139095040);
    r = x == 0.0f ? -inf : r;
    r = x < 0.0f ? as_float(2143289344) : r;  // NaN
    r = x == inf ? inf : r;
    return isnan_f(x) ? x : r;
}

// ln(1 + t) for t ≥ 0 (Goldberg's correction: the rounding of 1 + t cancels).
VELA_INLINE float log1p_f(float t) {
    VELA_PRECISE float u = 1.0f + t;
    VELA_PRECISE float d = u - 1.0f;
    return d == 0.0f ? t : log_f(u) * (t / d);
}

VELA_INLINE float tanh_f(float x) {
    if (x != x) return x;  // NaN: SwiftShader's exp gives a number for it
    float ax = x < 0.0f ? -x : x;
    float z = x * x;  // small |x|: odd polynomial (Cephes tanhf)
    float small = ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z +
                    1.33314422036e-1f) * z - 3.33332819422e-1f) * z * x + x;
    float e = exp_fast_f(2.0f * ax);  // only tanh: its result is within 1 of this, so a few ulp of e vanish
    float big = 1.0f - 2.0f / (e + 1.0f);
    big = x < 0.0f ? -big : big;
    return ax < 0.625f ? small : big;
}

VELA_INLINE float sigmoid_f(float x) {
    float e = exp_f(x < 0.0f ? x : -x);  // e^−|x| ≤ 1: no overflow, exact tails on both sides
    float s = 1.0f / (1.0f + e);
    return x >= 0.0f ? s : e * s;
}

VELA_INLINE float relu_f(float x) { return x < 0.0f ? 0.0f : x; }

// elu with α = 1: x for x > 0, e^x − 1 otherwise.
VELA_INLINE float elu_f(float x) { return x > 0.0f ? x : expm1_f(x); }

// gelu, tanh form: ½x(1 + tanh(√(2/π)(x + 0.044715x³))) = x·σ(2√(2/π)(x + 0.044715x³)),
// the σ form having no cancellation for negative x.
VELA_INLINE float gelu_f(float x) { return x * sigmoid_f(x * (1.5957691216057308f + 0.071354816272919f * (x * x))); }
VELA_INLINE float gelu_prime_f(float z) {
    float s = sigmoid_f(z * (1.5957691216057308f + 0.071354816272919f * (z * z)));
    return s + z * (s * (1.0f - s)) * (1.5957691216057308f + 0.214064448818757f * (z * z));
}

VELA_INLINE float leaky_relu_f(float x) { return x > 0.0f ? x : 0.01f * x; }

// ln(1 + e^x) = max(x, 0) + ln(1 + e^−|x|): no overflow, exact tails.
VELA_INLINE float softplus_f(float x) { return (x > 0.0f ? x : 0.0f) + log1p_f(exp_f(x < 0.0f ? x : -x)); }

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

// e^xc for xc in [−104, 89] (exp_f after its clamps; the cpu's exp and sigmoid,
// src/cpu/vmath.hpp, call it with a NaN too, which gives a NaN there).
// Cody–Waite: x = k·ln2 + r, |r| ≤ ln2/2, e^x = 2^k·e^r (Cephes expf polynomial).
// In two steps, which sigmoid_f shares: k, then p = e^r ∈ [0.70, 1.42].
VELA_INLINE int exp_k_f(float xc) {
    VELA_PRECISE float t = xc * 1.44269504088896341f + 12582912.0f;  // round to nearest via 1.5·2^23
    return as_int(t) - 0x4B400000;
}
// The polynomial by Estrin's scheme, not Horner's: its longest chain of
// dependent operations is 4 multiply-adds after r², not 7, and the cpu's loops
// are bound by that latency (the out-of-order window holds too few of Horner's
// iterations): 1.13x faster on the EPYC, worst 0.92 ulp as Horner's (docs/cpu.md).
VELA_INLINE float exp_r_f(float xc, int ki) {
    VELA_PRECISE float k = as_float(ki + 0x4B400000) - 12582912.0f;  // float(ki) exactly: t − 1.5·2^23, shorter than a conversion
    VELA_PRECISE float r = xc - k * 0.693359375f;  // precise: a compiler must not fold the two ln2 parts
    r = r - k * -2.12194440e-4f;
    float r2 = r * r;
    float p45 = 1.6666665459e-1f * r + 5.0000001201e-1f;
    float p23 = 8.3334519073e-3f * r + 4.1665795894e-2f;
    float p01 = 1.9875691500e-4f * r + 1.3981999507e-3f;
    float poly = (p01 * r2 + p23) * r2 + p45;
    VELA_PRECISE float e = poly * r2 + r + 1.0f;  // precise: unfused on every driver, as in the cpu's map kernels
    return e;
}
VELA_INLINE float exp_clamped_f(float xc) {
    int ki = exp_k_f(xc);
    float e = exp_r_f(xc, ki);
    // 2^k as two factors so k ∈ [−150, 128] never leaves the normal exponents.
    int k1 = ki >> 1;  // floor(ki / 2): an arithmetic shift, cheaper than the division
    int k2 = ki - k1;
    return e * as_float((k1 + 127) << 23) * as_float((k2 + 127) << 23);
}

// e^x, x clamped to [−104, 89] (beyond, e^x in float is 0 or inf), NaN passed through.
VELA_INLINE float exp_f(float x) {
    float xc = x > 89.0f ? 89.0f : x;
    xc = xc < -104.0f ? -104.0f : xc;
    xc = isnan_f(x) ? 0.0f : xc;
    float v = exp_clamped_f(xc);
    return isnan_f(x) ? x : v;
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

// σ(x) = 1/(1 + e^−|x|) for x ≥ 0 and e^−|x|/(1 + e^−|x|) below. With e^−|x| = p·2^k
// (k ≤ 0, exp_k_f and exp_r_f), that is 2^−k/(2^−k + p) and p/(2^−k + p): one sum
// and one quotient, without e's scaling by 2^k (its rounding to a subnormal
// included) and the product e·s. Both terms are taken times 2^−32, so that 2^−k
// (k ≥ −150) is a float and the quotient's operands stay within [2^−32, 2^118]
// (where a GPU's division is held to its error bound); the quotient is the same.
VELA_INLINE float sigmoid_f(float x) {
    float a = x < 0.0f ? x : -x;  // −|x|: e^a ≤ 1
    a = a < -104.0f ? -104.0f : a;
    int ki = exp_k_f(a);
    float p = exp_r_f(a, ki) * 2.32830644e-10f;  // p·2^−32, exact
    float q = as_float((95 - ki) << 23);          // 2^(−k−32)
    float s = (x < 0.0f ? p : q) / (q + p);
    return isnan_f(x) ? x : s;
}

// ---- Double-float arithmetic: a value carried as hi + lo ---------------------------------
// elu, gelu, softplus and their derivatives are held to 2 ulp of the exact value
// over the whole range where it is a normal float. In the tails that needs more
// than float arithmetic: gelu's e^(2u) multiplies the rounding of its argument
// 2u by |2u| (up to 87), and a few roundings of about ½ ulp each add up. So their
// inner sums and products are exact pairs (hi, lo) and only the result is
// rounded. Every step is `precise`: a shader compiler must neither reassociate
// it nor fuse a rounded product into a later add (a pair's low part is the
// rounding error of exactly that product). The C++ is built with
// -ffp-contract=off and without -ffast-math for the same reason (CMakeLists.txt;
// with -mfma and contraction on, gelu is off by 50 ulp).

// 2^k for an integer k in [−126, 127].
VELA_INLINE float pow2_f(int k) { return as_float((k + 127) << 23); }
// v·2^k for k in [−252, 254], in two steps so no factor leaves the normal range.
VELA_INLINE float scale2_f(float v, int k) {
    int k1 = k >> 1;
    return v * pow2_f(k1) * pow2_f(k - k1);
}

// hi + lo = a + b exactly (Knuth's two-sum).
VELA_INLINE vec2 two_sum_f(float a, float b) {
    VELA_PRECISE float s = a + b;
    VELA_PRECISE float bb = s - a;
    VELA_PRECISE float e = (a - (s - bb)) + (b - bb);
    return vec2(s, e);
}

// hi + lo = a·b exactly (Dekker): each factor split into 12-bit halves by
// clearing low bits, so every partial product is exact.
VELA_INLINE vec2 two_prod_f(float a, float b) {
    VELA_PRECISE float ah = as_float(as_int(a) & -4096);
    VELA_PRECISE float bh = as_float(as_int(b) & -4096);
    VELA_PRECISE float al = a - ah;
    VELA_PRECISE float bl = b - bh;
    VELA_PRECISE float p = a * b;
    VELA_PRECISE float e = (((ah * bh - p) + ah * bl) + al * bh) + al * bl;
    return vec2(p, e);
}

// n/d for pairs, to a pair: a quotient, then its remainder's correction (the
// correction also repairs a division that is not correctly rounded).
VELA_INLINE vec2 div_df(vec2 n, vec2 d) {
    VELA_PRECISE float q = n.x / d.x;
    VELA_PRECISE vec2 p = two_prod_f(q, d.x);
    VELA_PRECISE float r = (((n.x - p.x) - p.y) + n.y) - q * d.y;
    VELA_PRECISE float c = r / d.x;
    return two_sum_f(q, c);
}

// a·b for pairs, to a pair.
VELA_INLINE vec2 mul_df(vec2 a, vec2 b) {
    VELA_PRECISE vec2 p = two_prod_f(a.x, b.x);
    VELA_PRECISE float lo = p.y + (a.x * b.y + a.y * b.x);
    return two_sum_f(p.x, lo);
}

// e^(xh + xl) = 2^k·(1 + r + t), returned as (k, r, t): k = round(xh/ln2), r the
// reduced argument, t the rest (|t| < |r|/5). ln2 in three parts, the first two
// short enough that k·L1 and k·L2 are exact; the polynomial is Cephes expf's.
// For |xh| ≤ 120 (the callers clamp).
VELA_INLINE vec3 exp_parts_f(float xh, float xl) {
    VELA_PRECISE float t0 = xh * 1.44269504088896341f + 12582912.0f;  // round to nearest via 1.5·2^23
    int ki = as_int(t0) - 0x4B400000;
    float k = float(ki);
    VELA_PRECISE float r1 = xh - k * 0.693145751953125f;  // exact
    VELA_PRECISE vec2 r2 = two_sum_f(r1, -(k * 1.4285906217992306e-6f));
    VELA_PRECISE float small = (r2.y + xl) - k * 1.6198509548e-11f;
    VELA_PRECISE vec2 r = two_sum_f(r2.x, small);
    float poly = 1.9875691500e-4f;
    poly = poly * r.x + 1.3981999507e-3f;
    poly = poly * r.x + 8.3334519073e-3f;
    poly = poly * r.x + 4.1665795894e-2f;
    poly = poly * r.x + 1.6666665459e-1f;
    poly = poly * r.x + 5.0000001201e-1f;
    VELA_PRECISE float t = r.y + poly * (r.x * r.x);
    return vec3(k, r.x, t);
}

// gelu's argument 2u = x·(c1 + c2·x²), c1 = 2√(2/π), c2 = 0.044715·c1, as a pair
// (and the derivative's x·(c1 + 3c2·x²) with c = c3 = 3c2): the constants are
// pairs too. For |x| ≤ 14 (the callers clamp).
VELA_INLINE vec2 gelu_arg_df(float x, float ch, float cl) {
    VELA_PRECISE vec2 x2 = two_prod_f(x, x);
    VELA_PRECISE vec2 p = two_prod_f(ch, x2.x);
    VELA_PRECISE float pl = p.y + (ch * x2.y + cl * x2.x);
    VELA_PRECISE vec2 s = two_sum_f(1.5957691669464111f, p.x);
    VELA_PRECISE float sl = s.y + (pl - 4.534068054340423e-8f);
    VELA_PRECISE vec2 t = two_sum_f(s.x, sl);
    VELA_PRECISE vec2 a = two_prod_f(x, t.x);
    VELA_PRECISE float al = a.y + x * t.y;
    return two_sum_f(a.x, al);
}

// e^a for a pair a ≤ 0 as 2^k·m with m a pair in [0.7, 1.42]: vec3(m.x, m.y, k).
// a below −120 is taken as −120 (e^−120 is below half the smallest float).
VELA_INLINE vec3 exp_df(vec2 a) {
    bool low = a.x < -120.0f;
    VELA_PRECISE vec3 p = exp_parts_f(low ? -120.0f : a.x, low ? 0.0f : a.y);
    VELA_PRECISE vec2 m = two_sum_f(1.0f, p.y);
    VELA_PRECISE float ml = m.y + p.z;
    VELA_PRECISE vec2 mn = two_sum_f(m.x, ml);  // normalised: |lo| ≤ ½ ulp of hi, as div_df and mul_df expect
    return vec3(mn.x, mn.y, p.x);
}

// x clamped to [lo, hi], NaN to 0 (the callers select the NaN, inf and tail results themselves).
VELA_INLINE float clamp_f(float x, float lo, float hi) {
    float c = x < lo ? lo : x;
    c = c > hi ? hi : c;
    return isnan_f(x) ? 0.0f : c;
}

// ---- the activations ----------------------------------------------------------------------

// From the bits: every x with the sign set that is not a NaN (−0, negative
// subnormals, −inf) gives +0, also where a driver flushes subnormals
// (SwiftShader's x < 0 is false for −1e−40); a NaN passes through.
VELA_INLINE float relu_f(float x) { return as_int(x) <= -8388608 ? 0.0f : x; }

// e^x − 1 = 2^k·((1 − 2^−k) + r + t), the bracket summed exactly then rounded once,
// so no cancellation near 0 and none near −1.
VELA_INLINE float expm1_f(float x) {
    float xc = clamp_f(x, -30.0f, 89.0f);  // e^−30 − 1 rounds to −1; e^89 − 1 overflows
    VELA_PRECISE vec3 p = exp_parts_f(xc, 0.0f);
    int k = int(p.x);
    VELA_PRECISE vec2 a = two_sum_f(1.0f, -pow2_f(k > 126 ? -126 : -k));
    VELA_PRECISE vec2 s = two_sum_f(a.x, p.y);
    VELA_PRECISE float b = s.x + ((s.y + a.y) + p.z);
    return isnan_f(x) ? x : scale2_f(b, k);
}

// elu with α = 1: x for x > 0, e^x − 1 otherwise.
VELA_INLINE float elu_f(float x) { return x > 0.0f ? x : expm1_f(x); }

// gelu, tanh form: ½x(1 + tanh u), u = √(2/π)(x + 0.044715x³), computed as
// x·σ(2u) = x/(1 + e^−2u), which has no cancellation for negative x: with
// e^−|2u| = 2^k·m, gelu = x/(1 + 2^k·m) for x ≥ 0 and 2^k·x·m/(1 + 2^k·m) below.
// |x| > 14: x itself, or −0 (e^−218 is far below the smallest float).
VELA_INLINE float gelu_f(float x) {
    float xc = clamp_f(x, -14.0f, 14.0f);
    VELA_PRECISE vec2 a = gelu_arg_df(xc, 0.07135481387376785f, 2.3988324659995897e-9f);
    bool neg = a.x < 0.0f;
    VELA_PRECISE vec3 e = exp_df(neg ? a : vec2(-a.x, -a.y));
    int k = int(e.z);
    VELA_PRECISE vec2 d = two_sum_f(1.0f, scale2_f(e.x, k));
    d.y = d.y + scale2_f(e.y, k);
    VELA_PRECISE vec2 n = two_prod_f(xc, e.x);
    n.y = n.y + xc * e.y;
    VELA_PRECISE vec2 q = div_df(neg ? n : vec2(xc, 0.0f), d);
    float v = scale2_f(q.x, neg ? k : 0);
    v = x > 14.0f ? x : (x < -14.0f ? -0.0f : v);
    return isnan_f(x) ? x : v;
}

// gelu′(z) = σ + z·σ(1 − σ)·(2u)′ = σ·(1 + b·(1 − σ)), b = z·(c1 + 3c2·z²), σ = σ(2u);
// with e^−|2u| = 2^k·m and d = 1 + 2^k·m: for 2u < 0, σ = 2^k·m/d and 1 − σ = 1/d;
// for 2u ≥ 0, σ = 1/d and 1 − σ = 2^k·m/d. All as pairs; near the minimum of gelu,
// where the bracket cancels, a Taylor series about the zero of gelu′.
VELA_INLINE float gelu_prime_f(float z) {
    float zc = clamp_f(z, -14.0f, 14.0f);
    VELA_PRECISE vec2 a = gelu_arg_df(zc, 0.07135481387376785f, 2.3988324659995897e-9f);
    VELA_PRECISE vec2 b = gelu_arg_df(zc, 0.21406444907188416f, -2.540834209696641e-10f);
    bool neg = a.x < 0.0f;
    VELA_PRECISE vec3 e = exp_df(neg ? a : vec2(-a.x, -a.y));
    int k = int(e.z);
    VELA_PRECISE vec2 big = vec2(scale2_f(e.x, k), scale2_f(e.y, k));  // e^−|2u|
    VELA_PRECISE vec2 d = two_sum_f(1.0f, big.x);
    d.y = d.y + big.y;
    VELA_PRECISE vec2 one = div_df(vec2(1.0f, 0.0f), d);
    VELA_PRECISE vec2 other = div_df(neg ? vec2(e.x, e.y) : big, d);
    VELA_PRECISE vec2 bf = mul_df(b, neg ? one : other);
    VELA_PRECISE vec2 g = two_sum_f(1.0f, bf.x);
    g.y = g.y + bf.y;
    VELA_PRECISE vec2 r = mul_df(neg ? other : one, g);
    float v = scale2_f(r.x, neg ? k : 0);
    // Within 1/64 of gelu′'s zero z0 = −0.752461422…, where the bracket cancels: the Taylor
    // series about z0, gelu″(z0)·d·(1 + h3·d + … + h6·d⁴), d = z − z0, with z0 and gelu″(z0)
    // as pairs (z + z0.x is exact there), so the result is accurate relative to itself.
    VELA_PRECISE float dh = z + 0.7524614334106445f;
    VELA_PRECISE vec2 dz = two_sum_f(dh, -1.1339627903339533e-8f);
    float q = dz.x * (0.9003679752349854f + dz.x * (-0.03667018935084343f + dz.x * (-0.26474085450172424f +
              dz.x * -0.03861367329955101f)));
    VELA_PRECISE vec2 t = mul_df(vec2(0.4304001033306122f, -1.2305753749330961e-8f), dz);
    VELA_PRECISE float at_zero = t.x + (t.y + t.x * q);
    v = abs_f(dh) < 0.015625f ? at_zero : v;
    v = z > 14.0f ? 1.0f : (z < -14.0f ? -0.0f : v);
    return isnan_f(z) ? z : v;
}

VELA_INLINE float leaky_relu_f(float x) { return x > 0.0f ? x : 0.01f * x; }

// softplus(x) = ln(1 + eˣ) = max(x, 0) + ln(1 + E), E = e^−|x| = 2^k·m, and
// ln(1 + E) = 2·atanh(w) = 2w·(1 + w²/3 + w⁴/5 + …), w = E/(2 + E) ≤ ⅓ (the series
// to w¹⁴ is below 2^−27 of its sum); 2w = 2^k·2m/(2 + E) as a pair, and the sum
// with x as a pair: rounded once.
VELA_INLINE float softplus_f(float x) {
    float xc = clamp_f(x, -120.0f, 120.0f);
    VELA_PRECISE vec3 e = exp_df(vec2(xc < 0.0f ? xc : -xc, 0.0f));
    int k = int(e.z);
    VELA_PRECISE vec2 d = two_sum_f(2.0f, scale2_f(e.x, k));
    d.y = d.y + scale2_f(e.y, k);
    VELA_PRECISE vec2 w2 = div_df(vec2(2.0f * e.x, 2.0f * e.y), d);  // 2w·2^−k
    float w = scale2_f(0.5f * w2.x, k);
    float v = w * w;
    float s = 1.0f / 15.0f;
    s = s * v + 1.0f / 13.0f;
    s = s * v + 1.0f / 11.0f;
    s = s * v + 1.0f / 9.0f;
    s = s * v + 1.0f / 7.0f;
    s = s * v + 1.0f / 5.0f;
    s = s * v + 1.0f / 3.0f;
    VELA_PRECISE float lo = w2.y + w2.x * (v * s);
    VELA_PRECISE float neg = w2.x + lo;
    VELA_PRECISE vec2 sum = two_sum_f(xc, scale2_f(w2.x, k));
    VELA_PRECISE float pos = sum.x + (sum.y + scale2_f(lo, k));
    float r = x > 0.0f ? pos : scale2_f(neg, k);
    r = x > 120.0f ? x : r;
    return isnan_f(x) ? x : r;
}

// softplus′ = σ(x) to 2 ulp: with e^−|x| = 2^k·m and d = 1 + 2^k·m, σ = 1/d for
// x ≥ 0 and 2^k·m/d below, as pairs.
VELA_INLINE float softplus_prime_f(float x) {
    float xc = clamp_f(x, -120.0f, 120.0f);
    bool neg = xc < 0.0f;
    VELA_PRECISE vec3 e = exp_df(vec2(neg ? xc : -xc, 0.0f));
    int k = int(e.z);
    VELA_PRECISE vec2 d = two_sum_f(1.0f, scale2_f(e.x, k));
    d.y = d.y + scale2_f(e.y, k);
    VELA_PRECISE vec2 q = div_df(neg ? vec2(e.x, e.y) : vec2(1.0f, 0.0f), d);
    return isnan_f(x) ? x : scale2_f(q.x, neg ? k : 0);
}

// ---- the binary ops (core/binary.def) -------------------------------------------------------

// x^y. An integer |y| < 64 by repeated squaring (six bounded steps: x², x³ exact as a user
// expects, the sign of x kept for odd y); otherwise |x|^y = e^(y·ln|x|) (error about
// |y·ln x|·2^−24 relative), NaN for x < 0 with a fractional y, 1 for y = 0 or |x| = 1.
VELA_INLINE float pow_f(float x, float y) {
    bool ynan = isnan_f(y);
    bool big = abs_f(y) >= 16777216.0f;  // every float this large is an even integer
    int yi = int(ynan || big ? 0.0f : y);
    bool integral = big || (!ynan && float(yi) == y);
    int n = yi < 0 ? -yi : yi;
    bool by_products = integral && !big && n < 64;
    float r = 1.0f;
    float b = x;
    for (int i = 0; i < 6; i++) {
        r = (n & 1) != 0 ? r * b : r;
        b = b * b;
        n = n >> 1;
    }
    float rs = yi < 0 ? 1.0f / r : r;
    float ax = abs_f(x);
    float g = exp_f(y * log_f(ax));
    g = ax == 1.0f ? 1.0f : g;
    g = x < 0.0f && integral && !big && (yi & 1) != 0 ? -g : g;  // an odd power keeps the sign
    g = x < 0.0f && !integral ? as_float(2143289344) : g;        // NaN
    g = isnan_f(x) || ynan ? x + y : g;
    return by_products ? rs : g;
}

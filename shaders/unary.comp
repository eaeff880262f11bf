// y ← f(x) elementwise, for the 13 functions of vela::Unary; the function is
// a specialization constant (its enum value), so each gets its own pipeline.
#version 450
#include "common.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint OP = 0;  // vela::Unary
layout(constant_id = 2) const uint VEC4 = 0;  // dense 16-byte aligned views: four elements per invocation
layout(local_size_x_id = 0) in;

layout(buffer_reference, buffer_reference_align = 16) buffer V4 { vec4 v; };

layout(push_constant) uniform Push {
    View x;
    View y;
    View unused;
    uint n;
    float p0, p1, p2, p3;  // linear_frac: (p0·x + p1) / (p2·x + p3)
} p;

// Drivers' tanh loses relative accuracy near 0 (lavapipe: 1e-5) and some
// overflow to NaN for large |x|: an odd polynomial for small |x| (Cephes
// tanhf), 1 − 2/(e^{2|x|} + 1) elsewhere, as the CPU device does.
float tanh_accurate(float x) {
    float ax = abs(x);
    if (ax < 0.625) {
        float z = x * x;
        return ((((-5.70498872745e-3 * z + 2.06390887954e-2) * z - 5.37397155531e-2) * z + 1.33314422036e-1) * z -
                3.33332819422e-1) * z * x + x;
    }
    float big = 1.0 - 2.0 / (exp(2.0 * ax) + 1.0);
    return x < 0.0 ? -big : big;
}

// e^−|x| never overflows, and the negative tail keeps its relative accuracy.
float sigmoid_accurate(float x) {
    float e = exp(-abs(x));
    float s = 1.0 / (1.0 + e);
    return x >= 0.0 ? s : e * s;
}

float f(float x) {
    switch (OP) {
    case 0: return tanh_accurate(x);
    case 1: return sigmoid_accurate(x);
    case 2: return max(x, 0.0);
    case 3: return exp(x);
    case 4: return log(x);
    case 5: return sqrt(x);
    case 6: return x * x;
    case 7: return 1.0 / x;
    case 8: return abs(x);
    case 9: return (p.p0 * x + p.p1) / (p.p2 * x + p.p3);
    case 10: return 1.0 - x * x;       // tanh' from a = tanh(z)
    case 11: return x * (1.0 - x);     // σ' from a = σ(z)
    default: return x > 0.0 ? 1.0 : 0.0;  // relu'
    }
}

void main() {
    if (VEC4 != 0) {  // on CPU devices each buffer access is a per-lane loop: a vec4 costs one
        uint k = global_index(WG) * 4u;
        if (k >= p.n) return;
        if (p.n - k >= 4u) {
            vec4 x = V4(p.x.addr + uint64_t(k) * 4ul).v;
            V4(p.y.addr + uint64_t(k) * 4ul).v = vec4(f(x.x), f(x.y), f(x.z), f(x.w));
        } else {
            for (; k < p.n; ++k) store_f32(p.y.addr, k, f(load_f32(p.x.addr, k)));
        }
        return;
    }
    uint k = global_index(WG);
    if (k >= p.n) return;
    st(p.y, k, f(ld(p.x, k)));
}

// The fused optimizer updates (vela::Optim, a specialization constant), one
// element per invocation: the math is src/core/ops_optim.cpp's, the same as
// the cpu's src/cpu/optim.cpp. No loops: any size is a grid (split over y and
// z by the host where one dimension would pass the driver's workgroup count).
#version 450
#include "common.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint KIND = 0;  // vela::Optim: 0 sgd, 1 adam
layout(local_size_x_id = 0) in;

// struct OptimPush of src/vulkan/kernels_optim.cpp (120 bytes, within the 128 every driver has).
layout(push_constant) uniform Push {
    View w;
    View g;
    View s1;  // sgd: the velocity; adam: the first moment
    View s2;  // adam: the second moment
    uint n;
    float a, b, c, d;  // sgd: lr, μ, λ, nesterov; adam: lr, β₁, β₂, ε
} p;

void main() {
    uint k = global_index(WG);
    if (k >= p.n) return;
    uint iw = view_index(p.w, k), ig = view_index(p.g, k), i1 = view_index(p.s1, k);
    float w = load_f32(p.w.addr, iw);
    float g = load_f32(p.g.addr, ig);
    float s1 = load_f32(p.s1.addr, i1);
    if (KIND == 0u) {
        float gg = g + p.c * w;
        float v = p.b * s1 + gg;
        store_f32(p.s1.addr, i1, v);
        store_f32(p.w.addr, iw, w - p.a * (p.d != 0.0 ? gg + p.b * v : v));
    } else {
        uint i2 = view_index(p.s2, k);
        float m = p.b * s1 + (1.0 - p.b) * g;
        float v = p.c * load_f32(p.s2.addr, i2) + (1.0 - p.c) * (g * g);
        store_f32(p.s1.addr, i1, m);
        store_f32(p.s2.addr, i2, v);
        store_f32(p.w.addr, iw, w - p.a * m / (sqrt(v) + p.d));
    }
}

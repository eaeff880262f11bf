// The fused optimizer updates (vela::Optim, a specialization constant): the
// math is src/core/ops_optim.cpp's, the same as the cpu's src/cpu/optim.cpp.
// One element per invocation, or four (VEC4: every operand dense and 16-byte
// aligned, as a network's parameters are): on CPU implementations each buffer
// access is a loop over the lanes, so a vec4 costs what one float does, and
// lavapipe runs the MLP's 784×256 sgd_step in about half the time. No loops
// but the last invocation's 1-3 tail elements: any size is a grid (split over
// y and z by the host where one dimension would pass the driver's workgroup count).
#version 450
#include "common.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint KIND = 0;  // vela::Optim: 0 sgd, 1 adam
layout(constant_id = 2) const uint VEC4 = 0;  // dense 16-byte aligned operands: four elements per invocation
layout(local_size_x_id = 0) in;

layout(buffer_reference, buffer_reference_align = 16) buffer V4 { vec4 v; };

// struct OptimPush of src/vulkan/kernels_optim.cpp (120 bytes, within the 128 every driver has).
layout(push_constant) uniform Push {
    View w;
    View g;
    View s1;  // sgd: the velocity; adam: the first moment
    View s2;  // adam: the second moment
    uint n;
    float a, b, c, d;  // sgd: lr, μ, λ, nesterov; adam: lr, β₁, β₂, ε
} p;

// The math on four elements at once; the one-element path passes its element
// in every lane and keeps .x (the same float operations, so the same bits).
void sgd(vec4 w, vec4 g, vec4 v, out vec4 v_new, out vec4 w_new) {  // g' = g + λ·w, v ← μ·v + g'
    vec4 gg = g + p.c * w;
    v_new = p.b * v + gg;
    w_new = w - p.a * (p.d != 0.0 ? gg + p.b * v_new : v_new);
}
void adam(vec4 w, vec4 g, vec4 m, vec4 v, out vec4 m_new, out vec4 v_new, out vec4 w_new) {
    m_new = p.b * m + (1.0 - p.b) * g;
    v_new = p.c * v + (1.0 - p.c) * (g * g);
    w_new = w - p.a * m_new / (sqrt(v_new) + p.d);
}

void element(uint iw, uint ig, uint i1, uint i2) {
    vec4 w = vec4(load_f32(p.w.addr, iw)), g = vec4(load_f32(p.g.addr, ig)), s1 = vec4(load_f32(p.s1.addr, i1));
    vec4 w_new, s1_new, s2_new;
    if (KIND == 0u) {
        sgd(w, g, s1, s1_new, w_new);
    } else {
        adam(w, g, s1, vec4(load_f32(p.s2.addr, i2)), s1_new, s2_new, w_new);
        store_f32(p.s2.addr, i2, s2_new.x);
    }
    store_f32(p.s1.addr, i1, s1_new.x);
    store_f32(p.w.addr, iw, w_new.x);
}

void main() {
    if (VEC4 != 0) {
        uint k = global_index(WG) * 4u;
        if (k >= p.n) return;
        if (p.n - k < 4u) {  // the last 1-3 elements
            for (; k < p.n; ++k) element(k, k, k, k);
            return;
        }
        V4 wr = V4(addr_f32(p.w.addr, k)), s1r = V4(addr_f32(p.s1.addr, k));
        vec4 w = wr.v, g = V4(addr_f32(p.g.addr, k)).v, s1 = s1r.v;
        vec4 w_new, s1_new, s2_new;
        if (KIND == 0u) {
            sgd(w, g, s1, s1_new, w_new);
        } else {
            V4 s2r = V4(addr_f32(p.s2.addr, k));
            adam(w, g, s1, s2r.v, s1_new, s2_new, w_new);
            s2r.v = s2_new;
        }
        s1r.v = s1_new;
        wr.v = w_new;
        return;
    }
    uint k = global_index(WG);
    if (k >= p.n) return;
    element(view_index(p.w, k), view_index(p.g, k), view_index(p.s1, k), view_index(p.s2, k));
}

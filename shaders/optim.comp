// The fused optimizer updates (vela::Optim, a specialization constant): the
// math and the six scalars q are src/core/ops_optim.cpp's, the same float
// operations in the same order as the cpu's src/cpu/optim.cpp.
// One element per invocation, or four (VEC4: every operand dense and 16-byte
// aligned, as a network's parameters are): on CPU implementations each buffer
// access is a loop over the lanes, so a vec4 costs what one float does, and
// lavapipe runs the MLP's 784×256 sgd_step in about half the time. No loops
// but the last invocation's 1-3 tail elements: any size is a grid (split over
// y and z by the host where one dimension would pass the driver's workgroup count).
#version 450
#include "common.glsl"
#include "modes.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint KIND = OPTIM_SGD;  // vela::Optim (VELA_OPTIMS in src/core/device.hpp)
layout(constant_id = 2) const uint VEC4 = 0;  // dense 16-byte aligned operands: four elements per invocation
layout(local_size_x_id = 0) in;

layout(buffer_reference, buffer_reference_align = 16) buffer V4 { vec4 v; };

// A View (common.glsl) whose fourth word carries one of the kernel's scalars
// instead of padding: five operands and six scalars fill the 128 bytes of
// push constants every driver has.
struct Operand {
    Addr addr;
    uint rows, rstep, cstep;
    float q;
};
View as_view(Operand o) { return View(o.addr, o.rows, o.rstep, o.cstep, 0u); }

// struct OptimPush of src/vulkan/kernels_optim.cpp (128 bytes).
layout(push_constant) uniform Push {
    Operand w;
    Operand g;
    Operand s1;  // sgd: the velocity; adam(w): the first moment; rmsprop: the mean square; adagrad: the sum
    Operand s2;  // adam(w): the second moment; rmsprop: the momentum buffer
    Operand s3;  // rmsprop centered: the mean gradient
    uint n;
    float q5;
} p;

// q0..q5 per kind (src/core/ops_optim.cpp):
//   sgd: lr, μ, λ, nesterov          adam: lr, 1−β₁, β₂, 1−β₂, ε, λ     adamw: as adam, q5 = 1 − lr·λ
//   rmsprop: lr, α, 1−α, ε, λ, μ     adagrad: lr, λ, ε
#define Q0 p.w.q
#define Q1 p.g.q
#define Q2 p.s1.q
#define Q3 p.s2.q
#define Q4 p.s3.q
#define Q5 p.q5

const bool USES_S3 = KIND == OPTIM_RMSPROP_CENTERED;
bool uses_s2() {
    return KIND == OPTIM_ADAM || KIND == OPTIM_ADAMW ||
           ((KIND == OPTIM_RMSPROP || KIND == OPTIM_RMSPROP_CENTERED) && Q5 != 0.0);
}

// The math on four elements at once; the one-element path passes its element
// in every lane and keeps .x (the same float operations, so the same bits).
void update(inout vec4 w, vec4 g, inout vec4 s1, inout vec4 s2, inout vec4 s3) {
    if (KIND == OPTIM_SGD) {
        vec4 gg = g + Q2 * w;
        s1 = Q1 * s1 + gg;
        w = w - Q0 * (Q3 != 0.0 ? gg + Q1 * s1 : s1);
    } else if (KIND == OPTIM_ADAM || KIND == OPTIM_ADAMW) {
        if (KIND == OPTIM_ADAMW) w = Q5 * w;
        else g = g + Q5 * w;
        s1 = s1 + Q1 * (g - s1);
        s2 = Q2 * s2 + Q3 * (g * g);
        w = w - Q0 * s1 / (sqrt(s2) + Q4);
    } else if (KIND == OPTIM_RMSPROP || KIND == OPTIM_RMSPROP_CENTERED) {
        g = g + Q4 * w;
        s1 = Q1 * s1 + Q2 * (g * g);
        vec4 d;
        if (KIND == OPTIM_RMSPROP_CENTERED) {
            s3 = s3 + Q2 * (g - s3);
            d = sqrt(s1 - s3 * s3) + Q3;
        } else {
            d = sqrt(s1) + Q3;
        }
        if (Q5 != 0.0) {
            s2 = Q5 * s2 + g / d;
            w = w - Q0 * s2;
        } else {
            w = w - Q0 * (g / d);
        }
    } else {  // OPTIM_ADAGRAD
        g = g + Q1 * w;
        s1 = s1 + g * g;
        w = w - Q0 * (g / (sqrt(s1) + Q2));
    }
}

void element(uint iw, uint ig, uint i1, uint i2, uint i3) {
    vec4 w = vec4(load_f32(p.w.addr, iw)), g = vec4(load_f32(p.g.addr, ig)), s1 = vec4(load_f32(p.s1.addr, i1));
    const bool s2_used = uses_s2();
    vec4 s2 = s2_used ? vec4(load_f32(p.s2.addr, i2)) : vec4(0.0);
    vec4 s3 = USES_S3 ? vec4(load_f32(p.s3.addr, i3)) : vec4(0.0);
    update(w, g, s1, s2, s3);
    if (USES_S3) store_f32(p.s3.addr, i3, s3.x);
    if (s2_used) store_f32(p.s2.addr, i2, s2.x);
    store_f32(p.s1.addr, i1, s1.x);
    store_f32(p.w.addr, iw, w.x);
}

void main() {
    if (VEC4 != 0) {
        uint k = global_index(WG) * 4u;
        if (k >= p.n) return;
        if (p.n - k < 4u) {  // the last 1-3 elements
            for (; k < p.n; ++k) element(k, k, k, k, k);
            return;
        }
        const bool s2_used = uses_s2();
        V4 wr = V4(addr_f32(p.w.addr, k)), s1r = V4(addr_f32(p.s1.addr, k));
        V4 s2r = V4(addr_f32(p.s2.addr, k)), s3r = V4(addr_f32(p.s3.addr, k));
        vec4 w = wr.v, g = V4(addr_f32(p.g.addr, k)).v, s1 = s1r.v;
        vec4 s2 = s2_used ? s2r.v : vec4(0.0);
        vec4 s3 = USES_S3 ? s3r.v : vec4(0.0);
        update(w, g, s1, s2, s3);
        if (USES_S3) s3r.v = s3;
        if (s2_used) s2r.v = s2;
        s1r.v = s1;
        wr.v = w;
        return;
    }
    uint k = global_index(WG);
    if (k >= p.n) return;
    element(view_index(as_view(p.w), k), view_index(as_view(p.g), k), view_index(as_view(p.s1), k),
            view_index(as_view(p.s2), k), view_index(as_view(p.s3), k));
}

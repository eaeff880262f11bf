// y ← f(x) elementwise, for the 13 functions of vela::Unary; the function is
// a specialization constant (its enum value), so each gets its own pipeline.
// The functions themselves are in elementwise.glsl (shared with batch.comp).
#version 450
#include "common.glsl"
#include "elementwise.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint OP = 0;  // vela::Unary
layout(constant_id = 2) const uint VEC4 = 0;  // dense 16-byte aligned views: four elements per invocation
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    View x;
    View y;
    View unused;
    uint n;
    float p0, p1, p2, p3;  // linear_frac: (p0·x + p1) / (p2·x + p3)
} p;

void main() {
    uint k = global_index(WG) * (VEC4 != 0 ? 4u : 1u);
    if (k >= p.n) return;
    vec4 q = vec4(p.p0, p.p1, p.p2, p.p3);
    if (VEC4 != 0)
        unary_vec4(OP, p.x, p.y, k, p.n, q);
    else
        unary_element(OP, p.x, p.y, k, q);
}

// y ← f(x) elementwise, for the functions of vela::Unary (src/core/ops.def); the function is
// a specialization constant (its enum value), so each gets its own pipeline.
// The functions themselves are in the generated ops.glsl (shared with batch.comp and dense).
#version 450
#include "common.glsl"
#include "elementwise.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint OP = 0;  // vela::Unary
layout(constant_id = 2) const uint VEC4 = 0;  // dense 16-byte aligned views: four elements per invocation
layout(local_size_x_id = 0) in;

#include "element_push.glsl"

void main() {
    uint k = global_index(WG) * (VEC4 != 0 ? 4u : 1u);
    if (k >= p.n) return;
    vec4 q = vec4(p.a, p.b, p.c, p.d);  // the parameters p0..p3
    if (VEC4 != 0)
        unary_vec4(OP, p.x, p.y, k, p.n, q);
    else
        unary_element(OP, p.x, p.y, k, q);
}

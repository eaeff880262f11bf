// c ← a ∘ b elementwise for ∘ in mul, div, add, sub (vela::Binary, a
// specialization constant). The operation is in elementwise.glsl.
#version 450
#include "common.glsl"
#include "elementwise.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint OP = 0;  // vela::Binary: 0 mul, 1 div, 2 add, 3 sub
layout(constant_id = 2) const uint VEC4 = 0;  // dense 16-byte aligned views: four elements per invocation
layout(local_size_x_id = 0) in;

#include "element_push.glsl"

void main() {
    uint k = global_index(WG) * (VEC4 != 0 ? 4u : 1u);
    if (k >= p.n) return;
    if (VEC4 != 0)
        binary_vec4(OP, p.x, p.y, p.z, k, p.n);
    else
        binary_element(OP, p.x, p.y, p.z, k);
}

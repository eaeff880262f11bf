// delta ← da ∘ act′(x) elementwise: the backward step of an activation in one
// pass (vela::Act, a specialization constant; act′ from the activation a or
// the pre-activation z, as src/core/ops.def says). The work is in elementwise.glsl.
#version 450
#include "common.glsl"
#include "elementwise.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint OP = 0;    // vela::Act
layout(constant_id = 2) const uint VEC4 = 0;  // dense 16-byte aligned views: four elements per invocation
layout(local_size_x_id = 0) in;

// x: da, y: a or z, z: delta.
#include "element_push.glsl"

void main() {
    uint k = global_index(WG) * (VEC4 != 0 ? 4u : 1u);
    if (k >= p.n) return;
    if (VEC4 != 0)
        backward_vec4(OP, p.x, p.y, p.z, k, p.n);
    else
        backward_element(OP, p.x, p.y, p.z, k);
}

// c ← a ∘ b elementwise for ∘ a row of src/core/binary.def (vela::Binary, a
// specialization constant). The operation is in elementwise.glsl. A broadcast
// operand (an m×1, 1×n or 1×1 against c's m×n) arrives as a View with c's rows
// and a step of 0 along the dimension it spans once: never VEC4.
#version 450
#include "common.glsl"
#include "elementwise.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint OP = 0;  // vela::Binary (core/binary.def)
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

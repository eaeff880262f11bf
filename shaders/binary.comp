// c ← a ∘ b elementwise for ∘ in mul, div, add, sub (vela::Binary, a
// specialization constant).
#version 450
#include "common.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint OP = 0;  // vela::Binary: 0 mul, 1 div, 2 add, 3 sub
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    View a;
    View b;
    View c;
    uint n;
} p;

void main() {
    uint k = global_index(WG);
    if (k >= p.n) return;
    float x = ld(p.a, k), y = ld(p.b, k);
    float r = OP == 0 ? x * y : OP == 1 ? x / y : OP == 2 ? x + y : x - y;
    st(p.c, k, r);
}

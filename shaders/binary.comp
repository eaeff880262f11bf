// c ← a ∘ b elementwise for ∘ in mul, div, add, sub (vela::Binary, a
// specialization constant).
#version 450
#include "common.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint OP = 0;  // vela::Binary: 0 mul, 1 div, 2 add, 3 sub
layout(constant_id = 2) const uint VEC4 = 0;  // dense 16-byte aligned views: four elements per invocation
layout(local_size_x_id = 0) in;

layout(buffer_reference, buffer_reference_align = 16) buffer V4 { vec4 v; };

layout(push_constant) uniform Push {
    View a;
    View b;
    View c;
    uint n;
} p;

vec4 op(vec4 x, vec4 y) { return OP == 0 ? x * y : OP == 1 ? x / y : OP == 2 ? x + y : x - y; }

void main() {
    if (VEC4 != 0) {  // on CPU devices each buffer access is a per-lane loop: a vec4 costs one
        uint k = global_index(WG) * 4u;
        if (k >= p.n) return;
        if (p.n - k >= 4u) {
            V4(p.c.addr + uint64_t(k) * 4ul).v =
                op(V4(p.a.addr + uint64_t(k) * 4ul).v, V4(p.b.addr + uint64_t(k) * 4ul).v);
        } else {
            for (; k < p.n; ++k)
                store_f32(p.c.addr, k, op(vec4(load_f32(p.a.addr, k)), vec4(load_f32(p.b.addr, k))).x);
        }
        return;
    }
    uint k = global_index(WG);
    if (k >= p.n) return;
    st(p.c, k, op(vec4(ld(p.a, k)), vec4(ld(p.b, k))).x);
}

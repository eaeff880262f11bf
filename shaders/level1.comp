// Level-1 kernels on views of equal size (vectors or whole matrices):
// fill, scal, copy (f32 or u8 on either side), swap, axpby. One invocation
// per element, in column-major logical order, so x and y may have different
// shapes (a row and a column) and layouts (strided, transposed).
#version 450
#include "common.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint OP = 0;    // 0 fill, 1 scal, 2 copy, 3 swap, 4 axpby
layout(constant_id = 2) const uint X_U8 = 0;  // copy: x is uint8
layout(constant_id = 3) const uint Y_U8 = 0;  // copy: y is uint8
layout(constant_id = 4) const uint VEC4 = 0;  // fill, scal, axpby on dense 16-byte aligned views: 4 elements each
layout(local_size_x_id = 0) in;

layout(buffer_reference, buffer_reference_align = 16) buffer V4 { vec4 v; };

layout(push_constant) uniform Push {
    View x;
    View y;
    View unused;
    uint n;
    float alpha;
    float beta;
} p;

// Four consecutive elements per invocation: on CPU devices every buffer access
// is a per-lane loop, so one vec4 access instead of four halves the cost.
void main_vec4() {
    uint t = global_index(WG);
    uint k = t * 4u;
    if (k >= p.n) return;
    if (p.n - k >= 4u) {
        V4 y = V4(p.y.addr + uint64_t(k) * 4ul);
        if (OP == 0) {
            y.v = vec4(p.alpha);
        } else if (OP == 1) {
            y.v = p.alpha * y.v;
        } else {
            vec4 ax = p.alpha * V4(p.x.addr + uint64_t(k) * 4ul).v;
            y.v = p.beta == 0.0 ? ax : ax + p.beta * y.v;
        }
        return;
    }
    for (; k < p.n; ++k) {
        float v = OP == 0 ? p.alpha : OP == 1 ? p.alpha * load_f32(p.y.addr, k) : p.alpha * load_f32(p.x.addr, k);
        if (OP == 4 && p.beta != 0.0) v += p.beta * load_f32(p.y.addr, k);
        store_f32(p.y.addr, k, v);
    }
}

void main() {
    if (VEC4 != 0) {
        main_vec4();
        return;
    }
    uint k = global_index(WG);
    if (k >= p.n) return;
    uint iy = view_index(p.y, k);
    if (OP == 0) {
        store_f32(p.y.addr, iy, p.alpha);
    } else if (OP == 1) {
        store_f32(p.y.addr, iy, p.alpha * load_f32(p.y.addr, iy));
    } else if (OP == 2) {
        uint ix = view_index(p.x, k);
        float v = X_U8 != 0 ? load_u8(p.x.addr, ix) : load_f32(p.x.addr, ix);
        if (Y_U8 != 0)
            store_u8(p.y.addr, iy, v);
        else
            store_f32(p.y.addr, iy, v);
    } else if (OP == 3) {
        uint ix = view_index(p.x, k);
        float a = load_f32(p.x.addr, ix);
        store_f32(p.x.addr, ix, load_f32(p.y.addr, iy));
        store_f32(p.y.addr, iy, a);
    } else {
        float ax = p.alpha * load_f32(p.x.addr, view_index(p.x, k));
        // beta = 0 means y is not read (BLAS): NaN or garbage there does not propagate.
        store_f32(p.y.addr, iy, p.beta == 0.0 ? ax : ax + p.beta * load_f32(p.y.addr, iy));
    }
}

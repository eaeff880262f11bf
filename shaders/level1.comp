// Level-1 kernels on views of equal size (vectors or whole matrices):
// fill, scal, copy (f32 or u8 on either side), swap, axpby. One invocation
// per element, in column-major logical order, so x and y may have different
// shapes (a row and a column) and layouts (strided, transposed). The float
// work is in elementwise.glsl (shared with batch.comp); the uint8 copies are here.
#version 450
#include "common.glsl"
#include "elementwise.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint OP = 0;    // vela::vk::Level1 (L1_* in ops.glsl)
layout(constant_id = 2) const uint X_U8 = 0;  // copy: x is uint8
layout(constant_id = 3) const uint Y_U8 = 0;  // copy: y is uint8
layout(constant_id = 4) const uint VEC4 = 0;  // fill, scal, axpby on dense 16-byte aligned views: 4 elements each
layout(local_size_x_id = 0) in;

#include "element_push.glsl"

void main() {
    uint k = global_index(WG) * (VEC4 != 0 ? 4u : 1u);
    if (k >= p.n) return;
    if (VEC4 != 0) {
        level1_vec4(OP, p.x, p.y, k, p.n, p.a, p.b);
    } else if (OP == L1_COPY && (X_U8 != 0 || Y_U8 != 0)) {
        uint iy = view_index(p.y, k), ix = view_index(p.x, k);
        float v = X_U8 != 0 ? load_u8(p.x.addr, ix) : load_f32(p.x.addr, ix);
        if (Y_U8 != 0)
            store_u8(p.y.addr, iy, v);
        else
            store_f32(p.y.addr, iy, v);
    } else {
        level1_element(OP, p.x, p.y, k, p.a, p.b);
    }
}

// dst(:, j) ← scale · src(:, idx[j]): a batch of columns taken from a data set
// already on the device. src may be uint8 (MNIST pixels) or float; idx holds
// 1-based column numbers (float: core/ops.cpp requires it). An index out of range gives NaN
// columns rather than a read outside src.
#version 450
#include "common.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint SRC_U8 = 0;
layout(local_size_x_id = 0) in;

// x: src (rows = the src columns available, its logical cols); y: idx, an
// n-vector (element j at y.addr + j·y.rstep); z: dst, m×n (rows = m); a: scale.
#include "element_push.glsl"

void main() {
    uint k = global_index(WG);
    if (k >= p.n) return;
    uint j = k / p.z.rows;
    uint i = k - j * p.z.rows;
    float fc = load_f32(p.y.addr, j * p.y.rstep);
    float v = uintBitsToFloat(0x7fc00000u);
    if (fc >= 1.0 && fc <= float(p.x.rows)) {
        uint is = view_index2(p.x, i, uint(fc) - 1u);
        v = p.a * (SRC_U8 != 0 ? load_u8(p.x.addr, is) : load_f32(p.x.addr, is));
    }
    store_f32(p.z.addr, view_index2(p.z, i, j), v);
}

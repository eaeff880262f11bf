// dst(:, j) ← scale · src(:, idx[j]): a batch of columns taken from a data set
// already on the device. src may be uint8 (MNIST pixels) or float; idx holds
// 1-based column numbers, float or uint8. An index out of range gives NaN
// columns rather than a read outside src.
#version 450
#include "common.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint SRC_U8 = 0;
layout(constant_id = 2) const uint IDX_U8 = 0;
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    View src;  // rows = src columns available (its logical cols), steps as usual
    View idx;  // an n-vector: element j at idx.addr + j·idx.rstep
    View dst;  // m×n, rows = m
    uint n;
    float scale;
} p;

void main() {
    uint k = global_index(WG);
    if (k >= p.n) return;
    uint j = k / p.dst.rows;
    uint i = k - j * p.dst.rows;
    float fc = IDX_U8 != 0 ? load_u8(p.idx.addr, j * p.idx.rstep) : load_f32(p.idx.addr, j * p.idx.rstep);
    float v = uintBitsToFloat(0x7fc00000u);
    if (fc >= 1.0 && fc <= float(p.src.rows)) {
        uint is = view_index2(p.src, i, uint(fc) - 1u);
        v = p.scale * (SRC_U8 != 0 ? load_u8(p.src.addr, is) : load_f32(p.src.addr, is));
    }
    store_f32(p.dst.addr, view_index2(p.dst, i, j), v);
}

// dst(:, j) ← scale · src(:, idx[j]): a batch of columns taken from a data set
// already on the device. src may be uint8 (MNIST pixels) or float; idx holds
// 1-based column numbers (float: core/ops.cpp requires it). An index that is
// not an integer in range gives a NaN column rather than a read outside src,
// and its position goes to the call's status word (src/core/index_check.hpp).
#version 450
#include "common.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint SRC_U8 = 0;
layout(local_size_x_id = 0) in;

// x: src (rows = the src columns available, its logical cols); y: idx, an
// n-vector (element j at y.addr + j·y.rstep); z: dst, m×n (rows = m); a: scale.
// The layout of element_push.glsl (struct ElementPush), with its scalars b and
// c holding the address of the call's status word (the stream writes it).
layout(push_constant) uniform Push {
    View x;
    View y;
    View z;
    uint n;
    float a;
    Addr status;
    float d;
    uint code;
} p;

void main() {
    uint k = global_index(WG);
    if (k >= p.n) return;
    uint j = k / p.z.rows;
    uint i = k - j * p.z.rows;
    float fc = load_f32(p.y.addr, j * p.y.rstep);
    float v = uintBitsToFloat(0x7fc00000u);
    if (index_ok(fc, p.x.rows)) {
        uint is = view_index2(p.x, i, uint(fc) - 1u);
        v = p.a * (SRC_U8 != 0 ? load_u8(p.x.addr, is) : load_f32(p.x.addr, is));
    } else if (i == 0u) {
        report_bad_index(p.status, j);
    }
    store_f32(p.z.addr, view_index2(p.z, i, j), v);
}

// dst(:, j) ← scale · src(:, idx[j]): a batch of columns taken from a data set
// already on the device. src may be uint8 (MNIST pixels) or float; idx holds
// 1-based column numbers (float: core/ops.cpp requires it). An index that is
// not an integer in range gives a NaN column rather than a read outside src,
// and its position goes to the call's status word (src/core/index_check.hpp).
//
// VEC4: four rows of a column per invocation, where the host saw that dst is
// dense and 16-byte aligned with rows a multiple of 4, and src's columns are
// runs of rows (rstep 1) starting every multiple of 4 elements on an aligned
// address (16 bytes for float, 4 for uint8: one 32-bit word holds four
// pixels). On CPU implementations every buffer access is a loop over the
// lanes: this does a quarter of them, and checks each index a quarter as
// often. The same float operations per element, so the same bits.
#version 450
#include "common.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint SRC_U8 = 0;
layout(constant_id = 2) const uint VEC4 = 0;
layout(local_size_x_id = 0) in;

layout(buffer_reference, buffer_reference_align = 16) buffer V4 { vec4 v; };

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
    if (VEC4 != 0) {
        uint k = global_index(WG) * 4u;  // element k (column-major) of dst, and the next three
        if (k >= p.n) return;
        uint j = k / p.z.rows;
        uint i = k - j * p.z.rows;
        float fc = load_f32(p.y.addr, j * p.y.rstep);
        vec4 v = vec4(uintBitsToFloat(0x7fc00000u));
        if (index_ok(fc, p.x.rows)) {
            uint is = i + (uint(fc) - 1u) * p.x.cstep;
            if (SRC_U8 != 0) {
                uint w = U32(addr_add(p.x.addr, is)).v;
                v = p.a * vec4(float(w & 255u), float((w >> 8) & 255u), float((w >> 16) & 255u), float(w >> 24));
            } else {
                v = p.a * V4(addr_f32(p.x.addr, is)).v;
            }
        } else if (i == 0u) {
            report_bad_index(p.status, j);
        }
        V4(addr_f32(p.z.addr, k)).v = v;
        return;
    }
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

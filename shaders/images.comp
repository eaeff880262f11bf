// The layout moves around a convolution's GEMM, one invocation per element of
// the image matrix y ((C·P)×N; row c·P + p, column n) and of u ((P·N)×C; row
// n·P + p, column c). DIR 0 (to_images): y ← u + b(c), b optional. DIR 1
// (from_images): u ← y.
#version 450
#include "common.glsl"
#include "udiv.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint DIR = 0;
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    View u;
    View b;  // a C-vector, element c at addr + c·rstep; addr 0: no bias
    View y;
    uint ch, positions, n;
} p;

void main() {
    uint k = global_index(WG);
    uint rows = p.ch * p.positions;
    if (k >= rows * p.n) return;
    uint n = udiv(k, rows), row = k - n * rows;
    uint c = udiv(row, p.positions), pos = row - c * p.positions;
    uint ui = view_index2(p.u, n * p.positions + pos, c), yi = view_index2(p.y, row, n);
    if (DIR == 0u) {
        float v = load_f32(p.u.addr, ui);
        if (!addr_null(p.b.addr)) v += load_f32(p.b.addr, c * p.b.rstep);
        store_f32(p.y.addr, yi, v);
    } else {
        store_f32(p.u.addr, ui, load_f32(p.y.addr, yi));
    }
}

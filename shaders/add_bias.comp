// y(i, j) += b(i): a bias vector broadcast over the columns of y.
#version 450
#include "common.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    View b;  // an m-vector: element i at b.addr + i·b.rstep
    View y;  // m×n, rows = m (never the dense shortcut: i and j are needed)
    View unused;
    uint n;
} p;

void main() {
    uint k = global_index(WG);
    if (k >= p.n) return;
    uint j = k / p.y.rows;
    uint i = k - j * p.y.rows;
    uint iy = view_index2(p.y, i, j);
    store_f32(p.y.addr, iy, load_f32(p.y.addr, iy) + load_f32(p.b.addr, i * p.b.rstep));
}

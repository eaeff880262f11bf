// Inclusive prefix sums down each column (core/kernels.def, cumsum):
// y(i, j) = Σ_{i' ≤ i} x(i', j). A column is cut into chunks of `chunk` rows,
// so that no invocation loops more than `chunk` times (drivers may end a
// shader loop after 65,535 iterations; lavapipe does, silently):
//   SUMS = 1: invocation (c, j) writes part(c, j) ← the sum of chunk c of column j;
//   SUMS = 0: invocation (c, j) writes the running sums of its chunk, starting
//             from part(c − 1, j) (0 for c = 0).
// Between the two the host makes part the inclusive prefix sums of itself,
// with these two passes again (kernels_sequence.cpp); a column of at most
// `chunk` rows is one SUMS = 0 pass with one chunk. Each element is read
// before it is written by the same invocation: y may be x.
#version 450
#include "common.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint SUMS = 0;
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    View x;
    View y;
    View part;    // chunks × cols
    uint rows;
    uint cols;
    uint chunk;   // rows per invocation
    uint chunks;  // ceil(rows / chunk)
} p;

void main() {
    uint g = global_index(WG);
    if (g >= p.cols * p.chunks) return;
    uint j = g / p.chunks;
    uint c = g - j * p.chunks;
    uint begin = c * p.chunk;
    uint n = min(p.chunk, p.rows - begin);
    float s = 0.0;
    if (SUMS == 1) {
        for (uint k = 0; k < n; ++k) s += load_f32(p.x.addr, view_index2(p.x, begin + k, j));
        store_f32(p.part.addr, view_index2(p.part, c, j), s);
        return;
    }
    if (c > 0) s = load_f32(p.part.addr, view_index2(p.part, c - 1, j));
    for (uint k = 0; k < n; ++k) {
        s += load_f32(p.x.addr, view_index2(p.x, begin + k, j));
        store_f32(p.y.addr, view_index2(p.y, begin + k, j), s);
    }
}

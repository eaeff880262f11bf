// Causal softmax of attention scores and its backward (core/device.hpp):
// x is T×n, column j the query at position p = j mod T, row i the key at
// position i; rows i ≤ p take part and the others are 0, so no −Inf mask is
// ever stored.
//   forward (BACKWARD = 0): z = softmax over rows 0..p of x, 0 below
//   backward (BACKWARD = 1): z = y ∘ (dy − Σ_{i ≤ p} y ∘ dy), 0 below (x: y, y: dy)
// One invocation per column, as softmax.comp; the host allows T up to
// kColumnRows (4,096), so a loop runs at most 3·4,096 iterations (drivers may
// end a loop after 65,535). Each column is read before its element is written:
// z may be x (forward) or y (backward, z = dx may be dy).
#version 450
#include "common.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint BACKWARD = 0;
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    View x;
    View y;
    View z;
    uint rows;  // T
    uint cols;
} p;

void main() {
    uint j = global_index(WG);
    if (j >= p.cols) return;
    uint last = j % p.rows;
    if (BACKWARD == 0) {
        float m = uintBitsToFloat(0xff800000u);  // −inf
        for (uint i = 0; i <= last; ++i) m = max(m, load_f32(p.x.addr, view_index2(p.x, i, j)));
        float s = 0.0;
        for (uint i = 0; i <= last; ++i) s += exp(load_f32(p.x.addr, view_index2(p.x, i, j)) - m);
        float inv = 1.0 / s;
        for (uint i = 0; i < p.rows; ++i) {
            float v = i <= last ? exp(load_f32(p.x.addr, view_index2(p.x, i, j)) - m) * inv : 0.0;
            store_f32(p.z.addr, view_index2(p.z, i, j), v);
        }
        return;
    }
    float s = 0.0;
    for (uint i = 0; i <= last; ++i)
        s += load_f32(p.x.addr, view_index2(p.x, i, j)) * load_f32(p.y.addr, view_index2(p.y, i, j));
    for (uint i = 0; i < p.rows; ++i) {
        float v = 0.0;
        if (i <= last) v = load_f32(p.x.addr, view_index2(p.x, i, j)) * (load_f32(p.y.addr, view_index2(p.y, i, j)) - s);
        store_f32(p.z.addr, view_index2(p.z, i, j), v);
    }
}

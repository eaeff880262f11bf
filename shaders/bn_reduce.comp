// Per-feature sums for batch normalization, in passes whose loops are bounded
// by construction (drivers may end a shader loop after 65,535 iterations):
// level 0 sums `chunk` values of one feature per invocation, a later level
// `chunk` partials of the previous one; the host repeats levels until one
// pair per feature remains (see src/vulkan/kernels_regularize.cpp).
// Feature f is rows f·G .. f·G+G−1 of every column: its value e is at
// row f·G + e mod G, column e div G. Sums are compensated (Kahan).
//   BN_MEAN: s1 = Σ a                        (for the mean)
//   BN_VAR:  s1 = Σ (a − mean)²              (for the variance)
//   BN_GRAD: s1 = Σ a, s2 = Σ a·(b − mean)    (a = dy, b = x: for dβ and dγ)
#version 450
#include "common.glsl"
#include "modes.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint MODE = BN_MEAN;  // vk::Bn (src/vulkan/modes.def)
layout(constant_id = 2) const uint LEVEL0 = 1;
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    View a;
    View b;
    uvec2 in_part;    // later levels: feats × rows pairs
    uvec2 out_part;   // feats × out_chunks pairs
    uint mean_lo, mean_hi, mean_inc;
    uint group;       // G
    uint total;       // level 0: G·n values per feature; later levels: partials per feature
    uint feats;
    uint chunk;
    uint out_chunks;
} p;

// Kahan's step; every temporary is `precise`, or a compiler may fold (t − s) − y to 0.
void add(inout float s, inout float comp, float v) {
    precise float y = v - comp;
    precise float t = s + y;
    precise float lost = (t - s) - y;
    comp = lost;
    s = t;
}

void main() {
    uint g = global_index(WG);
    if (g >= p.feats * p.out_chunks) return;
    uint f = g / p.out_chunks;
    uint c = g - f * p.out_chunks;
    uint begin = c * p.chunk;
    uint end = begin + min(p.chunk, p.total - begin);
    float mu = 0.0;
    if (LEVEL0 != 0 && MODE != BN_MEAN) mu = load_f32(uvec2(p.mean_lo, p.mean_hi), f * p.mean_inc);
    float s1 = 0.0, c1 = 0.0, s2 = 0.0, c2 = 0.0;
    for (uint e = begin; e < end; ++e) {
        if (LEVEL0 != 0) {
            uint col = e / p.group;
            uint row = f * p.group + (e - col * p.group);
            float v = load_f32(p.a.addr, view_index2(p.a, row, col));
            if (MODE == BN_MEAN) {
                add(s1, c1, v);
            } else if (MODE == BN_VAR) {
                precise float d = v - mu;
                add(s1, c1, d * d);
            } else {
                float xv = load_f32(p.b.addr, view_index2(p.b, row, col));
                precise float d = xv - mu;
                add(s1, c1, v);
                add(s2, c2, v * d);
            }
        } else {
            uint at = (f * p.total + e) * 2u;
            add(s1, c1, load_f32(p.in_part, at));
            add(s2, c2, load_f32(p.in_part, at + 1u));
        }
    }
    uint o = (f * p.out_chunks + c) * 2u;
    store_f32(p.out_part, o, s1);
    store_f32(p.out_part, o + 1u, s2);
}

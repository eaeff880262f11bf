// Batch normalization's elementwise passes, one invocation per element of
// the m×n output (feature f = row div G), with the per-feature coefficients
// of bn_finish.comp (coef: four runs of feats floats a, b, c, mean):
//   BN_APPLY_FORWARD:  y ← a(f)·(x − mean(f)) + b(f)       (a = γ·inv, b = β)
//   BN_APPLY_BACKWARD: dx ← a(f)·dy + c(f)·(x − mean(f)) + b(f)
// a: x (forward) or dy (backward); b: x (backward); y: the output.
#version 450
#include "common.glsl"
#include "modes.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint MODE = BN_APPLY_FORWARD;  // vk::BnApply (src/vulkan/modes.def)
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    View a;
    View b;
    View y;
    uvec2 coef;
    uint n, rows, group, feats;
} p;

void main() {
    uint k = global_index(WG);
    if (k >= p.n) return;
    uint j = k / p.rows;
    uint i = k - j * p.rows;
    uint f = i / p.group;
    float av = load_f32(p.a.addr, view_index2(p.a, i, j));
    float ca = load_f32(p.coef, f), cb = load_f32(p.coef, p.feats + f), mu = load_f32(p.coef, 3u * p.feats + f);
    float v;
    if (MODE == BN_APPLY_FORWARD) {
        v = ca * (av - mu) + cb;
    } else {
        float xv = load_f32(p.b.addr, view_index2(p.b, i, j));
        v = ca * av + load_f32(p.coef, 2u * p.feats + f) * (xv - mu) + cb;
    }
    store_f32(p.y.addr, view_index2(p.y, i, j), v);
}

// The per-feature results of batch normalization, one invocation per feature.
// part holds the pair (s1, s2) of each feature from bn_reduce.comp; coef is
// four runs of feats floats (a, b, c, mean) that bn_apply.comp reads.
//   BN_MEAN:    out1(f) ← s1/N (the mean)
//   BN_VAR:     out1(f) ← s1/N (the variance)
//   BN_GRAD:    out1(f) ← s1 (dβ), out2(f) ← s2·inv (dγ), inv = 1/√(var + eps), and
//               when coef is given the coefficients of dx = a·dy + c·(x − mean) + b:
//               a = γ·inv, b = −a·dβ/N, c = −a·inv²·s2/N
//   BN_FORWARD: the coefficients of y = a·(x − mean) + b: a = γ·inv, b = β (no part)
#version 450
#include "common.glsl"
#include "modes.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint MODE = BN_MEAN;  // vk::Bn (src/vulkan/modes.def)
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    uvec2 part;
    uvec2 coef;
    uint out1_lo, out1_hi, out1_inc;
    uint out2_lo, out2_hi, out2_inc;
    uint var_lo, var_hi, var_inc;
    uint gamma_lo, gamma_hi, gamma_inc;
    uint mean_lo, mean_hi, mean_inc;
    uint beta_lo, beta_hi, beta_inc;
    uint feats;
    float count;  // N = G·n
    float eps;
} p;

float vec_ld(uint lo, uint hi, uint inc, uint f) { return load_f32(uvec2(lo, hi), f * inc); }

void main() {
    uint f = global_index(WG);
    if (f >= p.feats) return;
    if (MODE == BN_MEAN || MODE == BN_VAR) {
        store_f32(uvec2(p.out1_lo, p.out1_hi), f * p.out1_inc, load_f32(p.part, 2u * f) / p.count);
        return;
    }
    float var = vec_ld(p.var_lo, p.var_hi, p.var_inc, f);
    float inv = 1.0 / sqrt(var + p.eps);
    float a = vec_ld(p.gamma_lo, p.gamma_hi, p.gamma_inc, f) * inv;
    float mu = vec_ld(p.mean_lo, p.mean_hi, p.mean_inc, f);
    if (MODE == BN_FORWARD) {
        store_f32(p.coef, f, a);
        store_f32(p.coef, p.feats + f, vec_ld(p.beta_lo, p.beta_hi, p.beta_inc, f));
        store_f32(p.coef, 3u * p.feats + f, mu);
        return;
    }
    float s1 = load_f32(p.part, 2u * f);
    float s2 = load_f32(p.part, 2u * f + 1u);
    store_f32(uvec2(p.out1_lo, p.out1_hi), f * p.out1_inc, s1);
    store_f32(uvec2(p.out2_lo, p.out2_hi), f * p.out2_inc, s2 * inv);
    if (addr_null(p.coef)) return;
    store_f32(p.coef, f, a);
    store_f32(p.coef, p.feats + f, -a * s1 / p.count);
    store_f32(p.coef, 2u * p.feats + f, -a * inv * inv * s2 / p.count);
    store_f32(p.coef, 3u * p.feats + f, mu);
}

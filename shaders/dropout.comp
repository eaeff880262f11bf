// Inverted dropout in one pass: mask(k) ← (u(k) ≥ p ? scale : 0) and
// y(k) ← x(k)·mask(k), u(k) = (w >> 8)·2^-24 for w word k mod 4 of the Philox
// draw of counter {k div 4, 0, step} and key seed: bit-identical to the CPU device (src/cpu/regularize.cpp), since
// the draw is integer arithmetic, u an exact scaling and x·mask one rounded
// product. y may be x (in place).
#version 450
#include "common.glsl"
#include "philox.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    View x;
    View mask;
    View y;
    uint n;
    uint seed_lo, seed_hi;
    uint step_lo, step_hi;
    float p;
    float scale;
} p;

// One invocation per draw: elements 4g .. 4g+3 (those below n).
void main() {
    uint g = global_index(WG);
    if (g >= (p.n + 3u) >> 2) return;
    uvec4 w = philox4x32_10(uvec4(g, 0u, p.step_lo, p.step_hi), uvec2(p.seed_lo, p.seed_hi));
    for (uint r = 0u; r < 4u; ++r) {
        uint k = 4u * g + r;
        if (k >= p.n) break;
        uint word = r == 0u ? w.x : r == 1u ? w.y : r == 2u ? w.z : w.w;
        float u = float(word >> 8) * uintBitsToFloat(0x33800000u);  // 2^-24
        float m = u >= p.p ? p.scale : 0.0;
        precise float v = ld(p.x, k) * m;
        st(p.mask, k, m);
        st(p.y, k, v);
    }
}

// rand and randn: element k of the view (column-major logical order) gets
// philox_uniform/philox_normal(seed, k) from philox.glsl, bit-identical to
// the CPU device (core/philox.hpp) for the same seed.
#version 450
#include "common.glsl"
#include "philox.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint NORMAL = 0;
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    View x;
    uint seed_lo;
    uint seed_hi;
    uint n;
} p;

void main() {
    uint k = global_index(WG);
    if (k >= p.n) return;
    uvec2 seed = uvec2(p.seed_lo, p.seed_hi);
    uvec2 idx = uvec2(k, 0u);
    st(p.x, k, NORMAL != 0 ? philox_normal(seed, idx) : philox_uniform(seed, idx));
}

// gather_cols.comp's four-row path (dst(:, j) ← scale · src(:, idx[j]), the
// same float operations and the same check of each index) with its operands
// read and written through the texel views of their memory blocks
// (Caps::texel_views, kernel.hpp's bindings; see optim_tex.comp for why):
// idx at binding 0 (R32), src at 1 (float: R32G32B32A32) or 2 (uint8:
// R8G8B8A8_UINT, four pixels a texel), dst at 5 (R32G32B32A32). The host runs
// it where gather_cols.comp would take its VEC4 path and every operand lies
// in a block with texel views, src's and dst's first element on a texel's
// start. The push block is ElementPush with each view's first word its first
// element's index in its block (floats; bytes for a uint8 src).
#version 450
#include "common.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint SRC_U8 = 0;
layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0) uniform samplerBuffer idx1;
layout(set = 0, binding = 1) uniform samplerBuffer srcf;
layout(set = 0, binding = 2) uniform usamplerBuffer src8;
layout(set = 0, binding = 5, rgba32f) uniform writeonly imageBuffer dst4;

struct TexView {
    uint at, unused0, rows, rstep, cstep, pad;
};
layout(push_constant) uniform Push {
    TexView x;  // src (rows = the src columns available)
    TexView y;  // idx
    TexView z;  // dst (rows = m)
    uint n;
    float a;
    Addr status;
    float d;
    uint code;
} p;

void main() {
    uint k = global_index(WG) * 4u;  // element k (column-major) of dst, and the next three
    if (k >= p.n) return;
    uint j = k / p.z.rows;
    uint i = k - j * p.z.rows;
    float fc = texelFetch(idx1, int(p.y.at + j * p.y.rstep)).x;
    vec4 v = vec4(uintBitsToFloat(0x7fc00000u));
    if (index_ok(fc, p.x.rows)) {
        uint is = p.x.at + i + (uint(fc) - 1u) * p.x.cstep;
        if (SRC_U8 != 0) {
            uvec4 w = texelFetch(src8, int(is >> 2));
            v = p.a * vec4(float(w.x), float(w.y), float(w.z), float(w.w));
        } else {
            v = p.a * texelFetch(srcf, int(is >> 2));
        }
    } else if (i == 0u) {
        report_bad_index(p.status, j);
    }
    imageStore(dst4, int((p.z.at + k) >> 2), v);
}

// cols(r, n·P + oy·ow + ox) ← x((c·h + iy)·w + ix, n), with r = (c·kh + ky)·kw + kx,
// iy = oy·sh − ph + ky, ix = ox·sw − pw + kx, and 0 where (iy, ix) is padding.
// One invocation per four rows r0 .. r0 + 3 of one column q of cols (r the
// fastest index: cols is column-major, so the stores are one 16-byte run,
// store4 in conv.glsl, and neighbouring invocations write neighbouring runs);
// (c, ky, kx) of the next row are counted on, not divided out again
// (udiv.glsl); a loop of four steps.
#version 450
#include "common.glsl"
#include "udiv.glsl"
#include "conv.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(local_size_x_id = 0) in;

void main() {
    uint k = global_index(WG);
    uint oh = out_h(), ow = out_w();
    uint P = oh * ow, Q = P * p.n;
    uint R = p.ch * p.kh * p.kw, R4 = (R + 3u) / 4u;
    if (Q == 0u || k >= R4 * Q) return;
    uint q = udiv(k, R4), r0 = (k - q * R4) * 4u;
    uint n = udiv(q, P), pos = q - n * P;
    uint oy = udiv(pos, ow), ox = pos - oy * ow;
    uint t = udiv(r0, p.kw), kx = r0 - t * p.kw;
    uint c = udiv(t, p.kh), ky = t - c * p.kh;
    vec4 v = vec4(0.0);
    for (uint i = 0u; i < 4u; ++i) {
        int iy = int(oy * p.sh + ky) - int(p.ph), ix = int(ox * p.sw + kx) - int(p.pw);
        if (r0 + i < R && iy >= 0 && iy < int(p.h) && ix >= 0 && ix < int(p.w))
            v[i] = load_f32(p.a.addr, view_index2(p.a, (c * p.h + uint(iy)) * p.w + uint(ix), n));
        if (++kx == p.kw) {
            kx = 0u;
            if (++ky == p.kh) { ky = 0u; ++c; }
        }
    }
    store4(p.c, view_index2(p.c, r0, q), r0, R, v);
}

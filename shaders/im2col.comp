// cols(r, n·P + oy·ow + ox) ← x((c·h + iy)·w + ix, n), with r = (c·kh + ky)·kw + kx,
// iy = oy·sh − ph + ky, ix = ox·sw − pw + kx, and 0 where (iy, ix) is padding.
// One invocation per element of cols: no loop.
#version 450
#include "common.glsl"
#include "conv.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(local_size_x_id = 0) in;

void main() {
    uint k = global_index(WG);
    uint oh = out_h(), ow = out_w();
    uint P = oh * ow, Q = P * p.n;
    uint R = p.ch * p.kh * p.kw;
    if (Q == 0u || k >= R * Q) return;
    uint r = k / Q, q = k - r * Q;
    uint n = q / P, pos = q - n * P;
    uint oy = pos / ow, ox = pos - oy * ow;
    uint kx = r % p.kw, t = r / p.kw;
    uint ky = t % p.kh, c = t / p.kh;
    int iy = int(oy * p.sh + ky) - int(p.ph), ix = int(ox * p.sw + kx) - int(p.pw);
    float v = 0.0;
    if (iy >= 0 && iy < int(p.h) && ix >= 0 && ix < int(p.w))
        v = load_f32(p.a.addr, view_index2(p.a, (c * p.h + uint(iy)) * p.w + uint(ix), n));
    store_f32(p.c.addr, view_index2(p.c, r, q), v);
}

// cols(r, n·P + oy·ow + ox) ← x((c·h + iy)·w + ix, n), with r = (c·kh + ky)·kw + kx,
// iy = oy·sh − ph + ky, ix = ox·sw − pw + kx, and 0 where (iy, ix) is padding.
// One invocation per four rows r0 .. r0 + 3 of one column q of cols (r the
// fastest index: cols is column-major, so an invocation's stores are one
// 16-byte run, written as a vec4 where cols is dense and aligned for it, and
// neighbouring invocations write neighbouring runs). On CPU drivers
// each buffer access is a per-lane step and each integer division a divide
// per lane (udiv.glsl): four elements share one store and one set of divisions
// (a loop of four steps).
#version 450
#include "common.glsl"
#include "udiv.glsl"
#include "conv.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(local_size_x_id = 0) in;

layout(buffer_reference, buffer_reference_align = 16) buffer V4 { vec4 v; };

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
    for (uint i = 0u; i < 4u; ++i) {  // rows r0 + i: (c, ky, kx) counted on, no division
        int iy = int(oy * p.sh + ky) - int(p.ph), ix = int(ox * p.sw + kx) - int(p.pw);
        if (r0 + i < R && iy >= 0 && iy < int(p.h) && ix >= 0 && ix < int(p.w))
            v[i] = load_f32(p.a.addr, view_index2(p.a, (c * p.h + uint(iy)) * p.w + uint(ix), n));
        if (++kx == p.kw) {
            kx = 0u;
            if (++ky == p.kh) { ky = 0u; ++c; }
        }
    }
    uint at = view_index2(p.c, r0, q);
    if (p.c.rstep == 1u && R - r0 >= 4u && ((p.c.addr.x >> 2) + at) % 4u == 0u) {
        V4(addr_f32(p.c.addr, at)).v = v;
    } else {
        for (uint i = 0u; i < 4u && r0 + i < R; ++i) store_f32(p.c.addr, at + i * p.c.rstep, v[i]);
    }
}

// x(pixel, n) ← x(pixel, n) + Σ cols(r, q) over the window positions that
// cover the pixel: the adjoint of im2col. One invocation per pixel, which
// gathers (no atomics, the same order every run), over this pass's block of
// covering positions (conv.glsl).
#version 450
#include "common.glsl"
#include "udiv.glsl"
#include "conv.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(local_size_x_id = 0) in;

void main() {
    uint k = global_index(WG);
    uint hw = p.h * p.w, pix = p.ch * hw;
    if (k >= pix * p.n) return;
    uint n = udiv(k, pix), e = k - n * pix;
    uint c = udiv(e, hw), yx = e - c * hw;
    uint iy = udiv(yx, p.w), ix = yx - iy * p.w;
    uint oh = out_h(), ow = out_w();
    uint ylo, yhi, xlo, xhi;
    holding(iy, p.kh, p.sh, p.ph, oh, ylo, yhi);
    holding(ix, p.kw, p.sw, p.pw, ow, xlo, xhi);
    block(ylo, yhi, p.y0, p.by);
    block(xlo, xhi, p.x0, p.bx);
    uint P = oh * ow;
    float s = 0.0;
    for (uint oy = ylo; oy < yhi; ++oy) {
        uint ky = iy + p.ph - oy * p.sh;
        for (uint ox = xlo; ox < xhi; ++ox) {
            uint kx = ix + p.pw - ox * p.sw;
            uint r = (c * p.kh + ky) * p.kw + kx;
            s += load_f32(p.a.addr, view_index2(p.a, r, n * P + oy * ow + ox));
        }
    }
    uint at = view_index2(p.c, e, n);
    store_f32(p.c.addr, at, load_f32(p.c.addr, at) + s);
}

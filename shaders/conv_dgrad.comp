// conv_dgrad: dx(pixel, n) ← Σ_o Σ over the outputs (oy, ox) whose window
// holds the pixel of w(o, r)·dz(o·P + oy·ow + ox, n), r the pixel's offset in
// that window: the input gradient of a convolution without im2col's windows.
// One invocation per dx element, gathering (no atomics, the same order every
// run: o, then oy, then ox). Bounded loops (conv.glsl): a pass walks output
// channels [o0, o0 + bo) and a block of by × bx covering outputs, at most
// 4,096 sums; the host records the passes (src/vulkan/kernels_conv.cpp), the
// first stores, the others add. by, bx and bo are worked out here as there.
#version 450
#include "common.glsl"
#include "udiv.glsl"
#define VELA_CONV_OWN_PUSH 1
#include "conv.glsl"

// Mirrors struct DgradPush in src/vulkan/kernels_conv.cpp (128 bytes).
layout(push_constant) uniform Push {
    View a;  // dz: out·oh·ow × n
    View b;  // w: out × ch·kh·kw
    View c;  // dx: ch·h·w × n
    uint ch, h, w, kh, kw, sh, sw, ph, pw, n;
    uint outs;        // output channels (w's rows)
    uint o0, y0, x0;  // this pass: channels from o0, covering outputs from (y0, x0)
} p;

layout(constant_id = 0) const uint WG = 256;
layout(local_size_x_id = 0) in;

void main() {
    uint k = global_index(WG);
    uint hw = p.h * p.w, pix = p.ch * hw;
    if (k >= pix * p.n) return;
    uint n = udiv(k, pix), e = k - n * pix;
    uint c = udiv(e, hw), yx = e - c * hw;
    uint iy = udiv(yx, p.w), ix = yx - iy * p.w;
    uint oh = udiv(p.h + 2u * p.ph - p.kh, p.sh) + 1u, ow = udiv(p.w + 2u * p.pw - p.kw, p.sw) + 1u;
    uint ey = udiv(p.kh + p.sh - 1u, p.sh), ex = udiv(p.kw + p.sw - 1u, p.sw);
    uint bx = min(ex, 4096u), by = min(ey, max(1u, udiv(4096u, bx))), bo = max(1u, udiv(4096u, by * bx));
    uint ylo, yhi, xlo, xhi;
    holding(iy, p.kh, p.sh, p.ph, oh, ylo, yhi);
    holding(ix, p.kw, p.sw, p.pw, ow, xlo, xhi);
    block(ylo, yhi, p.y0, by);
    block(xlo, xhi, p.x0, bx);
    uint P = oh * ow, o1 = min(p.o0 + bo, p.outs);
    float s = 0.0;
    for (uint o = p.o0; o < o1; ++o) {
        for (uint oy = ylo; oy < yhi; ++oy) {
            uint ky = iy + p.ph - oy * p.sh;
            for (uint ox = xlo; ox < xhi; ++ox) {
                uint kx = ix + p.pw - ox * p.sw;
                uint r = (c * p.kh + ky) * p.kw + kx;
                s += load_f32(p.b.addr, view_index2(p.b, o, r)) *
                     load_f32(p.a.addr, view_index2(p.a, o * P + oy * ow + ox, n));
            }
        }
    }
    uint at = view_index2(p.c, e, n);
    if (p.o0 == 0u && p.y0 == 0u && p.x0 == 0u) store_f32(p.c.addr, at, s);
    else store_f32(p.c.addr, at, load_f32(p.c.addr, at) + s);
}

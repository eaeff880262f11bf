// Pooling backward, one invocation per pixel (c·h·w + iy·w + ix, n), which
// gathers from the outputs whose windows hold it (no atomics), this pass's
// block of them (conv.glsl); later passes add to what the earlier ones wrote.
// POOL_MAX: dx ← Σ dy(o) over those o whose idx(o) names this pixel.
// POOL_AVERAGE: dx ← Σ dy(o) / (kh·kw).
#version 450
#include "common.glsl"
#include "modes.glsl"
#include "udiv.glsl"
#include "conv.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint MODE = POOL_MAX;  // vk::Pooling (src/vulkan/modes.def)
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
    float me = float(e + 1u), s = 0.0;
    for (uint oy = ylo; oy < yhi; ++oy) {
        for (uint ox = xlo; ox < xhi; ++ox) {
            uint o = c * P + oy * ow + ox;
            float d = load_f32(p.a.addr, view_index2(p.a, o, n));
            if (MODE == POOL_MAX) {
                if (load_f32(p.b.addr, view_index2(p.b, o, n)) == me) s += d;
            } else {
                s += d;
            }
        }
    }
    if (MODE == POOL_AVERAGE) s *= 1.0 / float(p.kh * p.kw);
    uint at = view_index2(p.c, e, n);
    store_f32(p.c.addr, at, first_pass() ? s : load_f32(p.c.addr, at) + s);
}

// Pooling backward, one invocation per pixel (c·h·w + iy·w + ix, n), which
// gathers from the outputs whose windows hold it (no atomics). MODE 0 (max):
// dx ← Σ dy(o) over those o whose idx(o) names this pixel. MODE 1 (average):
// dx ← Σ dy(o) / (kh·kw). The loops are bounded (conv.glsl).
#version 450
#include "common.glsl"
#include "conv.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint MODE = 0;
layout(local_size_x_id = 0) in;

void main() {
    uint k = global_index(WG);
    uint hw = p.h * p.w, pix = p.ch * hw;
    if (k >= pix * p.n) return;
    uint n = k / pix, e = k - n * pix;
    uint c = e / hw, yx = e - c * hw;
    uint iy = yx / p.w, ix = yx - iy * p.w;
    uint ylo, yhi, xlo, xhi;
    holding(iy, p.kh, p.sh, p.ph, p.oh, ylo, yhi);
    holding(ix, p.kw, p.sw, p.pw, p.ow, xlo, xhi);
    uint P = p.oh * p.ow;
    float me = float(e + 1u), s = 0.0;
    BOUNDED_FOR(oy, ylo, yhi) {
        BOUNDED_FOR(ox, xlo, xhi) {
            uint o = c * P + oy * p.ow + ox;
            float d = load_f32(p.a.addr, view_index2(p.a, o, n));
            if (MODE == 0u) {
                if (load_f32(p.b.addr, view_index2(p.b, o, n)) == me) s += d;
            } else {
                s += d;
            }
        }
    }
    if (MODE != 0u) s *= 1.0 / float(p.kh * p.kw);
    store_f32(p.c.addr, view_index2(p.c, e, n), s);
}

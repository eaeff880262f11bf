// Pooling forward, one invocation per output (c·P + oy·ow + ox, n) over its
// window clipped to the image. MODE 0 (max): y ← the first maximum, idx ← its
// 1-based row in x's column. MODE 1 (average): y ← the window's sum / (kh·kw).
#version 450
#include "common.glsl"
#include "conv.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint MODE = 0;
layout(local_size_x_id = 0) in;

void main() {
    uint k = global_index(WG);
    uint P = p.oh * p.ow, outs = p.ch * P;
    if (k >= outs * p.n) return;
    uint n = k / outs, o = k - n * outs;
    uint c = o / P, pos = o - c * P;
    uint oy = pos / p.ow, ox = pos - oy * p.ow;
    uint ylo, yhi, xlo, xhi;
    window(oy, p.kh, p.sh, p.ph, p.h, ylo, yhi);
    window(ox, p.kw, p.sw, p.pw, p.w, xlo, xhi);
    uint base = c * p.h * p.w;
    if (MODE == 0u) {
        uint best = base + ylo * p.w + xlo;
        float bv = load_f32(p.a.addr, view_index2(p.a, best, n));
        BOUNDED_FOR(iy, ylo, yhi) {
            BOUNDED_FOR(ix, xlo, xhi) {
                uint e = base + iy * p.w + ix;
                float v = load_f32(p.a.addr, view_index2(p.a, e, n));
                if (v > bv) {
                    bv = v;
                    best = e;
                }
            }
        }
        store_f32(p.c.addr, view_index2(p.c, o, n), bv);
        store_f32(p.b.addr, view_index2(p.b, o, n), float(best + 1u));
    } else {
        float s = 0.0;
        BOUNDED_FOR(iy, ylo, yhi) {
            BOUNDED_FOR(ix, xlo, xhi) { s += load_f32(p.a.addr, view_index2(p.a, base + iy * p.w + ix, n)); }
        }
        store_f32(p.c.addr, view_index2(p.c, o, n), s * (1.0 / float(p.kh * p.kw)));
    }
}

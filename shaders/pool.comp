// Pooling forward, one invocation per output (c·P + oy·ow + ox, n), over this
// pass's block of its window clipped to the image (conv.glsl); later passes
// carry on from what the earlier ones left in y (and idx). POOL_MAX: y ←
// the largest value (NaN loses to any number; the smallest row on ties, so
// the result does not depend on the blocks), idx ← its 1-based row in x's
// column; a window of only NaN gives NaN at its first pixel (0 and −inf for
// a window without a pixel). POOL_AVERAGE: y ← Σ / (kh·kw).
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
    uint oh = out_h(), ow = out_w();
    uint P = oh * ow, outs = p.ch * P;
    if (k >= outs * p.n) return;
    uint n = udiv(k, outs), o = k - n * outs;
    uint c = udiv(o, P), pos = o - c * P;
    uint oy = udiv(pos, ow), ox = pos - oy * ow;
    uint ylo, yhi, xlo, xhi;
    window(oy, p.kh, p.sh, p.ph, p.h, p.y0, p.by, ylo, yhi);
    window(ox, p.kw, p.sw, p.pw, p.w, p.x0, p.bx, xlo, xhi);
    uint base = c * p.h * p.w;
    uint yo = view_index2(p.c, o, n);
    if (MODE == POOL_MAX) {
        uint io = view_index2(p.b, o, n);
        float bv = uintBitsToFloat(0xff800000u);  // −inf
        uint best = 0xffffffffu;                  // none yet; as a 1-based row: 0
        if (!first_pass()) {
            bv = load_f32(p.c.addr, yo);
            best = uint(load_f32(p.b.addr, io)) - 1u;
        }
        for (uint iy = ylo; iy < yhi; ++iy) {
            for (uint ix = xlo; ix < xhi; ++ix) {
                uint e = base + iy * p.w + ix;
                float v = load_f32(p.a.addr, view_index2(p.a, e, n));
                bool v_nan = nan_bits(v), b_nan = nan_bits(bv);
                bool take = best == 0xffffffffu || (b_nan ? (!v_nan || e < best) : (!v_nan && (v > bv || (v == bv && e < best))));
                if (take) {
                    bv = v;
                    best = e;
                }
            }
        }
        store_f32(p.c.addr, yo, bv);
        store_f32(p.b.addr, io, float(best + 1u));
    } else {
        float s = 0.0;
        for (uint iy = ylo; iy < yhi; ++iy)
            for (uint ix = xlo; ix < xhi; ++ix) s += load_f32(p.a.addr, view_index2(p.a, base + iy * p.w + ix, n));
        s *= 1.0 / float(p.kh * p.kw);
        store_f32(p.c.addr, yo, first_pass() ? s : load_f32(p.c.addr, yo) + s);
    }
}

// Max pooling backward where the windows do not overlap (stride ≥ window on
// both axes, so each pixel lies in at most one window): one invocation per
// output o (c·P + oy·ow + ox, n) writes every pixel e of this pass's block of
// its window clipped to the image (conv.glsl): dx(e) ← dy(o) where idx(o)
// names e, else 0. The same sums as pool_backward's gather (a pixel has at
// most one term), with two loads per window instead of two per pixel. No two
// invocations write one element; pixels in no window are left to the host
// (a fill before, where there are any). At most by + by·bx loop steps.
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
    float d = load_f32(p.a.addr, view_index2(p.a, o, n));
    float at = load_f32(p.b.addr, view_index2(p.b, o, n));  // 1-based row of the maximum
    uint base = c * p.h * p.w;
    for (uint iy = ylo; iy < yhi; ++iy) {
        for (uint ix = xlo; ix < xhi; ++ix) {
            uint e = base + iy * p.w + ix;
            store_f32(p.c.addr, view_index2(p.c, e, n), float(e + 1u) == at ? d : 0.0);
        }
    }
}

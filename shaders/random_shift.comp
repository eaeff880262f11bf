// y(:, j) ← the images of column j of x moved by (dr, dc) pixels, zero fill:
// dr = w0 mod (2s+1) − s, dc = w1 mod (2s+1) − s from the Philox draw of
// counter {j, 0, step} and key seed, as on the CPU device. One invocation
// per element of y: pixel (c, r, q) of column j reads (c, r − dr, q − dc).
#version 450
#include "common.glsl"
#include "philox.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    View x;
    View y;
    uint n;       // elements of y
    uint rows;    // channels·height·width
    uint height, width, shift;
    uint seed_lo, seed_hi;
    uint step_lo, step_hi;
} p;

void main() {
    uint k = global_index(WG);
    if (k >= p.n) return;
    uint j = k / p.rows;
    uint i = k - j * p.rows;
    uint plane = p.height * p.width;
    uint c = i / plane;
    uint rest = i - c * plane;
    int r = int(rest / p.width);
    int q = int(rest - uint(r) * p.width);
    uvec4 w = philox4x32_10(uvec4(j, 0u, p.step_lo, p.step_hi), uvec2(p.seed_lo, p.seed_hi));
    uint span = 2u * p.shift + 1u;
    int dr = int(w.x % span) - int(p.shift);
    int dc = int(w.y % span) - int(p.shift);
    int sr = r - dr, sq = q - dc;
    float v = 0.0;
    if (sr >= 0 && sr < int(p.height) && sq >= 0 && sq < int(p.width))
        v = load_f32(p.x.addr, view_index2(p.x, c * plane + uint(sr) * p.width + uint(sq), j));
    store_f32(p.y.addr, view_index2(p.y, i, j), v);
}

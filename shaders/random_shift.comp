// y(:, j) ← the images of column j of x moved by (dr, dc) pixels, zero fill:
// dr = w0 mod (2s+1) − s, dc = w1 mod (2s+1) − s from the Philox draw of
// counter {j, 0, step} and key seed, as on the CPU device. One invocation per
// run of up to SPAN pixels of one image row (so a column's draw is made once
// per run, and the loop stays bounded): pixel (c, r, q) of column j reads
// (c, r − dr, q − dc).
#version 450
#include "common.glsl"
#include "philox.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(local_size_x_id = 0) in;

const uint SPAN = 1024u;

layout(push_constant) uniform Push {
    View x;
    View y;
    uint n;       // invocations: columns · channels·height · runs per row
    uint rows;    // channels·height·width
    uint height, width, shift;
    uint seed_lo, seed_hi;
    uint step_lo, step_hi;
} p;

void main() {
    uint g = global_index(WG);
    if (g >= p.n) return;
    uint runs = (p.width + SPAN - 1u) / SPAN;
    uint lines = (p.rows / p.width) * runs;  // runs per column
    uint j = g / lines;
    uint rest = g - j * lines;
    uint line = rest / runs;                 // channel·height + image row
    uint q0 = (rest - line * runs) * SPAN;
    uint c = line / p.height;
    int r = int(line - c * p.height);
    uint plane = p.height * p.width;
    uvec4 w = philox4x32_10(uvec4(j, 0u, p.step_lo, p.step_hi), uvec2(p.seed_lo, p.seed_hi));
    uint span = 2u * p.shift + 1u;
    int dr = int(w.x % span) - int(p.shift);
    int dc = int(w.y % span) - int(p.shift);
    int sr = r - dr;
    bool row_in = sr >= 0 && sr < int(p.height);
    uint q1 = min(p.width, q0 + SPAN);
    for (uint q = q0; q < q1; ++q) {
        int sq = int(q) - dc;
        float v = 0.0;
        if (row_in && sq >= 0 && sq < int(p.width))
            v = load_f32(p.x.addr, view_index2(p.x, c * plane + uint(sr) * p.width + uint(sq), j));
        store_f32(p.y.addr, view_index2(p.y, c * plane + uint(r) * p.width + q, j), v);
    }
}

// y(i, j) += b(i): a bias vector broadcast over the columns of y (the work of
// one element is add_bias_element in elementwise.glsl).
#version 450
#include "common.glsl"
#include "elementwise.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(local_size_x_id = 0) in;

// x: b, an m-vector (element i at x.addr + i·x.rstep); y: m×n, rows = m (never the dense shortcut).
#include "element_push.glsl"

void main() {
    uint k = global_index(WG);
    if (k >= p.n) return;
    add_bias_element(p.x, p.y, k);
}

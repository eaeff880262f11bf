// Column statistics of long columns, in passes whose loops are bounded by
// construction (drivers may end a shader loop after 65,535 iterations):
// softmax's (max m, Σ exp(x − m)) and argmax's (largest value, its first row;
// argmin's is argmax's of −x: level 0 negates what it reads).
// Level 0 reads rows [c·chunk, (c+1)·chunk) of column j of x; a later level
// combines `chunk` partials of the previous one. Each invocation writes one
// partial, a pair of 32-bit words, at (j·out_chunks + c); the host repeats
// levels until one partial per column remains (at most three levels for 2^32
// rows), and colapply.comp uses it.
#version 450
#include "common.glsl"
#include "modes.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint OP = COLSTATS_SOFTMAX;  // COLSTATS_*: vk::ColStats (src/vulkan/modes.def)
layout(constant_id = 2) const uint LEVEL0 = 1;  // 1: read x; 0: read partials
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    View x;           // level 0: the rows×cols matrix
    uvec2 in_part;    // later levels: cols × rows partials (uvec2 each)
    uvec2 out_part;   // cols × out_chunks partials
    uint rows;        // level 0: rows of x; later levels: partials per column
    uint cols;
    uint chunk;       // values per invocation
    uint out_chunks;  // ceil(rows / chunk)
} p;

#define NEG_INF uintBitsToFloat(0xff800000u)
const uint NONE = 0xffffffffu;

// Softmax: the running (m, s) absorbs (m2, s2) (a single value x is (x, 1)).
// A NaN makes s NaN, as in the one-pass shader; columns of −inf give s = 0.
void absorb_sum(inout float m, inout float s, float m2, float s2) {
    if (m2 > m) {
        s = s * exp(m - m2) + s2;
        m = m2;
    } else if (!(m2 == NEG_INF && m == NEG_INF)) {
        s += s2 * exp(m2 - m);
    }
}
// Argmax: the largest value, the lowest row on ties; NaN never wins.
void absorb_max(inout float b, inout uint at, float b2, uint at2) {
    if (b2 > b || (b2 == b && at2 < at)) {
        b = b2;
        at = at2;
    }
}

void main() {
    uint g = global_index(WG);
    if (g >= p.cols * p.out_chunks) return;
    uint j = g / p.out_chunks;
    uint c = g - j * p.out_chunks;
    uint begin = c * p.chunk;
    uint end = min(p.rows, begin + min(p.chunk, p.rows - begin));
    float a = NEG_INF;                 // m, or the best value
    float s = 0.0;                     // softmax: the sum
    uint at = NONE;                    // argmax: the best row
    bool poisoned = false;             // softmax: a NaN or +Inf seen (s is NaN, from the bits)
    for (uint i = begin; i < end; ++i) {
        if (LEVEL0 != 0) {
            float v = load_f32(p.x.addr, view_index2(p.x, i, j));
            if (OP == COLSTATS_SOFTMAX) {
                poisoned = poisoned || nan_or_pinf_bits(v);
                absorb_sum(a, s, v, 1.0);
            } else {
                absorb_max(a, at, OP == COLSTATS_ARGMIN ? -v : v, i);
            }
        } else {
            uint e = (j * p.rows + i) * 2u;
            float v = uintBitsToFloat(U32(addr_f32(p.in_part, e)).v);
            uint w = U32(addr_f32(p.in_part, e + 1u)).v;
            if (OP == COLSTATS_SOFTMAX) {
                poisoned = poisoned || nan_bits(uintBitsToFloat(w));
                absorb_sum(a, s, v, uintBitsToFloat(w));
            } else {
                absorb_max(a, at, v, w);
            }
        }
    }
    if (poisoned) s = uintBitsToFloat(0x7fc00000u);
    uint o = (j * p.out_chunks + c) * 2u;
    U32(addr_f32(p.out_part, o)).v = floatBitsToUint(a);
    U32(addr_f32(p.out_part, o + 1u)).v = OP == COLSTATS_SOFTMAX ? floatBitsToUint(s) : at;
}

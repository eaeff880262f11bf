// Reductions to a number: dot, nrm2 (the sum of squares; the host takes the
// root), asum, sum, and imax (the first index of the largest |x|).
// Each invocation accumulates a grid-strided share of the elements; the
// workgroup then combines its invocations in a shared-memory tree, every
// slot written before the first barrier, and writes one partial result. The
// host adds the per-workgroup partials in double precision. No atomics.
// The host takes enough workgroups that the grid-strided loop runs at most
// kReduceIterations times per invocation (drivers may end a loop after 65,535).
#version 450
#include "common.glsl"
#include "modes.glsl"

layout(constant_id = 0) const uint WG = 256;  // a power of two
layout(constant_id = 1) const uint OP = REDUCE_DOT;  // REDUCE_*: vela::Reduce (core/reduce.def), or REDUCE_IMAX
layout(constant_id = 2) const uint VEC4 = 0;  // x (and y) dense and 16-byte aligned: vec4 loads
layout(local_size_x_id = 0) in;

layout(buffer_reference, buffer_reference_align = 16) buffer V4 { vec4 v; };

layout(push_constant) uniform Push {
    View x;
    View y;             // dot only
    uvec2 partials;  // float[groups], then for imax uint[groups] of indices
    uint n;
} p;

shared float sv[WG];
shared uint si[WG];

void main() {
    uint l = gl_LocalInvocationID.x;
    uint g = group_index();
    uint groups = gl_NumWorkGroups.x * gl_NumWorkGroups.y * gl_NumWorkGroups.z;
    uint stride = groups * WG;
    float acc = OP == REDUCE_IMAX ? -1.0 : 0.0;
    uint best = 0xffffffffu;
    if (VEC4 != 0) {
        // Whole vec4s grid-strided, then the last n % 4 elements by the first invocations of group 0.
        uint n4 = p.n / 4u;
        for (uint q = g * WG + l; q < n4; q = n4 - q > stride ? q + stride : n4) {
            vec4 v = V4(addr_f32(p.x.addr, q * 4u)).v;
            if (OP == REDUCE_DOT) acc += dot(v, V4(addr_f32(p.y.addr, q * 4u)).v);
            else if (OP == REDUCE_NRM2) acc += dot(v, v);
            else if (OP == REDUCE_ASUM) acc += (abs(v.x) + abs(v.y)) + (abs(v.z) + abs(v.w));
            else if (OP == REDUCE_SUM) acc += (v.x + v.y) + (v.z + v.w);
            else {
                for (uint c = 0; c < 4u; ++c)
                    if (abs(v[c]) > acc) {
                        acc = abs(v[c]);
                        best = q * 4u + c;
                    }
            }
        }
        uint k = n4 * 4u + l;
        if (g == 0 && k < p.n) {
            float v = load_f32(p.x.addr, k);
            if (OP == REDUCE_DOT) acc += v * load_f32(p.y.addr, k);
            else if (OP == REDUCE_NRM2) acc += v * v;
            else if (OP == REDUCE_ASUM) acc += abs(v);
            else if (OP == REDUCE_SUM) acc += v;
            else if (abs(v) > acc) {  // the tail comes after every index this invocation saw
                acc = abs(v);
                best = k;
            }
        }
    } else {
        // The step is taken only while it stays below n: no 32-bit wrap-around near 2^32 elements.
        for (uint k = g * WG + l; k < p.n; k = p.n - k > stride ? k + stride : p.n) {
            float v = ld(p.x, k);
            if (OP == REDUCE_DOT) acc += v * ld(p.y, k);
            else if (OP == REDUCE_NRM2) acc += v * v;
            else if (OP == REDUCE_ASUM) acc += abs(v);
            else if (OP == REDUCE_SUM) acc += v;
            else if (abs(v) > acc) {  // k increases: strict > keeps the first of equal values
                acc = abs(v);
                best = k;
            }
        }
    }
    sv[l] = acc;
    si[l] = best;
    barrier();
    for (uint s = WG / 2; s > 0; s >>= 1) {
        if (l < s) {
            if (OP == REDUCE_IMAX) {
                float v2 = sv[l + s];
                uint i2 = si[l + s];
                if (v2 > sv[l] || (v2 == sv[l] && i2 < si[l])) {
                    sv[l] = v2;
                    si[l] = i2;
                }
            } else {
                sv[l] += sv[l + s];
            }
        }
        barrier();
    }
    if (l == 0) {
        store_f32(p.partials, g, sv[0]);
        if (OP == REDUCE_IMAX) U32(addr_f32(p.partials, groups + g)).v = si[0];
    }
}

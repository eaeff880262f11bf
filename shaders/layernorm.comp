// Layer norm per column (one token per column, its m values in the rows) and
// its backward, for src/vulkan/kernels_layernorm.cpp (docs/sequence.md).
//   forward:  μ = mean(x), r = 1/√(var(x) + eps), y = γ·(x − μ)·r + β
//   backward: g = dy·γ, x̂ = (x − μ)·r, dx = r·(g − mean(g) − x̂·mean(g·x̂)),
//             and P = dy·x̂ (the host sums P's rows into dγ, dy's into dβ).
// A workgroup of WG invocations (a power of two) takes one column, or one
// chunk of `chunk` rows of it; invocation t loops over rows t, t + WG, ...
// of the chunk, at most chunk/WG iterations (the host keeps that far below
// the 65,535 iterations after which a driver may end a loop). The
// invocations' partials meet in shared memory, every element of which is
// written before the barrier that precedes its first read.
// LN_FWD: forward. One chunk per column (chunks = 1): statistics, then y, in
//         one workgroup. Else each workgroup writes its chunk's (count, mean,
//         M2) to part[3·(j·chunks + c)].
// LN_FWD_COMBINE: forward, the columns' chunks combined (one workgroup per column;
//         loops over chunks/WG partials): μ and r.
// LN_FWD_APPLY: forward, y from μ and r: one invocation per element.
// LN_BWD: backward. chunks = 1: mean(g), mean(g·x̂), then dx and P, in one
//         workgroup. Else each workgroup writes its chunk's (Σg, Σg·x̂) to part[2·(j·chunks + c)].
// LN_BWD_COMBINE: backward, the chunks combined into part2[2·j] = (mean(g), mean(g·x̂)).
// LN_BWD_APPLY: backward, dx and P from part2: one invocation per element.
// LN_ROW_SUMS: dγ(i) = Σⱼ P(i, j) into `gamma` and dβ(i) = Σⱼ dy(i, j) into `beta`:
//         one invocation per row, columns of at most the host's per-loop limit.
// Statistics combine as Chan et al.'s pairwise update (count, mean, M2) of
// x − x(0, j), in float32: no 64-bit types (SwiftShader has none).
#version 450
#include "common.glsl"
#include "modes.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint MODE = LN_FWD;  // vk::Ln (src/vulkan/modes.def)
// 1 (LN_FWD and LN_BWD with chunks = 1, software drivers, columns of at most the
// host's per-loop limit): one invocation per column, WG columns per
// workgroup, no shared memory and no barrier (on lavapipe a workgroup
// barrier costs more than the short columns' reduction).
layout(constant_id = 2) const uint LANE = 0;
layout(local_size_x_id = 0) in;

// Mirrors LnPush in src/vulkan/kernels_layernorm.cpp (std430, 120 bytes).
struct Strided {
    Addr a;     // element (0, 0)
    uint rs;    // elements between rows
    uint cs;    // elements between columns
};
layout(push_constant) uniform LnPush {
    Strided x, y, dy;   // y is dx in the backward modes
    Addr gamma, beta, mean, rstd;  // dense vectors
    Addr part;          // partials (LN_FWD, _COMBINE, LN_BWD, _COMBINE) or per-column means (LN_BWD_COMBINE writes, LN_BWD_APPLY reads)
    Addr prod;          // P = dy·x̂, dense m×n (backward)
    uint rows, cols;
    uint chunk;         // rows per workgroup
    uint chunks;        // workgroups per column
    float eps;
    uint pad;
} p;

shared float s0[WG];
shared float s1[WG];
shared float s2[WG];

float ld(Strided v, uint i, uint j) { return load_f32(v.a, i * v.rs + j * v.cs); }
void st(Strided v, uint i, uint j, float x) { store_f32(v.a, i * v.rs + j * v.cs, x); }

// (n, mean, M2) absorbs (n2, mean2, M22).
void chan(inout float n, inout float mu, inout float m2, float n2, float mu2, float m22) {
    if (n2 == 0.0) return;
    float t = n + n2;
    float d = mu2 - mu;
    float f = n2 / t;
    mu += d * f;
    m2 += m22 + d * d * n * f;
    n = t;
}

// Tree reduction of s0..s2 into element 0; every invocation takes part (uniform control flow).
void reduce_chan(uint t) {
    if (LANE != 0u) return;
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1) {
        if (t < s) {
            float n = s0[t], mu = s1[t], m2 = s2[t];
            chan(n, mu, m2, s0[t + s], s1[t + s], s2[t + s]);
            s0[t] = n, s1[t] = mu, s2[t] = m2;
        }
        barrier();
    }
}
void reduce_sum2(uint t) {
    if (LANE != 0u) return;
    barrier();
    for (uint s = WG / 2u; s > 0u; s >>= 1) {
        if (t < s) {
            s0[t] += s0[t + s];
            s1[t] += s1[t + s];
        }
        barrier();
    }
}

void main() {
    uint t = LANE != 0u ? 0u : gl_LocalInvocationID.x;
    const uint STEP = LANE != 0u ? 1u : WG;  // between the rows one invocation visits
    if (MODE == LN_ROW_SUMS) {  // row sums: adjacent invocations read adjacent rows
        uint i = global_index(WG);
        if (i >= p.rows) return;
        float a = 0.0, b = 0.0;
        for (uint j = 0u; j < p.cols; j++) {
            a += load_f32(p.prod, i + j * p.rows);
            b += ld(p.dy, i, j);
        }
        store_f32(p.gamma, i, a);
        store_f32(p.beta, i, b);
        return;
    }
    if (MODE == LN_FWD_APPLY || MODE == LN_BWD_APPLY) {  // elementwise
        uint g = global_index(WG);
        if (g >= p.rows * p.cols) return;
        uint j = g / p.rows, i = g - j * p.rows;
        float mu = load_f32(p.mean, j), r = load_f32(p.rstd, j);
        float xh = (ld(p.x, i, j) - mu) * r;
        float ga = load_f32(p.gamma, i);
        if (MODE == LN_FWD_APPLY) {
            st(p.y, i, j, ga * xh + load_f32(p.beta, i));
        } else {
            float d = ld(p.dy, i, j);
            float mg = load_f32(p.part, 2u * j), mgx = load_f32(p.part, 2u * j + 1u);
            st(p.y, i, j, r * (d * ga - mg - xh * mgx));
            store_f32(p.prod, i + j * p.rows, d * xh);
        }
        return;
    }
    // One workgroup per (column, chunk); the group index is uniform, so every
    // invocation of a workgroup leaves together or not at all. (LANE: one
    // invocation per column, which leaves alone: it meets no barrier.)
    uint w = LANE != 0u ? global_index(WG) : group_index();
    if (MODE == LN_FWD_COMBINE || MODE == LN_BWD_COMBINE) {
        if (w >= p.cols) return;
        uint j = w;
        if (MODE == LN_FWD_COMBINE) {
            float n = 0.0, mu = 0.0, m2 = 0.0;
            for (uint c = t; c < p.chunks; c += WG) {
                uint e = 3u * (j * p.chunks + c);
                chan(n, mu, m2, load_f32(p.part, e), load_f32(p.part, e + 1u), load_f32(p.part, e + 2u));
            }
            s0[t] = n, s1[t] = mu, s2[t] = m2;
            reduce_chan(t);
            if (t == 0u) {  // the chunks' means are of x − x(0, j)
                store_f32(p.mean, j, ld(p.x, 0u, j) + s1[0]);
                store_f32(p.rstd, j, 1.0 / sqrt(s2[0] / float(p.rows) + p.eps));
            }
        } else {
            float a = 0.0, b = 0.0;
            for (uint c = t; c < p.chunks; c += WG) {
                uint e = 2u * (j * p.chunks + c);
                a += load_f32(p.part, e);
                b += load_f32(p.part, e + 1u);
            }
            s0[t] = a, s1[t] = b;
            reduce_sum2(t);
            // part holds the chunks' partials; the means go after them.
            if (t == 0u) {
                uint o = 2u * p.cols * p.chunks + 2u * j;
                store_f32(p.part, o, s0[0] / float(p.rows));
                store_f32(p.part, o + 1u, s1[0] / float(p.rows));
            }
        }
        return;
    }
    if (w >= p.cols * p.chunks) return;
    uint j = w / p.chunks, c = w - j * p.chunks;
    uint begin = c * p.chunk, end = min(p.rows, begin + min(p.chunk, p.rows - begin));
    if (MODE == LN_FWD) {
        // Welford over this invocation's rows, of x − x(0, j): a column far
        // from 0 (mean 1000, spread 1) keeps its mean's low bits.
        float k0 = ld(p.x, 0u, j);
        float n = 0.0, mu = 0.0, m2 = 0.0;
        for (uint i = begin + t; i < end; i += STEP) {
            float v = ld(p.x, i, j) - k0;
            n += 1.0;
            float d = v - mu;
            mu += d / n;
            m2 += d * (v - mu);
        }
        if (LANE == 0u) {
            s0[t] = n, s1[t] = mu, s2[t] = m2;
            reduce_chan(t);
            n = s0[0], mu = s1[0], m2 = s2[0];
        }
        if (p.chunks > 1u) {
            if (t == 0u) {
                uint e = 3u * w;
                store_f32(p.part, e, n);
                store_f32(p.part, e + 1u, mu);
                store_f32(p.part, e + 2u, m2);
            }
            return;
        }
        float mean = k0 + mu, r = 1.0 / sqrt(m2 / float(p.rows) + p.eps);
        if (t == 0u) {
            store_f32(p.mean, j, mean);
            store_f32(p.rstd, j, r);
        }
        for (uint i = begin + t; i < end; i += STEP)
            st(p.y, i, j, load_f32(p.gamma, i) * ((ld(p.x, i, j) - mean) * r) + load_f32(p.beta, i));
    } else {  // LN_BWD
        float mu = load_f32(p.mean, j), r = load_f32(p.rstd, j);
        float a = 0.0, b = 0.0;
        for (uint i = begin + t; i < end; i += STEP) {
            float gg = ld(p.dy, i, j) * load_f32(p.gamma, i);
            a += gg;
            b += gg * ((ld(p.x, i, j) - mu) * r);
        }
        if (LANE == 0u) {
            s0[t] = a, s1[t] = b;
            reduce_sum2(t);
            a = s0[0], b = s1[0];
        }
        if (p.chunks > 1u) {
            if (t == 0u) {
                store_f32(p.part, 2u * w, a);
                store_f32(p.part, 2u * w + 1u, b);
            }
            return;
        }
        float mg = a / float(p.rows), mgx = b / float(p.rows);
        for (uint i = begin + t; i < end; i += STEP) {
            float d = ld(p.dy, i, j), xh = (ld(p.x, i, j) - mu) * r;
            st(p.y, i, j, r * (d * load_f32(p.gamma, i) - mg - xh * mgx));
            store_f32(p.prod, i + j * p.rows, d * xh);
        }
    }
}

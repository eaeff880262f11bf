// The body of mm_regblock.comp and mm_regblock_i64.comp (see there).
// mm for devices where workgroup barriers and shared memory are expensive
// (lavapipe and other CPU implementations, Caps::software). No shared memory,
// no barrier: a workgroup is one subgroup of SG lanes and computes an
// (SG·MR)×NR block of c; lane l owns MR rows of it and keeps MR·NR
// accumulators in registers. Per k, each lane loads its MR values of op(a)
// (8-byte pairs, or in the portable kernel 16-byte groups of four, when the
// host allows it: fewer loads, which dominate on a CPU); op(b) is loaded once
// per SG values of k, lane l holding
// op(b)(k0 + l, j), and handed to all lanes with subgroupBroadcast
// (subgroupShuffle in the 64-bit kernel, which also loads b in 8-byte pairs
// where it can: BPAIR below).
// c ← α·op(a)·op(b) + β·c (EPI_AXPBY; EPI_BATCHED the same for block z of a
// strided batched product) or c ← act(op(a)·op(b) + bias) (EPI_DENSE).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
#ifdef GEMM_INT64
// lavapipe: subgroupShuffle by a constant lane is a vector permute, about a
// quarter of the time of its subgroupBroadcast (docs/gemm.md)
#extension GL_KHR_shader_subgroup_shuffle : require
#define GEMM_BCAST(x, lane) subgroupShuffle(x, lane)
#else
#define GEMM_BCAST(x, lane) subgroupBroadcast(x, lane)
#endif
#include "gemm.glsl"
#include "mm_common.glsl"

// Operand positions. In mm_regblock_i64.comp, for devices with shaderInt64,
// 64-bit byte addresses stepped directly (one add per load: on lavapipe
// about twice the speed, as loads dominate there); every offset and step is
// computed in 64 bits (STEP) from 64-bit push-constant addresses: a 32-bit
// product widened afterwards, or an address assembled from two 32-bit words,
// cost lavapipe 5-10% of mm (docs/gemm.md). In the portable kernel, each
// lane row of op(a) and each column of op(b) gets a reference to its first
// element, formed once with the 64-bit carry (gemm_addr), and the loop
// indexes it with a 32-bit element index: the address is formed once per
// workgroup rather than at every load (on SwiftShader, where each load builds
// four per-lane pointers, a fifth of mm's time). The host keeps every such
// index of a dispatch below 2^29 (byte offsets below 2^31, as SwiftShader
// adds them in signed 32-bit arithmetic) by splitting k (record_gemm).
#ifdef GEMM_TEXEL
// mm_regblock_tex_i64.comp: op(a) and op(b) through uniform texel buffers of
// their memory blocks (push descriptors: binding 0/1 a's block as R32 and
// R32G32B32A32, 2/3 b's), positions are float indices into them (the host
// passes p.a and p.b as such indices), stepped in 32 bits (a block holds at
// most maxTexelBufferElements floats).
layout(set = 0, binding = 0) uniform samplerBuffer ta1;
layout(set = 0, binding = 1) uniform samplerBuffer ta4;
layout(set = 0, binding = 2) uniform samplerBuffer tb1;
layout(set = 0, binding = 3) uniform samplerBuffer tb4;
#define PTR uint
#define STEP uint
#define STEP_OF(e) uint(e)
#define PTR_AT(base, i, s) ((base) + uint(i) * (s))
#elif defined(GEMM_INT64)
#define PTR uint64_t
#define STEP uint64_t
#define STEP_OF(e) (uint64_t(e) * 4ul)  // the step of e elements
#define PTR_AT(base, i, s) ((base) + uint64_t(i) * STEP_OF(s))  // element i·s of the array at base
#else
#define PTR uint
#define STEP uint
#define STEP_OF(e) (e)
layout(buffer_reference, std430, buffer_reference_align = 4) buffer GemmRow { float v[]; };
// 8- and 16-byte loads only where the host proved the address and ld multiples of 2 or 4.
layout(buffer_reference, std430, buffer_reference_align = 8) buffer GemmRow2 { vec2 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) buffer GemmRow4 { vec4 v[]; };
#endif

layout(constant_id = 0) const uint SG = 8;    // lanes: the workgroup is one subgroup
layout(constant_id = 1) const uint MR = 8;    // rows of c per lane (a multiple of G)
layout(constant_id = 2) const uint NR = 12;   // columns of c per workgroup
layout(constant_id = 3) const uint TA = 0;    // op(a) = aᵀ of the stored matrix
layout(constant_id = 4) const uint TB = 0;
layout(constant_id = 5) const uint PAIR = 0;  // 1: a's address and ld are even: load 8 bytes; 2: 16 bytes
layout(constant_id = 6) const uint EPI = EPI_AXPBY;
layout(constant_id = 7) const uint ACT = ACT_IDENTITY;
// 8-byte loads of op(b) (64-bit kernel only; the host proved b's address,
// ld and block step even): on lavapipe every load is a loop over the lanes,
// mm's main cost (docs/gemm.md), and a pair halves the loads of b.
// 1: op(b) untransposed: lane l loads op(b)(k0 + 2l, j) and (k0 + 2l + 1, j),
//    so one load serves 2·SG values of k;
// 2: op(b) transposed, n and NR even: op(b)(k0 + l, j) and (k0 + l, j + 1).
// mm_regblock_tex (16-byte texels, the host proved b's index and ld
// multiples of 4): 3: op(b) untransposed, lane l loads op(b)(k0 + 4l .. 4l + 3, j)
// and one load serves 4·SG values of k; 4: transposed, n and NR multiples of
// 4: op(b)(k0 + l, j .. j + 3).
layout(constant_id = 8) const uint BPAIR = 0;
layout(local_size_x_id = 0) in;

// G values of a per load: 1, 2 (PAIR = 1) or 4 (PAIR = 2). Untransposed a:
// a group is G rows of one column, so lane l owns the row groups
// G·l + SG·G·q. Transposed a: a group is G consecutive k of one row.
const uint G = PAIR == 2 ? 4 : PAIR == 1 ? 2 : 1;
const bool ROWPAIR = G > 1 && TA == 0;
const bool KPAIR = G > 1 && TA != 0;

uint lane_row(uint i0, uint l, uint r) {
    return ROWPAIR ? i0 + G * l + SG * (r & ~(G - 1)) + (r & (G - 1)) : i0 + l + SG * r;
}

#ifdef GEMM_TEXEL
// G = 4 only from 16-byte texels (the host never asks for pairs here).
vec4 load_group(uint r, PTR q) {
    if (G == 4) return texelFetch(ta4, int(q >> 2));
    return vec4(texelFetch(ta1, int(q)).x, G == 2 ? texelFetch(ta1, int(q + 1)).x : 0.0, 0.0, 0.0);
}
float load_a(uint r, PTR q) { return texelFetch(ta1, int(q)).x; }
float load_b(uint j, PTR q) { return texelFetch(tb1, int(q)).x; }
#elif defined(GEMM_INT64)
// G values of op(a) at q: rows q, q+1, ... (untransposed) or k, k+1, ... (transposed).
vec4 load_group(uint r, PTR q) {
    if (G == 4) return GemmV4(q).v;
    if (G == 2) return vec4(gemm_load2_64(q), 0.0, 0.0);
    return vec4(GemmF32(q).v, 0.0, 0.0, 0.0);
}
float load_a(uint r, PTR q) { return GemmF32(q).v; }
float load_b(uint j, PTR q) { return GemmF32(q).v; }
#else
// References to each lane row's op(a)(i, 0) (as 4-, 8- and 16-byte elements:
// only those of the load size G stay) and to each column's op(b)(0, j).
GemmRow ra[MR];
GemmRow2 ra2[MR];
GemmRow4 ra4[MR];
GemmRow rb[NR];
vec4 load_group(uint r, uint q) {
    if (G == 4) return ra4[r].v[q >> 2];
    if (G == 2) return vec4(ra2[r].v[q >> 1], 0.0, 0.0);
    return vec4(ra[r].v[q], 0.0, 0.0, 0.0);
}
float load_a(uint r, uint q) { return ra[r].v[q]; }
float load_b(uint j, uint q) { return rb[j].v[q]; }
#endif

void main() {
    uint l = gl_LocalInvocationID.x;
#ifdef GEMM_TEXEL
    // Column blocks along x, which the driver runs first: consecutive
    // workgroups share one panel of op(a) (docs/gemm.md, "mm_regblock_tex_i64").
    uint i0 = gl_WorkGroupID.y * SG * MR;
    uint j0 = gl_WorkGroupID.x * NR;
#else
    uint i0 = gl_WorkGroupID.x * SG * MR;
    uint j0 = gl_WorkGroupID.y * NR;
#endif
    // Steps between consecutive k of op(a) and of op(b).
    STEP sa = STEP_OF(TA != 0 ? 1u : p.lda);
    STEP sb = STEP_OF(TB != 0 ? p.ldb : 1u);
#ifdef GEMM_TEXEL
    uint a0 = uint(p.a), b0 = uint(p.b);  // never batched
#else
    GEMM_ADDR a0 = gemm_block(EPI, p.a, p.sa), b0 = gemm_block(EPI, p.b, p.sb);  // this block's op(a)(0, 0), op(b)(0, 0)
#endif

    // Rows and columns past the edge are clamped, so every load is in
    // bounds and the inner loop has no test; the epilogue stores only the
    // elements inside c.
    PTR pa[MR];  // each lane row's next op(a) value
    [[unroll]] for (uint r = 0; r < MR; r++) {
        uint i = ROWPAIR ? min(lane_row(i0, l, r & ~(G - 1)), p.m - G) : min(lane_row(i0, l, r), p.m - 1);
#if defined(GEMM_INT64) || defined(GEMM_TEXEL)
        pa[r] = PTR_AT(a0, i, TA != 0 ? p.lda : 1u);
#else
        uvec2 row = gemm_addr(a0, i * (TA != 0 ? p.lda : 1u));
        ra[r] = GemmRow(row);
        ra2[r] = GemmRow2(row);
        ra4[r] = GemmRow4(row);
        pa[r] = 0;
#endif
    }
    PTR qb[NR];  // op(b)(0, j)
    [[unroll]] for (uint j = 0; j < NR; j++) {
        // Column pairs (quads) start at an even column (a multiple of 4):
        // n - 2 (n - 4) is the last.
        const uint GB = BPAIR == 4 ? 4 : BPAIR == 2 ? 2 : 1;
        uint jc = min(j0 + j, GB > 1 && j % GB == 0 ? p.n - GB : p.n - 1);
#if defined(GEMM_INT64) || defined(GEMM_TEXEL)
        qb[j] = PTR_AT(b0, jc, TB != 0 ? 1u : p.ldb);
#else
        rb[j] = GemmRow(gemm_addr(b0, jc * (TB != 0 ? 1u : p.ldb)));
        qb[j] = 0;
#endif
    }
    float acc[MR * NR];
    [[unroll]] for (uint t = 0; t < MR * NR; t++) acc[t] = 0.0;

    // Values of k per pass of the main loop: SG, or 2·SG with pairs of b.
    const uint KS = BPAIR == 3 ? 4 * SG : BPAIR == 1 ? 2 * SG : SG;
    uint k0 = 0;
    for (; k0 + KS <= p.k; k0 += KS) {
        float bl[NR], bh[NR];
#ifdef GEMM_TEXEL
        vec4 bq[NR];
        if (BPAIR == 3) {
            uint boff = k0 + 4 * l;
            [[unroll]] for (uint j = 0; j < NR; j++) bq[j] = texelFetch(tb4, int((qb[j] + boff) >> 2));
        } else if (BPAIR == 4) {
            uint boff = (k0 + l) * sb;
            [[unroll]] for (uint j = 0; j < NR; j += 4) {
                vec4 t = texelFetch(tb4, int((qb[j] + boff) >> 2));
                bl[j] = t.x;
                bl[j + 1] = t.y;
                bl[j + 2] = t.z;
                bl[j + 3] = t.w;
            }
        } else
#elif defined(GEMM_INT64)
        if (BPAIR == 1) {
            STEP boff = STEP(k0 + 2 * l) * sb;
            [[unroll]] for (uint j = 0; j < NR; j++) {
                vec2 t = gemm_load2_64(qb[j] + boff);
                bl[j] = t.x;
                bh[j] = t.y;
            }
        } else if (BPAIR == 2) {
            STEP boff = STEP(k0 + l) * sb;
            [[unroll]] for (uint j = 0; j < NR; j += 2) {
                vec2 t = gemm_load2_64(qb[j] + boff);
                bl[j] = t.x;
                bl[j + 1] = t.y;
            }
        } else
#endif
        {
            STEP boff = STEP(k0 + l) * sb;
            [[unroll]] for (uint j = 0; j < NR; j++) bl[j] = load_b(j, qb[j] + boff);
        }
        float av[MR];
        vec4 an[MR];
        [[unroll]] for (uint kk = 0; kk < KS; kk++) {
            if (ROWPAIR) {
                [[unroll]] for (uint r = 0; r < MR; r += G) {
                    vec4 t = load_group(r, pa[r]);
                    [[unroll]] for (uint g = 0; g < G; g++) av[r + g] = t[g];
                    pa[r] += sa;
                }
            } else if (KPAIR) {
                [[unroll]] for (uint r = 0; r < MR; r++) {
                    if (kk % G == 0) {
                        an[r] = load_group(r, pa[r]);
                        pa[r] += STEP_OF(G);
                    }
                    av[r] = an[r][kk % G];
                }
            } else {
                [[unroll]] for (uint r = 0; r < MR; r++) {
                    av[r] = load_a(r, pa[r]);
                    pa[r] += sa;
                }
            }
            [[unroll]] for (uint j = 0; j < NR; j++) {
#ifdef GEMM_TEXEL
                float bv = BPAIR == 3 ? GEMM_BCAST(bq[j][kk & 3], kk >> 2) : GEMM_BCAST(bl[j], kk);
#else
                float bv = BPAIR == 1 ? GEMM_BCAST((kk & 1) != 0 ? bh[j] : bl[j], kk >> 1) : GEMM_BCAST(bl[j], kk);
#endif
                [[unroll]] for (uint r = 0; r < MR; r++) acc[r * NR + j] = fma(av[r], bv, acc[r * NR + j]);
            }
        }
    }
    // The last k % KS values: every lane loads op(b) itself.
    for (; k0 < p.k; k0++) {
        float av[MR];
        [[unroll]] for (uint r = 0; r < MR; r++) {
            if (ROWPAIR) {
                if ((r & (G - 1)) == 0) {
                    vec4 t = load_group(r, pa[r]);
                    [[unroll]] for (uint g = 0; g < G; g++) av[r + g] = t[g];
                    pa[r] += sa;
                }
            } else {
                av[r] = load_a(r, pa[r]);
                pa[r] += sa;
            }
        }
        [[unroll]] for (uint j = 0; j < NR; j++) {
            float bv = load_b(j, qb[j] + STEP(k0) * sb);
            [[unroll]] for (uint r = 0; r < MR; r++) acc[r * NR + j] = fma(av[r], bv, acc[r * NR + j]);
        }
    }

    [[unroll]] for (uint j = 0; j < NR; j++) {
        if (j0 + j < p.n) {
            [[unroll]] for (uint r = 0; r < MR; r++) {
                uint i = lane_row(i0, l, r);
                if (i < p.m) gemm_epilogue(EPI, ACT, i, j0 + j, acc[r * NR + j]);
            }
        }
    }
    if (EPI == EPI_DENSE && !gemm_act_inline(ACT)) {  // see gemm_activate
        [[dont_unroll]] for (uint t = 0; t < MR * NR; t++) {
            uint j = t / MR, r = t - j * MR;
            uint i = lane_row(i0, l, r);
            if (j0 + j < p.n && i < p.m) gemm_activate(ACT, i, j0 + j);
        }
    }
}

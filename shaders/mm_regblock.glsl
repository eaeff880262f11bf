// The body of mm_regblock.comp and mm_regblock_i64.comp (see there).
// mm for devices where workgroup barriers and shared memory are expensive
// (lavapipe and other CPU implementations, Caps::software). No shared memory,
// no barrier: a workgroup is one subgroup of SG lanes and computes an
// (SG·MR)×NR block of c; lane l owns MR rows of it and keeps MR·NR
// accumulators in registers. Per k, each lane loads its MR values of op(a)
// (8-byte pairs when the host allows it, halving the loads, which dominate
// on a CPU); op(b) is loaded once per SG values of k, lane l holding
// op(b)(k0 + l, j), and handed to all lanes with subgroupBroadcast.
// c ← α·op(a)·op(b) + β·c (EPI_AXPBY) or c ← act(op(a)·op(b) + bias) (EPI_DENSE).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
#include "gemm.glsl"
#include "mm_common.glsl"

// Operand positions: 32-bit element indices added to the base address at each
// load (portable), or, in mm_regblock_i64.comp, for devices with shaderInt64,
// 64-bit byte addresses stepped directly (one add per load: on lavapipe
// about twice the speed, as loads dominate there). In that variant every
// offset and step is computed in 64 bits (STEP) from 64-bit push-constant
// addresses: a 32-bit product widened afterwards, or an address assembled
// from two 32-bit words, cost lavapipe 5-10% of mm (docs/gemm.md).
#ifdef GEMM_INT64
#define PTR uint64_t
#define STEP uint64_t
#define STEP_OF(e) (uint64_t(e) * 4ul)  // the step of e elements
#define PTR_AT(base, i, s) ((base) + uint64_t(i) * STEP_OF(s))  // element i·s of the array at base
#define LOAD(base, q) GemmF32(q).v
#define LOAD2(base, q) gemm_load2_64(q)
#else
#define PTR uint
#define STEP uint
#define STEP_OF(e) (e)
#define PTR_AT(base, i, s) ((i) * (s))
#define LOAD(base, q) gemm_load(base, q)
#define LOAD2(base, q) gemm_load2(base, q)
#endif

layout(constant_id = 0) const uint SG = 8;    // lanes: the workgroup is one subgroup
layout(constant_id = 1) const uint MR = 8;    // rows of c per lane (even when PAIR)
layout(constant_id = 2) const uint NR = 12;   // columns of c per workgroup
layout(constant_id = 3) const uint TA = 0;    // op(a) = aᵀ of the stored matrix
layout(constant_id = 4) const uint TB = 0;
layout(constant_id = 5) const uint PAIR = 0;  // a's address and ld are even: load 8 bytes
layout(constant_id = 6) const uint EPI = EPI_AXPBY;
layout(constant_id = 7) const uint ACT = ACT_IDENTITY;
layout(local_size_x_id = 0) in;

// Untransposed a: a pair is two rows of one column, so lane l owns the row
// pairs 2l + 2·SG·q. Transposed a: a pair is two consecutive k of one row.
const bool ROWPAIR = PAIR != 0 && TA == 0;
const bool KPAIR = PAIR != 0 && TA != 0;

uint lane_row(uint i0, uint l, uint r) {
    return ROWPAIR ? i0 + 2 * l + SG * (r & ~1u) + (r & 1u) : i0 + l + SG * r;
}

void main() {
    uint l = gl_LocalInvocationID.x;
    uint i0 = gl_WorkGroupID.x * SG * MR;
    uint j0 = gl_WorkGroupID.y * NR;
    // Steps between consecutive k of op(a) and of op(b).
    STEP sa = STEP_OF(TA != 0 ? 1u : p.lda);
    STEP sb = STEP_OF(TB != 0 ? p.ldb : 1u);

    // Rows and columns past the edge are clamped, so every load is in
    // bounds and the inner loop has no test; the epilogue stores only the
    // elements inside c.
    PTR pa[MR];  // each lane row's next op(a) value
    [[unroll]] for (uint r = 0; r < MR; r++) {
        uint i = ROWPAIR ? min(lane_row(i0, l, r & ~1u), p.m - 2) : min(lane_row(i0, l, r), p.m - 1);
        pa[r] = PTR_AT(p.a, i, TA != 0 ? p.lda : 1u);
    }
    PTR qb[NR];  // op(b)(0, j)
    [[unroll]] for (uint j = 0; j < NR; j++) {
        uint jc = min(j0 + j, p.n - 1);
        qb[j] = PTR_AT(p.b, jc, TB != 0 ? 1u : p.ldb);
    }
    float acc[MR * NR];
    [[unroll]] for (uint t = 0; t < MR * NR; t++) acc[t] = 0.0;

    uint k0 = 0;
    for (; k0 + SG <= p.k; k0 += SG) {
        float bl[NR];
        STEP boff = STEP(k0 + l) * sb;
        [[unroll]] for (uint j = 0; j < NR; j++) bl[j] = LOAD(p.b, qb[j] + boff);
        float av[MR], an[MR];
        [[unroll]] for (uint kk = 0; kk < SG; kk++) {
            if (ROWPAIR) {
                [[unroll]] for (uint r = 0; r < MR; r += 2) {
                    vec2 t = LOAD2(p.a, pa[r]);
                    av[r] = t.x;
                    av[r + 1] = t.y;
                    pa[r] += sa;
                }
            } else if (KPAIR) {
                [[unroll]] for (uint r = 0; r < MR; r++) {
                    if ((kk & 1) == 0) {
                        vec2 t = LOAD2(p.a, pa[r]);
                        av[r] = t.x;
                        an[r] = t.y;
                        pa[r] += STEP_OF(2u);
                    } else {
                        av[r] = an[r];
                    }
                }
            } else {
                [[unroll]] for (uint r = 0; r < MR; r++) {
                    av[r] = LOAD(p.a, pa[r]);
                    pa[r] += sa;
                }
            }
            [[unroll]] for (uint j = 0; j < NR; j++) {
                float bv = subgroupBroadcast(bl[j], kk);
                [[unroll]] for (uint r = 0; r < MR; r++) acc[r * NR + j] = fma(av[r], bv, acc[r * NR + j]);
            }
        }
    }
    // The last k % SG values: every lane loads op(b) itself.
    for (; k0 < p.k; k0++) {
        float av[MR];
        [[unroll]] for (uint r = 0; r < MR; r++) {
            if (ROWPAIR) {
                if ((r & 1) == 0) {
                    vec2 t = LOAD2(p.a, pa[r]);
                    av[r] = t.x;
                    av[r + 1] = t.y;
                    pa[r] += sa;
                }
            } else {
                av[r] = LOAD(p.a, pa[r]);
                pa[r] += sa;
            }
        }
        [[unroll]] for (uint j = 0; j < NR; j++) {
            float bv = LOAD(p.b, qb[j] + STEP(k0) * sb);
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

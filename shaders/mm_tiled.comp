#version 450
// mm for GPUs: the classic shared-memory tiled GEMM. A workgroup of TX×TY
// invocations computes a BM×BN block of c (BM = TX·TM, BN = TY·TN); per
// step of BK values of k it stages a BM×BK block of op(a) and a BK×BN block
// of op(b) in shared memory (loads coalesced for either transpose), then each
// invocation accumulates its TM×TN register block from shared memory.
// Every shared element is written (zero past the edges) before the barrier
// that precedes its first read.
// c ← α·op(a)·op(b) + β·c (EPI_AXPBY) or c ← act(op(a)·op(b) + bias) (EPI_DENSE).
#include "gemm.glsl"
#include "mm_common.glsl"

layout(constant_id = 0) const uint TX = 16;
layout(constant_id = 1) const uint TY = 16;
layout(constant_id = 2) const uint TT = 4;  // register block TT×TT per invocation
layout(constant_id = 3) const uint BK = 16;
layout(constant_id = 4) const uint TA = 0;
layout(constant_id = 5) const uint TB = 0;
layout(constant_id = 6) const uint EPI = EPI_AXPBY;
layout(constant_id = 7) const uint ACT = ACT_IDENTITY;
const uint TM = TT;
const uint TN = TT;
layout(local_size_x_id = 0, local_size_y_id = 1) in;

const uint BM = TX * TM;
const uint BN = TY * TN;
const uint NT = TX * TY;
// One word of padding per k row keeps the transposed-operand stores free of
// bank conflicts; reads stay unit-stride.
const uint LA = BM + 1;
const uint LB = BN + 1;
shared float As[BK * LA];
shared float Bs[BK * LB];

float load_a(uint i, uint k) {
    if (i >= p.m || k >= p.k) return 0.0;
    return gemm_load(p.a, TA != 0 ? k + i * p.lda : i + k * p.lda);
}

float load_b(uint k, uint j) {
    if (k >= p.k || j >= p.n) return 0.0;
    return gemm_load(p.b, TB != 0 ? j + k * p.ldb : k + j * p.ldb);
}

void main() {
    uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
    uint tid = tx + TX * ty;
    uint i0 = gl_WorkGroupID.x * BM, j0 = gl_WorkGroupID.y * BN;

    float acc[TM * TN];
    [[unroll]] for (uint t = 0; t < TM * TN; t++) acc[t] = 0.0;

    for (uint k0 = 0; k0 < p.k; k0 += BK) {
        // Consecutive invocations read consecutive addresses: along i for an
        // untransposed a, along k for a transposed one (and alike for b).
        for (uint e = tid; e < BM * BK; e += NT) {
            uint r = TA != 0 ? e / BK : e % BM;
            uint kk = TA != 0 ? e % BK : e / BM;
            As[kk * LA + r] = load_a(i0 + r, k0 + kk);
        }
        for (uint e = tid; e < BK * BN; e += NT) {
            uint c = TB != 0 ? e % BN : e / BK;
            uint kk = TB != 0 ? e / BN : e % BK;
            Bs[kk * LB + c] = load_b(k0 + kk, j0 + c);
        }
        barrier();
        [[unroll]] for (uint kk = 0; kk < BK; kk++) {
            float av[TM], bv[TN];
            [[unroll]] for (uint r = 0; r < TM; r++) av[r] = As[kk * LA + tx + TX * r];
            [[unroll]] for (uint c = 0; c < TN; c++) bv[c] = Bs[kk * LB + ty + TY * c];
            [[unroll]] for (uint r = 0; r < TM; r++)
                [[unroll]] for (uint c = 0; c < TN; c++) acc[r * TN + c] = fma(av[r], bv[c], acc[r * TN + c]);
        }
        // The next step overwrites the tiles: everyone must be done reading.
        barrier();
    }

    [[unroll]] for (uint c = 0; c < TN; c++) {
        uint j = j0 + ty + TY * c;
        [[unroll]] for (uint r = 0; r < TM; r++) {
            uint i = i0 + tx + TX * r;
            if (i < p.m && j < p.n) gemm_epilogue(EPI, ACT, i, j, acc[r * TN + c]);
        }
    }
    if (EPI == EPI_DENSE && !gemm_act_inline(ACT)) {  // see gemm_activate
        [[dont_unroll]] for (uint t = 0; t < TM * TN; t++) {
            uint c = t / TM, r = t - c * TM;
            uint i = i0 + tx + TX * r, j = j0 + ty + TY * c;
            if (i < p.m && j < p.n) gemm_activate(ACT, i, j);
        }
    }
}

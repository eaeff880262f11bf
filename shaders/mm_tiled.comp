#version 450
// mm for GPUs: the shared-memory tiled GEMM. A workgroup of TX×TY
// invocations computes a BM×BN block of c (BM = TX·TT, BN = TY·TT); per step
// of BK values of k it stages a BM×BK block of op(a) and a BK×BN block of
// op(b) in shared memory, k-major, and each invocation accumulates a TT×TT
// register block from it (TT = 4 or 8).
//
// Invocation (tx, ty) owns rows (tx + TX·g)·4 + 0..3 and columns
// (ty + TY·h)·4 + 0..3 of the block, g, h < TT/4: its values of op(a) and
// op(b) for one k are TT/4 16-byte shared loads each, consecutive
// invocations reading consecutive 16 bytes (no bank conflicts), for TT²
// fma. The next step's tiles are loaded from memory into registers while the
// current one is computed (register prefetch), then stored behind a barrier.
// (Two tile buffers with one barrier per step, and invocations numbered in
// 8×4 groups per 32-lane subgroup, measured no faster on an H200: dropped,
// docs/results.md "mm_tiled on an H200".)
//
// Loads from memory go along each operand's contiguous direction (rows of an
// untransposed a, k of a transposed one; k of an untransposed b, columns of a
// transposed one), 16 bytes at a time where the host proved the address and
// leading dimension multiples of 4 floats (VA, VB) and the tile lies inside
// the operand; element by element with zeros past the edges otherwise. Tiles
// loaded along k are stored transposed, their rows padded by 4 floats so the
// scattered stores meet no bank conflicts. Every shared element is written
// before the barrier that precedes its first read.
//
// c ← α·op(a)·op(b) + β·c (EPI_AXPBY) or c ← act(op(a)·op(b) + bias)
// (EPI_DENSE); 16-byte stores of c where the host proved c's rows contiguous
// and aligned (VC) and the block lies inside c. β = 0 never reads c.
#include "gemm.glsl"
#include "mm_common.glsl"

layout(constant_id = 0) const uint TX = 16;
layout(constant_id = 1) const uint TY = 16;
layout(constant_id = 2) const uint TT = 8;  // register block TT×TT per invocation: 4 or 8
layout(constant_id = 3) const uint BK = 8;  // values of k per tile: a multiple of 4
layout(constant_id = 4) const uint TA = 0;
layout(constant_id = 5) const uint TB = 0;
layout(constant_id = 6) const uint EPI = EPI_AXPBY;
layout(constant_id = 7) const uint ACT = ACT_IDENTITY;
layout(constant_id = 8) const uint VA = 0;  // 16-byte loads of a allowed (address, lda multiples of 4 floats)
layout(constant_id = 9) const uint VB = 0;  // of b likewise
layout(constant_id = 10) const uint VC = 0;  // 16-byte stores of c (crs = 1, address and ccs multiples of 4)
layout(local_size_x_id = 0, local_size_y_id = 1) in;

const uint G = TT / 4;  // 4-row (4-column) groups per invocation
const uint BM = TX * TT;
const uint BN = TY * TT;
const uint NT = TX * TY;
// Tile rows in vec4s: k-major, padded by one vec4 where the tile is stored transposed.
const uint LA4 = BM / 4 + (TA != 0 ? 1 : 0);
const uint LB4 = BN / 4 + (TB != 0 ? 0 : 1);
shared vec4 As[BK * LA4];
shared vec4 Bs[BK * LB4];
// 16-byte pieces of each tile per invocation (the host keeps these whole).
const uint PA = BM * BK / 4 / NT;
const uint PB = BN * BK / 4 / NT;

float load_a(uint i, uint k) {
    if (i >= p.m || k >= p.k) return 0.0;
    return gemm_load(p.a, TA != 0 ? k + i * p.lda : i + k * p.lda);
}

float load_b(uint k, uint j) {
    if (k >= p.k || j >= p.n) return 0.0;
    return gemm_load(p.b, TB != 0 ? j + k * p.ldb : k + j * p.ldb);
}

// Piece e of op(a)'s tile at (i0, k0): 4 values along the contiguous direction.
// Untransposed: rows 4·(e % (BM/4)) + 0..3 of k k0 + e / (BM/4); transposed: k
// 4·(e % (BK/4)) + 0..3 of row e / (BK/4).
vec4 piece_a(uint e, uint i0, uint k0, bool inside) {
    uint r = TA != 0 ? e / (BK / 4) : 4 * (e % (BM / 4));
    uint kk = TA != 0 ? 4 * (e % (BK / 4)) : e / (BM / 4);
    uint i = i0 + r, k = k0 + kk;
    if (VA != 0 && inside) return gemm_load4(p.a, TA != 0 ? k + i * p.lda : i + k * p.lda);
    if (TA != 0) return vec4(load_a(i, k), load_a(i, k + 1), load_a(i, k + 2), load_a(i, k + 3));
    return vec4(load_a(i, k), load_a(i + 1, k), load_a(i + 2, k), load_a(i + 3, k));
}

vec4 piece_b(uint e, uint k0, uint j0, bool inside) {
    uint c = TB != 0 ? 4 * (e % (BN / 4)) : e / (BK / 4);
    uint kk = TB != 0 ? e / (BN / 4) : 4 * (e % (BK / 4));
    uint j = j0 + c, k = k0 + kk;
    if (VB != 0 && inside) return gemm_load4(p.b, TB != 0 ? j + k * p.ldb : k + j * p.ldb);
    if (TB != 0) return vec4(load_b(k, j), load_b(k, j + 1), load_b(k, j + 2), load_b(k, j + 3));
    return vec4(load_b(k, j), load_b(k + 1, j), load_b(k + 2, j), load_b(k + 3, j));
}

void store_a(uint e, vec4 v) {
    if (TA == 0) {
        As[(e / (BM / 4)) * LA4 + e % (BM / 4)] = v;
    } else {  // 4 values of k for one row: one float in each of 4 tile rows
        uint r = e / (BK / 4), kk = 4 * (e % (BK / 4));
        [[unroll]] for (uint q = 0; q < 4; q++) As[(kk + q) * LA4 + r / 4][r % 4] = v[q];
    }
}

void store_b(uint e, vec4 v) {
    if (TB != 0) {
        Bs[(e / (BN / 4)) * LB4 + e % (BN / 4)] = v;
    } else {
        uint c = e / (BK / 4), kk = 4 * (e % (BK / 4));
        [[unroll]] for (uint q = 0; q < 4; q++) Bs[(kk + q) * LB4 + c / 4][c % 4] = v[q];
    }
}

// c(i..i+3, j) from the four accumulators v (rows i..i+3), through the
// shared epilogue one element at a time, or 16 bytes at a time (VC, inside c).
void write4(uint i, uint j, vec4 v, bool inside) {
    if (VC != 0 && inside && (EPI == EPI_AXPBY || gemm_act_inline(ACT))) {
        uint e = i + j * p.ccs;  // crs = 1
        vec4 out4;
        if (EPI == EPI_DENSE) {
            vec4 bias = vec4(gemm_load(p.bias, i * p.binc), gemm_load(p.bias, (i + 1) * p.binc),
                             gemm_load(p.bias, (i + 2) * p.binc), gemm_load(p.bias, (i + 3) * p.binc));
            out4 = v + bias;
            [[unroll]] for (uint q = 0; q < 4; q++) out4[q] = act_f(ACT, out4[q]);
        } else {
            out4 = p.alpha * v;
            if (p.beta != 0.0) out4 += p.beta * gemm_load4(p.c, e);  // β = 0: c may hold NaN, never read
        }
        GemmV4(gemm_addr(p.c, e)).v = out4;
        return;
    }
    [[unroll]] for (uint q = 0; q < 4; q++)
        if (i + q < p.m && j < p.n) gemm_epilogue(EPI, ACT, i + q, j, v[q]);
}

void main() {
    uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
    uint tid = tx + TX * ty;
    uint i0 = gl_WorkGroupID.x * BM, j0 = gl_WorkGroupID.y * BN;
    bool rows_in = i0 + BM <= p.m, cols_in = j0 + BN <= p.n;

    vec4 acc[TT * G];  // acc[(4·h + q)·G + g]: rows of group g, column q of group h
    [[unroll]] for (uint t = 0; t < TT * G; t++) acc[t] = vec4(0.0);

    vec4 ra[PA], rb[PB];
    [[unroll]] for (uint q = 0; q < PA; q++) ra[q] = piece_a(tid + q * NT, i0, 0, rows_in && BK <= p.k);
    [[unroll]] for (uint q = 0; q < PB; q++) rb[q] = piece_b(tid + q * NT, 0, j0, cols_in && BK <= p.k);
    for (uint k0 = 0; k0 < p.k; k0 += BK) {
        [[unroll]] for (uint q = 0; q < PA; q++) store_a(tid + q * NT, ra[q]);
        [[unroll]] for (uint q = 0; q < PB; q++) store_b(tid + q * NT, rb[q]);
        barrier();
        // The next tiles travel from memory while this one is computed.
        uint k1 = k0 + BK;
        if (k1 < p.k) {
            bool k_in = k1 + BK <= p.k;
            [[unroll]] for (uint q = 0; q < PA; q++) ra[q] = piece_a(tid + q * NT, i0, k1, rows_in && k_in);
            [[unroll]] for (uint q = 0; q < PB; q++) rb[q] = piece_b(tid + q * NT, k1, j0, cols_in && k_in);
        }
        [[unroll]] for (uint kk = 0; kk < BK; kk++) {
            vec4 av[G], bv[G];
            [[unroll]] for (uint g = 0; g < G; g++) av[g] = As[kk * LA4 + tx + TX * g];
            [[unroll]] for (uint h = 0; h < G; h++) bv[h] = Bs[kk * LB4 + ty + TY * h];
            [[unroll]] for (uint h = 0; h < G; h++)
                [[unroll]] for (uint q = 0; q < 4; q++)
                    [[unroll]] for (uint g = 0; g < G; g++)
                        acc[(4 * h + q) * G + g] = fma(av[g], vec4(bv[h][q]), acc[(4 * h + q) * G + g]);
        }
        // The next step overwrites the tiles: everyone must be done reading.
        barrier();
    }

    [[unroll]] for (uint h = 0; h < G; h++)
        [[unroll]] for (uint q = 0; q < 4; q++)
            [[unroll]] for (uint g = 0; g < G; g++) {
                uint i = i0 + (tx + TX * g) * 4, j = j0 + (ty + TY * h) * 4 + q;
                write4(i, j, acc[(4 * h + q) * G + g], rows_in && cols_in);
            }
    if (EPI == EPI_DENSE && !gemm_act_inline(ACT)) {  // see gemm_activate
        [[dont_unroll]] for (uint t = 0; t < TT * TT; t++) {
            uint c = t / TT, r = t - c * TT;
            uint i = i0 + (tx + TX * (r / 4)) * 4 + r % 4, j = j0 + (ty + TY * (c / 4)) * 4 + c % 4;
            if (i < p.m && j < p.n) gemm_activate(ACT, i, j);
        }
    }
}

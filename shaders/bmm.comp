#version 450
// bmm: the strided batched product, C_z ← α·op(A_z)·op(B_z) + β·C_z for the
// block z = gl_WorkGroupID.z of the dispatch, X_z at element z·sx from the
// address of X_0 (src/vulkan/kernels_bmm.cpp). A shared-memory tiled GEMM
// (mm_tiled.comp's scheme, one element of c per invocation): per step of TS
// values of k a TS×TS tile of op(A) and of op(B) is staged, loads coalesced for
// either transpose. Every shared element is written (zero past the edges)
// before the barrier that precedes its first read. The k loop runs at most
// kMaxK/TS times (the host cuts longer k into dispatches).
#include "gemm.glsl"

layout(constant_id = 0) const uint TS = 16;  // the workgroup is TS×TS
layout(constant_id = 1) const uint TSY = 16; // = TS
layout(constant_id = 2) const uint TA = 0;
layout(constant_id = 3) const uint TB = 0;
// 0: no shared memory and no barrier, each invocation sums its element from
// memory (software drivers, where a workgroup barrier is costly: lavapipe ran
// the tiled form 18× slower than a loop of mm); 1: the tiled form.
layout(constant_id = 4) const uint TILED = 1;
layout(local_size_x_id = 0, local_size_y_id = 1) in;

layout(push_constant) uniform BmmPush {
    uvec2 a, b, c;      // element (0, 0) of A_0, B_0, C_0
    uint m, n, k;       // each block: op(A) m×k, op(B) k×n, C m×n
    uint lda, ldb;      // stored leading dimensions of A and B
    uint crs, ccs;      // buffer steps between rows / columns of C
    uint sa, sb, sc;    // elements from one block to the next
    float alpha, beta;
} p;

const uint L = TS + 1;  // one word of padding per k row
shared float As[TS * L];
shared float Bs[TS * L];

void main() {
    uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
    uint z = gl_WorkGroupID.z;
    uvec2 A = gemm_addr(p.a, z * p.sa), B = gemm_addr(p.b, z * p.sb), C = gemm_addr(p.c, z * p.sc);
    uint i0 = gl_WorkGroupID.x * TS, j0 = gl_WorkGroupID.y * TS;
    // Which tile element this invocation loads: consecutive tx read consecutive addresses.
    uint ar = TA != 0 ? ty : tx, ak = TA != 0 ? tx : ty;  // op(A)(i0 + ar, k0 + ak)
    uint bk = TB != 0 ? ty : tx, bc = TB != 0 ? tx : ty;  // op(B)(k0 + bk, j0 + bc)
    float acc = 0.0;
    if (TILED == 0) {
        uint i = i0 + tx, j = j0 + ty;
        if (i >= p.m || j >= p.n) return;
        for (uint l = 0; l < p.k; l++)
            acc = fma(gemm_load(A, TA != 0 ? l + i * p.lda : i + l * p.lda),
                      gemm_load(B, TB != 0 ? j + l * p.ldb : l + j * p.ldb), acc);
    } else for (uint k0 = 0; k0 < p.k; k0 += TS) {
        uint i = i0 + ar, ka = k0 + ak;
        float av = 0.0;
        if (i < p.m && ka < p.k) av = gemm_load(A, TA != 0 ? ka + i * p.lda : i + ka * p.lda);
        As[ak * L + ar] = av;
        uint kb = k0 + bk, j = j0 + bc;
        float bv = 0.0;
        if (kb < p.k && j < p.n) bv = gemm_load(B, TB != 0 ? j + kb * p.ldb : kb + j * p.ldb);
        Bs[bk * L + bc] = bv;
        barrier();
        [[unroll]] for (uint kk = 0; kk < TS; kk++) acc = fma(As[kk * L + tx], Bs[kk * L + ty], acc);
        // The next step overwrites the tiles: everyone must be done reading.
        barrier();
    }
    uint i = i0 + tx, j = j0 + ty;
    if (i < p.m && j < p.n) {
        uint e = i * p.crs + j * p.ccs;
        float v = p.alpha * acc;
        if (p.beta != 0.0) v += p.beta * gemm_load(C, e);  // β = 0: c may hold NaN, never read
        gemm_store(C, e, v);
    }
}

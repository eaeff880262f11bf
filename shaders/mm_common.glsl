// What both mm variants share: the push-constant block and the fused
// epilogue. Included after gemm.glsl.
// mm / dense: c ← α·op(a)·op(b) + β·c, or c ← act(op(a)·op(b) + bias).
// op() is chosen by spec constants TA/TB; c may be any view (crs/ccs steps).
layout(push_constant) uniform GemmPush {
    uvec2 a, b, c, bias;
    uint m, n, k;
    uint lda, ldb;
    uint crs, ccs;  // buffer steps between consecutive rows / columns of c
    uint binc;      // bias element step
    float alpha, beta;
} p;

void gemm_epilogue(uint epi, uint act, uint i, uint j, float acc) {
    uint e = i * p.crs + j * p.ccs;  // c's element (i, j)
    float v;
    if (epi == EPI_DENSE) {
        v = act_f(act, acc + gemm_load(p.bias, i * p.binc));
    } else {
        v = p.alpha * acc;
        if (p.beta != 0.0) v += p.beta * gemm_load(p.c, e);  // β = 0: c may hold NaN, never read
    }
    gemm_store(p.c, e, v);
}

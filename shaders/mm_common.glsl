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

// Activations without `precise` steps, applied in the unrolled epilogue
// itself; the others are gemm_activate's (below).
bool gemm_act_inline(uint act) { return act == ACT_IDENTITY || act == ACT_relu || act == ACT_leaky_relu; }

// dense: c ← act(acc + bias[i]), or only acc + bias[i] where the activation is
// not inline: the shader then calls gemm_activate for the same elements
// afterwards (the same value: the sum is rounded to float either way).
void gemm_epilogue(uint epi, uint act, uint i, uint j, float acc) {
    uint e = i * p.crs + j * p.ccs;  // c's element (i, j)
    float v;
    if (epi == EPI_DENSE) {
        v = acc + gemm_load(p.bias, i * p.binc);
        if (gemm_act_inline(act)) v = act_f(act, v);
    } else {
        v = p.alpha * acc;
        if (p.beta != 0.0) v += p.beta * gemm_load(p.c, e);  // β = 0: c may hold NaN, never read
    }
    gemm_store(p.c, e, v);
}

// c(i, j) ← act(c(i, j)), after gemm_epilogue stored it, for the activations
// that are not inline (sigmoid, tanh, elu, gelu, softplus: exp_f and the
// double-float steps are `precise`). The shaders call this in a loop of its
// own that is never unrolled, outside their unrolled epilogue loops: spirv-opt's loop unroller (as SwiftShader runs it once
// specialization constants are frozen, see src/vulkan/spirv_specialize.hpp)
// drops the NoContraction decorations from every copy but the first
// (KhronosGroup/SPIRV-Tools#5902), and its folding then undoes the exact
// pairs of act_f's double-float steps (gelu, softplus). One copy also keeps
// the JIT's code small.
void gemm_activate(uint act, uint i, uint j) {
    uint e = i * p.crs + j * p.ccs;
    gemm_store(p.c, e, act_f(act, gemm_load(p.c, e)));
}

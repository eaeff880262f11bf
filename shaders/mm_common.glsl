// What both mm variants share: the push-constant block and the fused
// epilogue. Included after gemm.glsl.
// mm / dense: c ← α·op(a)·op(b) + β·c, or c ← act(op(a)·op(b) + bias).
// op() is chosen by spec constants TA/TB; c may be any view (crs/ccs steps).
// Operand addresses: uvec2 (low word, high word; see gemm.glsl), or one
// uint64_t in mm_regblock_i64.comp (the same 8 bytes of the push constants),
// where c's element offsets are also formed in 64 bits. The epilogue forms
// c's address once for the read and the store: a 32-bit index widened at
// each store, or the address formed twice, made lavapipe's mm slower.
#ifdef GEMM_TEXEL
// mm_regblock_tex: c is a storage texel buffer of its block (binding 4;
// imageLoad and imageStore are gathers and scatters for the subgroup on
// lavapipe, a buffer reference a loop over the lanes), p.c a float index in
// it; the bias stays an address.
layout(set = 0, binding = 4, r32f) uniform imageBuffer tc;
#define GEMM_ADDR uint64_t
#define GEMM_INDEX uint64_t
uint64_t gemm_ref(uint64_t a, uint64_t e) { return a + e; }  // element e's index
float gemm_ld(uint64_t r) { return imageLoad(tc, int(r)).x; }
void gemm_st(uint64_t r, float v) { imageStore(tc, int(r), vec4(v)); }
#elif defined(GEMM_INT64)
#define GEMM_ADDR uint64_t
#define GEMM_INDEX uint64_t
uint64_t gemm_ref(uint64_t a, uint64_t e) { return a + e * 4ul; }  // element e's address
float gemm_ld(uint64_t r) { return GemmF32(r).v; }
void gemm_st(uint64_t r, float v) { GemmF32(r).v = v; }
#else
#define GEMM_ADDR uvec2
#define GEMM_INDEX uint
uvec2 gemm_ref(uvec2 a, uint e) { return gemm_addr(a, e); }
float gemm_ld(uvec2 r) { return GemmF32(r).v; }
void gemm_st(uvec2 r, float v) { GemmF32(r).v = v; }
#endif
layout(push_constant) uniform GemmPush {
    GEMM_ADDR a, b, c, bias;
    uint m, n, k;
    uint lda, ldb;
    uint crs, ccs;  // buffer steps between consecutive rows / columns of c
    uint binc;      // bias element step
    float alpha, beta;
    uint sa, sb, sc;  // EPI_BATCHED (bmm): elements from one block of a, b, c to the next
} p;

// Block z's element (0, 0) of the operand at base (EPI_BATCHED; else base):
// z·step elements past it (the host keeps the product below 2^32).
GEMM_ADDR gemm_block(uint epi, GEMM_ADDR base, uint step) {
    if (epi != EPI_BATCHED) return base;
    return gemm_ref(base, GEMM_INDEX(gl_WorkGroupID.z * step));
}

// Activations without `precise` steps, applied in the unrolled epilogue
// itself; the others are gemm_activate's (below).
bool gemm_act_inline(uint act) { return act == ACT_IDENTITY || act == ACT_relu || act == ACT_leaky_relu; }

// dense: c ← act(acc + bias[i]), or only acc + bias[i] where the activation is
// not inline: the shader then calls gemm_activate for the same elements
// afterwards (the same value: the sum is rounded to float either way).
void gemm_epilogue(uint epi, uint act, uint i, uint j, float acc) {
    GEMM_ADDR c = gemm_ref(gemm_block(epi, p.c, p.sc), GEMM_INDEX(i) * p.crs + GEMM_INDEX(j) * p.ccs);  // c's element (i, j)
    float v;
    if (epi == EPI_DENSE) {
        v = acc + gemm_load(p.bias, i * p.binc);
        if (gemm_act_inline(act)) v = act_f(act, v);
    } else {
        v = p.alpha * acc;
        if (p.beta != 0.0) v += p.beta * gemm_ld(c);  // β = 0: c may hold NaN, never read
    }
    gemm_st(c, v);
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
#ifdef GEMM_TEXEL
    gemm_st(gemm_ref(p.c, e), act_f(act, gemm_ld(gemm_ref(p.c, e))));
#else
    gemm_store(p.c, e, act_f(act, gemm_load(p.c, e)));  // dense only: never batched
#endif
}

#version 450
// mm_regblock_i64.comp with op(a) and op(b) read through uniform texel
// buffers (GEMM_TEXEL): on lavapipe a texelFetch is one gather for the
// subgroup, ~9 ns of processor time per 8 lanes for four floats against ~74
// for one float through a buffer reference (docs/gemm.md, "mm_regblock_tex_i64").
// The host chooses it only where the device has push descriptors and both
// operands lie in blocks within maxTexelBufferElements; c and the bias are
// still reached by address.
#define GEMM_INT64 1
#define GEMM_TEXEL 1
#include "mm_regblock.glsl"

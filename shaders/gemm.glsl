// Shared declarations of the GEMM family (mm_regblock.comp, mm_tiled.comp,
// mv.comp, rk.comp): buffer references, loads and activations. Every operand is a buffer device address of the view's
// element (0, 0) (offset already applied on the host); addresses and element
// indices are 64-bit, so no view is limited by maxStorageBufferRange.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_control_flow_attributes : require

layout(buffer_reference, std430, buffer_reference_align = 4) buffer GemmF32 { float v; };
// 8-byte loads are used only when the host proved the address and the leading
// dimension even (the "pair" variants), so the alignment claim is true.
layout(buffer_reference, std430, buffer_reference_align = 8) buffer GemmU64 { uint64_t v; };

float gemm_load(uint64_t addr) { return GemmF32(addr).v; }
void gemm_store(uint64_t addr, float v) { GemmF32(addr).v = v; }
vec2 gemm_load2(uint64_t addr) {
    uvec2 u = unpackUint2x32(GemmU64(addr).v);
    return uintBitsToFloat(u);
}

// Epilogue kinds (spec constant EPI). The activations (spec constant ACT,
// vela::Act) are act_f of the generated ops.glsl: the same functions as the
// elementwise kernels, so dense(w, x, b, y, act) equals mm + add_bias + act.
const uint EPI_AXPBY = 0;  // c ← α·acc + β·c; c is not read when β = 0
const uint EPI_DENSE = 1;  // c ← act(acc + bias[i])
#include "ops.glsl"

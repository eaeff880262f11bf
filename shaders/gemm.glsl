// Shared declarations of the GEMM family (mm_regblock.comp, mm_tiled.comp,
// mv.comp, rk.comp): buffer references, loads and activations. Every operand is a buffer device address of the view's
// element (0, 0) (offset already applied on the host), a uvec2 of 32-bit
// words as in common.glsl; element indices are 32-bit, addresses carry into
// the high word, so no view is limited by maxStorageBufferRange and no
// 64-bit integer is needed.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require
#ifdef GEMM_INT64  // mm_regblock_i64.comp only: devices with shaderInt64
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#endif
#extension GL_EXT_control_flow_attributes : require

layout(buffer_reference, std430, buffer_reference_align = 4) buffer GemmF32 { float v; };
// 8-byte loads are used only when the host proved the address and the leading
// dimension even (the "pair" variants), so the alignment claim is true.
layout(buffer_reference, std430, buffer_reference_align = 8) buffer GemmV2 { vec2 v; };
// 16-byte loads likewise only where the host proved the address and ld multiples of 4.
layout(buffer_reference, std430, buffer_reference_align = 16) buffer GemmV4 { vec4 v; };

// The address of float element e of the array at a: a + 4·e, with the carry.
uvec2 gemm_addr(uvec2 a, uint e) {
    uint c;
    uint lo = uaddCarry(a.x, e << 2, c);
    return uvec2(lo, a.y + (e >> 30) + c);
}
float gemm_load(uvec2 a, uint e) { return GemmF32(gemm_addr(a, e)).v; }
void gemm_store(uvec2 a, uint e, float v) { GemmF32(gemm_addr(a, e)).v = v; }
vec2 gemm_load2(uvec2 a, uint e) { return GemmV2(gemm_addr(a, e)).v; }
vec4 gemm_load4(uvec2 a, uint e) { return GemmV4(gemm_addr(a, e)).v; }
#ifdef GEMM_INT64
// One 8-byte integer load where the device has them: on lavapipe a vec2 load
// is two per-lane loops, a uint64 load one.
layout(buffer_reference, std430, buffer_reference_align = 8) buffer GemmU64 { uint64_t v; };
vec2 gemm_load2_64(uint64_t addr) { return uintBitsToFloat(unpackUint2x32(GemmU64(addr).v)); }
// gemm_load/gemm_store on a 64-bit address (mm_regblock_i64.comp's push
// constants), with a 32-bit or a 64-bit element index.
float gemm_load(uint64_t a, uint e) { return GemmF32(a + uint64_t(e) * 4ul).v; }
float gemm_load(uint64_t a, uint64_t e) { return GemmF32(a + e * 4ul).v; }
void gemm_store(uint64_t a, uint e, float v) { GemmF32(a + uint64_t(e) * 4ul).v = v; }
void gemm_store(uint64_t a, uint64_t e, float v) { GemmF32(a + e * 4ul).v = v; }
#endif

// Epilogue kinds (spec constant EPI): EPI_AXPBY, EPI_DENSE and EPI_BATCHED,
// the rows of src/vulkan/modes.def (vk::Epi) in the generated modes.glsl.
// EPI_BATCHED is EPI_AXPBY for a strided batched product (VulkanDevice::bmm):
// the dispatch's z index is the block, whose a, b and c lie z·sa, z·sb, z·sc
// elements past those of block 0 (mm_common.glsl's gemm_block; mm_regblock
// only). The activations (spec constant ACT, vela::Act) are act_f of the
// generated ops.glsl: the same functions as the elementwise kernels, so
// dense(w, x, b, y, act) equals mm + add_bias + act.
#include "modes.glsl"
#include "ops.glsl"

// The GEMM family on Vulkan (VulkanDevice::mm, mv, rk, dense in
// kernels_blas.cpp): the variant switch the tests use.
#pragma once
#include "core/device.hpp"
#include "vulkan/kernel.hpp"

namespace vela::vk {

// The shader family used: chosen from Caps (regblock where Caps::software,
// tiled otherwise) unless forced, so the tests run both variants on one
// device. mv follows: regblock = one invocation per row, tiled = one
// workgroup per row with a shared-memory reduction.
enum class GemmVariant : uint8_t { automatic, regblock, tiled };
void force_gemm_variant(GemmVariant v);
// mm_tiled's block of c by name: "128" (128×128, 8×8 per invocation), "64"
// or "32" (4×4); nullptr: chosen by the size of c (VELA_MM_TILE sets it for
// a process). Throws for another name.
void force_gemm_tile(const char* name);

// mm_regblock_tex (operands through texel views, docs/gemm.md) where the
// device and the operands allow it; off: mm_regblock_i64 there (the tests
// run both; VELA_MM_TEXEL=0 starts a process with it off). How many
// dispatches ran on it so far.
void set_gemm_texel(bool on);
uint64_t gemm_texel_count();

// First use of mm's register block (kernels_blas.cpp, stand_in_budget): the
// multiply-adds the 2×4 block may run in a larger block's stead before that
// one is made, per block and device (the 1×1 block in the 2×4 one's stead a
// sixteenth of it); how many products ran on either stand-in so far, and how
// many of those on the 1×1 block (all for the tests).
void set_gemm_stand_in_budget(double multiply_adds);
double gemm_stand_in_budget();
uint64_t gemm_stand_in_count();
uint64_t gemm_small_stand_in_count();

class VulkanDevice;
// A strided batched product for record_gemm: count blocks, sx elements from one block of x to the
// next, at most zmax blocks per dispatch (the device's z limit, and z·sx < 2^32).
struct GemmBatch {
    uint64_t count, zmax;
    uint32_t sa, sb, sc;
};
// VulkanDevice::bmm through the register-blocked mm (the block the dispatch's z index), where mm
// uses it (software drivers, subgroup ballot): true if it recorded the product, false to use bmm.comp.
bool bmm_regblock(VulkanDevice& r, float alpha, const Matrix& a, const Matrix& b, float beta, const Matrix& c,
                  const GemmBatch& batch);

}  // namespace vela::vk

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

}  // namespace vela::vk

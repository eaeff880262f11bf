// The strided batched product on Vulkan (VulkanDevice::bmm in kernels_bmm.cpp):
// the test hooks that lower the blocks per dispatch below the device's
// maxComputeWorkGroupCount[2], so the tests see the split without 65,536 blocks,
// and that choose the shader's variant (shaders/bmm.comp's TILED) on any driver.
#pragma once
#include <cstdint>

namespace vela::vk {

void limit_bmm_blocks(uint32_t blocks);  // 0: the device's limit
void force_bmm_tiled(int tiled);         // -1: tiled except on software drivers; 0 or 1: forced

}  // namespace vela::vk

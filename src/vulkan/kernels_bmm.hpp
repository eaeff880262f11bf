// The strided batched product on Vulkan (VulkanDevice::bmm in kernels_bmm.cpp):
// the test hooks that lower the blocks per dispatch below the device's
// maxComputeWorkGroupCount[2], so the tests see the split without 65,536 blocks,
// and that choose the shader's variant (shaders/bmm.comp's TILED) on any driver.
#pragma once
#include <cstdint>

namespace vela::vk {

void limit_bmm_blocks(uint32_t blocks);  // 0: the device's limit
// -1: the register-blocked mm where mm uses it (software drivers), else bmm.comp tiled; 0 or 1:
// bmm.comp direct or tiled; 2: the register-blocked mm where the device has subgroup ballot.
void force_bmm_tiled(int tiled);

}  // namespace vela::vk

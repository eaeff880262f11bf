// The strided batched product on Vulkan (VulkanDevice::bmm in kernels_bmm.cpp):
// the test hook that lowers the blocks per dispatch below the device's
// maxComputeWorkGroupCount[2], so the tests see the split without 65,536 blocks.
#pragma once
#include <cstdint>

namespace vela::vk {

void limit_bmm_blocks(uint32_t blocks);  // 0: the device's limit

}  // namespace vela::vk

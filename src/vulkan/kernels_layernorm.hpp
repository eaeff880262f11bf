// Test hooks of VulkanDevice's layer norm (kernels_layernorm.cpp).
#pragma once
#include <cstdint>

namespace vela::vk {

// The most rows one invocation loops over per chunk (0: the built-in 4096), so that tests reach the
// chunked path, whose partials a second dispatch combines, with small matrices.
void limit_layernorm_iterations(uint64_t n);

}  // namespace vela::vk

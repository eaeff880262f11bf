// rand and randn: Philox 4x32-10 by logical element index (core/philox.hpp).
#include <vector>

#include "core/philox.hpp"
#include "vulkan/device.hpp"

namespace vela::vk {

void VulkanDevice::random(Dist dist, uint64_t seed, const Matrix& x) {
    if (x.empty()) return;
    std::vector<float> values(size_t(x.size()));
    auto fill = dist == Dist::normal ? philox::fill_normal : philox::fill_uniform;
    fill(seed, 0, x.size(), values.data(), 1);
    upload(x, values.data());
}

}  // namespace vela::vk

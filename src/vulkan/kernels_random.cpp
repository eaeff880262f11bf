// rand and randn (shaders/random.comp): Philox 4x32-10 by logical element
// index, the same values as the CPU device for the same seed.
#include "vulkan/device.hpp"

namespace vela::vk {

namespace {
struct RandomPush {
    View x;
    uint32_t seed_lo = 0, seed_hi = 0, n = 0;
};
}  // namespace

void VulkanDevice::random(Dist dist, uint64_t seed, const Matrix& x) {
    if (x.empty()) return;
    RandomPush p;
    p.x = view(x);
    p.seed_lo = uint32_t(seed);
    p.seed_hi = uint32_t(seed >> 32);
    p.n = uint32_t(x.size());
    const struct {
        uint32_t wg, normal;
    } spec{.wg = wg(), .normal = dist == Dist::normal};  // random.comp: WG, NORMAL
    Dispatch d{.shader = "random", .push = &p, .push_size = sizeof p, .spec = spec, .reads = {}, .writes = {&x},
               .label = dist == Dist::normal ? "randn" : "rand"};
    grid(p.n, wg(), d.groups);
    dispatch(d);
}

}  // namespace vela::vk

// The switch and count of texel.hpp.
#include "vulkan/texel.hpp"

#include <cstdlib>
#include <cstring>

namespace vela::vk {

namespace {
bool on = [] {
    const char* e = std::getenv("VELA_TEXEL");
    return !(e && std::strcmp(e, "0") == 0);
}();
uint64_t dispatches = 0;
}  // namespace

void set_texel_kernels(bool v) { on = v; }
bool texel_kernels_on() { return on; }
uint64_t texel_kernel_count() { return dispatches; }
void count_texel_kernel() { ++dispatches; }

}  // namespace vela::vk

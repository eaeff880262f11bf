// Texel views for kernels other than mm (optim_tex, backward_tex,
// gather_cols_tex, mv_tex; docs/gemm.md): the switch the tests use and what a
// kernel file asks of an operand. The views are the operands' memory blocks'
// (memory.hpp), bound as kernel.hpp's set 0 with push descriptors where
// Caps::texel_views; everywhere else, and for operands a kernel's texel path
// cannot take (not dense from a multiple of four floats, for the four-element
// ones), the kernels keep their buffer-address shaders.
#pragma once
#include "vulkan/device.hpp"

namespace vela::vk {

// On (the default; VELA_TEXEL=0 starts a process with it off): the kernels
// above take their texel shaders where the device and the operands allow it.
// How many dispatches ran on them so far (for the tests).
void set_texel_kernels(bool on);
bool texel_kernels_on();
uint64_t texel_kernel_count();
void count_texel_kernel();
// The device has texel views and the switch is on: the kernels above may take
// their texel shaders, for operands their blocks' views reach.
inline bool texel_kernels(const Caps& caps) { return caps.texel_views && texel_kernels_on(); }

// m's element (0, 0) as a float index into its block's texel views.
inline uint64_t texel_index(const Matrix& m) {
    return VulkanDevice::buffer(m).alloc.offset / 4 + uint64_t(m.offset);
}
// m is one dense run whose first element starts a 16-byte texel of a block
// with texel views (the vec4 texel path applies).
inline bool texel_dense4(const Matrix& m) {
    return m.contiguous() && VulkanDevice::buffer(m).alloc.texel4 && texel_index(m) % 4 == 0;
}

}  // namespace vela::vk

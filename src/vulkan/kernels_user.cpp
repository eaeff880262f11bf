// Kernels written at the prompt (core/user_kernel.hpp): their SPIR-V becomes a
// module of this device's pipelines on first use, and each call is one
// dispatch through the stream like any built-in kernel: hazards, batching of
// command buffers, profile labels and buffer lifetimes are the stream's.
#include <cstring>
#include <algorithm>

#include "core/error.hpp"
#include "vulkan/device.hpp"
#include "vulkan/loop_probe.hpp"

namespace vela::vk {

void VulkanDevice::run_user(const UserCall& call) {
    const UserKernel& k = *call.kernel;
    size_t nm = call.mats.size();
    size_t bytes = nm * kUserViewBytes + 4 + call.scalars.size() * 4;
    if (bytes > kPushBytes || bytes > caps().max_push_constants)
        fail("%s: %zu matrices and %zu scalars need %zu bytes of push constants; at most %u fit", k.name, nm,
             call.scalars.size(), bytes, std::min(kPushBytes, caps().max_push_constants));
    if (call.invocations == 0) return;
    alignas(8) uint8_t push[kPushBytes] = {};
    bool vec4 = k.elementwise;  // every operand one dense 16-byte aligned run: four elements per invocation
    for (size_t i = 0; i < nm; ++i) {
        const Matrix& m = call.mats[i];
        View v = view(m);
        vec4 = vec4 && dense16(m, v);
        if (!k.elementwise) {
            v.rows = uint32_t(m.rows);
            v.pad = uint32_t(m.cols);
        }
        std::memcpy(push + i * kUserViewBytes, &v, sizeof v);
    }
    uint32_t n = uint32_t(call.invocations);
    std::memcpy(push + nm * kUserViewBytes, &n, 4);
    if (!call.scalars.empty()) std::memcpy(push + nm * kUserViewBytes + 4, call.scalars.data(), call.scalars.size() * 4);

    pipelines_.add_module(k.module, *k.spirv);
    const uint64_t loop_at = stream_.loop_status_address();
    const UserSpec spec{.wg = wg(), .vec4 = vec4, .status_lo = uint32_t(loop_at), .status_hi = uint32_t(loop_at >> 32),
                        .chunked = 0, .loop_check = checks_loops(physical().info.driver)};
    uint64_t invocations = vec4 ? (call.invocations + 3) / 4 : call.invocations;
    // Push constants bound a kernel to five matrices. Every operand is read;
    // map kernels write only their last, general kernels may write any.
    Operands ops, last;
    for (size_t i = 0; i < nm; ++i) ops.add(&call.mats[i]);
    if (nm) last.add(&call.mats[nm - 1]);
    bool all = false;
    for (size_t i = 0; i + 1 < nm; ++i) all |= bool(call.written[i]);
    Dispatch d{.shader = k.module, .push = push, .push_size = uint32_t(bytes), .spec = spec, .reads = ops,
               .writes = all || nm == 0 ? ops : last, .label = k.name, .loop_probe = true};
    grid(invocations, wg(), d.groups);
    dispatch(d);
}

}  // namespace vela::vk

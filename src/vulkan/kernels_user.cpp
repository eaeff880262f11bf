// Kernels written at the prompt (core/user_kernel.hpp): their SPIR-V becomes a
// module of this device's pipelines on first use, and each call is one
// dispatch through the stream like any built-in kernel: hazards, batching of
// command buffers, profile labels and buffer lifetimes are the stream's.
#include <cstring>
#include <algorithm>
#include <initializer_list>

#include "core/error.hpp"
#include "vulkan/device.hpp"

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
        vec4 = vec4 && m.contiguous() && v.addr % 16 == 0;
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
    uint64_t loop_at = stream_.loop_status_address();
    uint32_t spec[4] = {wg(), vec4, uint32_t(loop_at), uint32_t(loop_at >> 32)};
    uint64_t invocations = vec4 ? (call.invocations + 3) / 4 : call.invocations;
    // The stream takes its operands as initializer lists; push constants bound
    // a kernel to five matrices. Every operand is read; map kernels write only
    // their last, general kernels may write any.
    const Matrix* m[5] = {};
    for (size_t i = 0; i < nm; ++i) m[i] = &call.mats[i];
    bool all = false;
    for (size_t i = 0; i + 1 < nm; ++i) all |= bool(call.written[i]);
    std::initializer_list<const Matrix*> last = {m[nm ? nm - 1 : 0]};  // lives as long as `last`
    auto go = [&](std::initializer_list<const Matrix*> ops) {
        Dispatch d{.shader = k.module, .push = push, .push_size = uint32_t(bytes), .spec = spec, .spec_count = 4,
                   .reads = ops, .writes = all || nm == 0 ? ops : last, .label = k.name, .loop_probe = true};
        grid(invocations, wg(), d.groups);
        dispatch(d);
    };
    switch (nm) {
    case 0: return go({});
    case 1: return go({m[0]});
    case 2: return go({m[0], m[1]});
    case 3: return go({m[0], m[1], m[2]});
    case 4: return go({m[0], m[1], m[2], m[3]});
    default: return go({m[0], m[1], m[2], m[3], m[4]});
    }
}

}  // namespace vela::vk

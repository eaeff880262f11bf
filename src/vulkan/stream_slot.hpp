// Stream::Slot: one command buffer of the ring and what rides with it (its
// fence, timestamp queries, the host-visible step lists of its batches and the
// status words of its index checks). Private to the stream's files:
// stream.cpp (the ring: submission, fences, waits) and stream_dispatch.cpp
// (recording: barriers, batches, dispatches).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "vulkan/stream.hpp"

namespace vela::vk {

struct Stream::Slot {
    OwnedCommandPool pool;
    VkCommandBuffer cb = VK_NULL_HANDLE;
    OwnedFence fence;
    OwnedQueryPool queries;
    uint64_t serial = 0;
    bool pending = false;  // submitted, fence not yet seen signalled
    uint32_t dispatches = 0;  // vkCmdDispatch recorded
    uint32_t kernels = 0;     // kernels recorded, batched or not: submitted at kBatch
    Allocation steps;         // batch step lists (host-visible), reused once the fence signalled
    uint32_t steps_used = 0;  // bytes of `steps` written since begin()
    bool profiled = false;  // timestamps written around each dispatch
    std::vector<std::string> labels;
    std::vector<uint64_t> calls;  // KernelCall ids of the labels
    std::vector<IndexCheck> checks;  // check k's status word: status()[k]
    std::vector<const char*> probed;  // names of the user kernels with a loop probe (Dispatch::loop_probe)
    uint32_t* status() const { return reinterpret_cast<uint32_t*>(steps.mapped + kStatusAt); }
    // Status words after the step lists: kBatch steps and kBatch + 1 list headers.
    static constexpr uint32_t kStatusAt = kBatch * (sizeof(ElementPush) + 16) + 16;
};

}  // namespace vela::vk

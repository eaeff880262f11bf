// A matrix's storage on a Vulkan device: a range of a memory block, plus what
// the stream needs to order work on it (the barrier epochs of its last read
// and write) and to free it safely (the last submission that uses it).
#pragma once
#include "core/matrix.hpp"
#include "vulkan/memory.hpp"

namespace vela::vk {

class Stream;

class VulkanBuffer final : public Buffer {
public:
    VulkanBuffer(Device* dev, DType dtype, size_t count, Stream& stream, Allocation alloc)
        : Buffer(dev, dtype, count), alloc(alloc), stream_(stream) {}
    ~VulkanBuffer() override { release(); }

    Allocation alloc;
    // Hazard tracking (see Stream::dispatch): barrier epoch of the last recorded read and write.
    uint64_t read_epoch = 0, write_epoch = 0;
    // Serial of the last command buffer that reads or writes it, and that writes it.
    uint64_t last_use = 0, last_write = 0;
    // Inside a batch (Stream::add_step): the stream's step stamp of the last read and write.
    uint64_t step_read = 0, step_write = 0;

protected:
    void free_storage() override;

private:
    Stream& stream_;
};

}  // namespace vela::vk

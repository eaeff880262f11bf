// Device memory: a sub-allocator over large blocks, so a small matrix never
// costs a vkAllocateMemory. Each block is one VkDeviceMemory bound to one
// VkBuffer made with SHADER_DEVICE_ADDRESS usage; an allocation is a range
// of a block, addressed by the block's device address plus its offset.
// Two pools: `device` (where matrices live; mapped when the device memory
// is host-visible, as on lavapipe and integrated GPUs) and `host` (host-visible
// memory for staging and read-backs, the device pool itself when mapped).
#pragma once
#include <vulkan/vulkan.h>

#include <map>
#include <memory>
#include <vector>

#include "core/device.hpp"
#include "vulkan/check.hpp"
#include "vulkan/context.hpp"

namespace vela::vk {

struct Block;

struct Allocation {
    Block* block = nullptr;
    VkDeviceSize offset = 0;
    VkDeviceSize size = 0;
    uint64_t address = 0;      // device address of the first byte
    uint8_t* mapped = nullptr;  // host pointer to the first byte, when host-visible
    explicit operator bool() const { return block != nullptr; }
};

enum class Pool : uint8_t { device, host };

class Memory {
public:
    // force_staging: treat device memory as not mappable (tests the staging path on lavapipe).
    Memory(Gpu& gpu, std::string device_name, bool force_staging);
    ~Memory();
    Memory(const Memory&) = delete;
    Memory& operator=(const Memory&) = delete;

    // Throws vela::Error on exhaustion; the allocator stays consistent and usable.
    Allocation alloc(VkDeviceSize bytes, Pool pool);
    void free(const Allocation& a);

    bool device_mapped() const { return mapped_; }
    MemoryInfo info() const;

private:
    struct PoolState {
        uint32_t type = 0;
        uint32_t heap = 0;
        bool mapped = false;
        VkDeviceSize reserved = 0;
        std::vector<std::unique_ptr<Block>> blocks;
    };
    Block* new_block(PoolState& p, VkDeviceSize size, bool dedicated);
    void drop_block(PoolState& p, Block* b);

    Gpu& gpu_;
    std::string name_;
    bool mapped_ = false;
    PoolState device_, host_;
    bool separate_host_ = false;  // host pool differs from the device pool
    VkDeviceSize block_size_ = 0, max_alloc_ = 0;
    uint64_t used_ = 0, reserved_ = 0;
};

}  // namespace vela::vk

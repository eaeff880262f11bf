// Device memory: a sub-allocator over large blocks, so a small matrix never
// costs a vkAllocateMemory. Each block is one VkDeviceMemory bound to one
// VkBuffer made with SHADER_DEVICE_ADDRESS usage; an allocation is a range
// of a block, addressed by the block's device address plus its offset.
// Two pools: `device` (where matrices live; mapped when the device memory
// is host-visible, as on lavapipe and integrated GPUs) and `host` (host-visible
// memory for staging and read-backs, the device pool itself when mapped).
#pragma once
#include <vulkan/vulkan.h>

#include <functional>
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
    // The block's texel views (R32_SFLOAT, R32G32B32A32_SFLOAT) where it has
    // them (Caps::texel_views, the block within maxTexelBufferElements
    // floats); the first float's index in them is offset / 4.
    // texel_store: R32_SFLOAT as a storage texel buffer (mm_regblock_tex's c).
    VkBufferView texel1 = VK_NULL_HANDLE, texel4 = VK_NULL_HANDLE, texel_store = VK_NULL_HANDLE;
    VkBufferView texel_store4 = VK_NULL_HANDLE;  // R32G32B32A32_SFLOAT, storage (optim_tex)
    VkBufferView texel_u8x4 = VK_NULL_HANDLE;    // R8G8B8A8_UINT, uniform (gather_cols_tex's uint8 src)
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
    // Before failing it calls the reclaim hook (the stream waits for the work
    // still using released memory and frees it), gives empty blocks back and
    // tries once more.
    Allocation alloc(VkDeviceSize bytes, Pool pool);
    void set_reclaim(std::function<bool()> reclaim) { reclaim_ = std::move(reclaim); }
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
    Allocation try_alloc(VkDeviceSize size, PoolState& p);
    void trim(PoolState& p);  // gives every empty shared block back to the driver
    VkDeviceSize heap_size(const PoolState& p) const;  // the heap, or VELA_VK_HEAP_LIMIT when smaller
    VkDeviceSize shared_block_size(const PoolState& p, VkDeviceSize request) const;
    Block* new_block(PoolState& p, VkDeviceSize size, bool dedicated, VkDeviceSize request);
    void drop_block(PoolState& p, Block* b);

    Gpu& gpu_;
    std::string name_;
    bool mapped_ = false;
    PoolState device_, host_;
    bool separate_host_ = false;  // host pool differs from the device pool
    VkDeviceSize block_size_ = 0, max_alloc_ = 0;
    uint64_t used_ = 0, reserved_ = 0;
    uint64_t live_ = 0;              // allocations not yet freed
    VkDeviceSize heap_limit_ = 0;    // VELA_VK_HEAP_LIMIT in bytes; 0: none
    std::function<bool()> reclaim_;
};

}  // namespace vela::vk

// VkResult checking and small owning handles. Every Vulkan call's result goes
// through check(), which turns a failure into vela::Error naming the call, so
// device loss and exhaustion reach Lua as ordinary errors. Handles own one
// Vulkan object each and destroy it in their destructor: no raw vkDestroy*
// outside this file's wrappers.
#pragma once
#include <vulkan/vulkan.h>

#include <utility>

namespace vela::vk {

const char* result_name(VkResult r);
// Throws vela::Error("<call>: <result name>") unless r is VK_SUCCESS (or an
// allowed non-error such as VK_TIMEOUT / VK_INCOMPLETE, returned as-is).
VkResult check(VkResult r, const char* call);
// Whether check() has seen VK_ERROR_DEVICE_LOST in this process (the
// validation messages at teardown, context.cpp).
bool device_lost_seen();

// A zeroed Vulkan structure with its sType set (brace-initialising only sType warns under -Wextra).
template <typename T>
T make(VkStructureType type) {
    T t{};
    t.sType = type;
    return t;
}

// An object created from a VkDevice and destroyed with vkDestroyX(device, h, nullptr).
template <typename H, void (*Destroy)(VkDevice, H, const VkAllocationCallbacks*)>
class Owned {
public:
    Owned() = default;
    Owned(VkDevice dev, H h) : dev_(dev), h_(h) {}
    Owned(Owned&& o) noexcept : dev_(o.dev_), h_(std::exchange(o.h_, VK_NULL_HANDLE)) {}
    Owned& operator=(Owned&& o) noexcept {
        if (this != &o) {
            reset();
            dev_ = o.dev_;
            h_ = std::exchange(o.h_, VK_NULL_HANDLE);
        }
        return *this;
    }
    Owned(const Owned&) = delete;
    Owned& operator=(const Owned&) = delete;
    ~Owned() { reset(); }

    void reset() {
        if (h_ != VK_NULL_HANDLE) Destroy(dev_, h_, nullptr);
        h_ = VK_NULL_HANDLE;
    }
    H get() const { return h_; }
    operator H() const { return h_; }
    explicit operator bool() const { return h_ != VK_NULL_HANDLE; }

private:
    VkDevice dev_ = VK_NULL_HANDLE;
    H h_ = VK_NULL_HANDLE;
};

using OwnedBuffer = Owned<VkBuffer, vkDestroyBuffer>;
using OwnedMemory = Owned<VkDeviceMemory, vkFreeMemory>;
using OwnedShader = Owned<VkShaderModule, vkDestroyShaderModule>;
using OwnedPipeline = Owned<VkPipeline, vkDestroyPipeline>;
using OwnedLayout = Owned<VkPipelineLayout, vkDestroyPipelineLayout>;
using OwnedPipelineCache = Owned<VkPipelineCache, vkDestroyPipelineCache>;
using OwnedCommandPool = Owned<VkCommandPool, vkDestroyCommandPool>;
using OwnedFence = Owned<VkFence, vkDestroyFence>;
using OwnedQueryPool = Owned<VkQueryPool, vkDestroyQueryPool>;
using OwnedBufferView = Owned<VkBufferView, vkDestroyBufferView>;
using OwnedSetLayout = Owned<VkDescriptorSetLayout, vkDestroyDescriptorSetLayout>;

}  // namespace vela::vk

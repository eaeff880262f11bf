// The Vulkan context: the one instance (with the validation layer and its
// message counter when asked for), the physical devices it sees, and a
// logical device per physical device, made once, on first use. Owns nothing
// below the VkDevice: memory, pipelines and the stream are the device's.
#pragma once
#include <vulkan/vulkan.h>

#include <memory>
#include <string>
#include <vector>

#include "core/registry.hpp"
#include "vulkan/kernel.hpp"

namespace vela::vk {

// True when the environment variable is set to something other than "" or "0".
bool env_on(const char* name);

// One physical device as the context sees it: what enumerate() reports and
// what opening it needs.
struct PhysicalInfo {
    VkPhysicalDevice handle = VK_NULL_HANDLE;
    DeviceInfo info;
    Caps caps;
    VkPhysicalDeviceProperties props{};
    VkPhysicalDeviceMemoryProperties memory{};
    uint32_t queue_family = 0;  // a compute-capable family
    bool timestamps = false;    // the queue family supports timestamp queries
    uint32_t timestamp_bits = 0;  // its timestampValidBits
    // VK_EXT_conditional_rendering with conditionalRendering: queued dispatches
    // can be skipped after submission (Ctrl-C drops queued work with it).
    bool conditional = false;
    bool push_descriptor = false;  // VK_KHR_push_descriptor (enabled where Caps::texel_views)
};

// A logical device: the VkDevice and its compute queue. Destroyed last by the
// device that owns it (after every buffer, pipeline and command buffer).
class Gpu {
public:
    // extensions: device extensions to enable beyond vela's core set (the cpu's user-kernel runner
    // asks for VK_EXT_external_memory_host); the caller has checked that they exist.
    explicit Gpu(const PhysicalInfo& phys, const std::vector<const char*>& extensions = {});
    ~Gpu();
    Gpu(const Gpu&) = delete;
    Gpu& operator=(const Gpu&) = delete;

    const PhysicalInfo& phys;
    VkDevice device = VK_NULL_HANDLE;
    VkQueue queue = VK_NULL_HANDLE;
};

// Exit handlers and static destructors run in the reverse order of their
// registration. A driver registers its own when its code is loaded or first
// used (NVIDIA's does: on an H100 every process that had used vulkan:0 died
// with SIGSEGV at exit, its work done, when vkDestroyDevice ran from a static
// destructor registered before the driver's). So after each step that may load
// or start driver code (the instance, each logical device, each device's first
// submission) vela registers again a handler that destroys the cpu's user-kernel
// runner, the devices and the instance, in that order; the last one registered
// runs first, before the driver's, and the later calls find nothing to do.
void arm_exit_teardown();

class Context {
public:
    static Context& get();  // made on first use; throws vela::Error without a Vulkan loader/ICD
    ~Context();

    const std::vector<PhysicalInfo>& physical() const { return physical_; }
    VkInstance instance() const { return instance_; }

    // Validation must be chosen before the instance exists; reset() drops the
    // instance when no logical device has been made from it yet.
    static void set_validation(bool on);
    static bool validation();
    static uint64_t messages();
    static bool exists();
    static void reset();

private:
    Context();
    VkInstance instance_ = VK_NULL_HANDLE;
    VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
    std::vector<PhysicalInfo> physical_;
};

}  // namespace vela::vk

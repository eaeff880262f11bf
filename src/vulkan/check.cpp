#include "vulkan/check.hpp"

#include <atomic>

#include "core/error.hpp"

namespace vela::vk {

namespace {
std::atomic<bool> lost{false};
}  // namespace

bool device_lost_seen() { return lost.load(); }

const char* result_name(VkResult r) {
    switch (r) {
    case VK_SUCCESS: return "success";
    case VK_NOT_READY: return "not ready";
    case VK_TIMEOUT: return "timeout";
    case VK_INCOMPLETE: return "incomplete";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "out of host memory";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "out of device memory";
    case VK_ERROR_INITIALIZATION_FAILED: return "initialization failed";
    case VK_ERROR_DEVICE_LOST: return "device lost";
    case VK_ERROR_MEMORY_MAP_FAILED: return "memory map failed";
    case VK_ERROR_LAYER_NOT_PRESENT: return "layer not present";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "extension not present";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "feature not present";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "incompatible driver (no Vulkan ICD found)";
    case VK_ERROR_TOO_MANY_OBJECTS: return "too many objects";
    case VK_ERROR_FORMAT_NOT_SUPPORTED: return "format not supported";
    case VK_ERROR_FRAGMENTED_POOL: return "fragmented pool";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "out of pool memory";
    case VK_ERROR_INVALID_EXTERNAL_HANDLE: return "invalid external handle";
    case VK_ERROR_FRAGMENTATION: return "fragmentation";
    case VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS: return "invalid opaque capture address";
    case VK_PIPELINE_COMPILE_REQUIRED: return "pipeline compile required";
    default: return "unknown VkResult";
    }
}

VkResult check(VkResult r, const char* call) {
    if (r >= 0) return r;
    if (r == VK_ERROR_DEVICE_LOST) {
        lost.store(true);
        fail("%s: device lost (the GPU reset or the driver crashed; matrices on this device are gone, "
             "other devices keep working)",
             call);
    }
    if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
        fail("%s: %s (free matrices with m:release() or use smaller ones; the session is intact)", call,
             result_name(r));
    fail("%s: %s (VkResult %d)", call, result_name(r), int(r));
}

}  // namespace vela::vk

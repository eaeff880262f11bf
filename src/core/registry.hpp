// The device registry: which devices exist, how a user names one, and the
// session's current device. Devices are opened once, on first use, and live
// until exit.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/device.hpp"

namespace vela {

struct DeviceInfo {
    std::string id;              // "cpu", "vulkan:0"
    std::string name;            // "llvmpipe (LLVM 15.0.6, 256 bits)", "NVIDIA H100"
    std::string type;            // "cpu", "integrated gpu", "discrete gpu", "virtual gpu", "software"
    std::string driver;          // driver name, e.g. "llvmpipe", "NVIDIA"
    std::string driver_version;  // e.g. "Mesa 22.3.6"
    std::string api_version;     // e.g. "1.3.230" (vulkan)
    uint64_t memory = 0;         // bytes of the largest device-local heap (cpu: RAM)
    uint32_t subgroup = 0;       // subgroup size (0 on cpu)
    bool software = false;       // a CPU implementation of Vulkan (lavapipe, SwiftShader)
    bool usable = true;
    std::string reason;          // why not usable
    std::vector<std::pair<std::string, std::string>> limits;  // the limits that matter, printable
};

std::vector<DeviceInfo> list_devices();
// "cpu", "vulkan" (first usable), "vulkan:N", or a substring of a Vulkan
// device's name or driver ("vulkan:llvmpipe", "nvidia"). Throws vela::Error
// naming the spec and listing the devices when nothing matches.
Device& get_device(const std::string& spec);
Device& cpu_device();
// First hardware GPU, else cpu; the VELA_DEVICE environment variable overrides.
Device& default_device();
Device& current_device();
void set_current_device(Device& d);
// Every device opened so far (for sync-all, stats, who()).
std::vector<Device*> open_devices();

// Provided by src/vulkan: enumerate and open Vulkan devices. Index is the
// position in the list_devices() Vulkan entries (vulkan:N).
namespace vk {
std::vector<DeviceInfo> enumerate();
Device& open(int index);
// Turn on the Khronos validation layer (before the first device is opened).
void set_validation(bool on);
bool validation_enabled();
// Validation messages seen so far (each also printed to stderr).
uint64_t validation_message_count();
}  // namespace vk

}  // namespace vela

// The device registry: which devices exist, how a user names one, and the
// session's current device. Backends register themselves (register_backend);
// devices are opened once, on first use, and live until exit.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
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

// A family of devices (the cpu, Vulkan), registered once at start-up by the
// code that links the backends in (src/backends.cpp). The registry knows
// nothing else about them.
struct Backend {
    // What a spec names to get the backend's first usable device: "cpu", "vulkan".
    std::string name;
    std::vector<std::string> aliases;  // other specs for the same ("gpu")
    // false: one device whose id is `name` ("cpu"); true: devices "name:N",
    // picked also by number alone ("0") or by a part of their name or driver.
    bool numbered = false;
    // Its devices in order, described; {} when there are none (no driver).
    std::function<std::vector<DeviceInfo>()> enumerate;
    // Opens device `index` of enumerate()'s list on first use; later calls
    // give the same device, alive until exit.
    std::function<Device&(size_t index)> open;
};

// Adds a backend; list_devices() lists backends in the order they registered.
void register_backend(Backend backend);

std::vector<DeviceInfo> list_devices();
// A backend's name or alias ("cpu", "vulkan", "gpu": its first usable
// device), "vulkan:N", or a substring of a numbered backend's device name or
// driver ("vulkan:llvmpipe", "nvidia"). Throws vela::Error naming the spec
// and listing the devices when nothing matches.
Device& get_device(const std::string& spec);
// First usable hardware GPU, else the first backend's first device; the
// VELA_DEVICE environment variable overrides.
Device& default_device();
Device& current_device();
void set_current_device(Device& d);
// Every device opened so far (for sync-all, stats, who()).
std::vector<Device*> open_devices();
// What its backend says of d now, found by identity (the backend and index
// d was opened as); nothing for a device the registry did not open.
std::optional<DeviceInfo> device_info(const Device& d);

}  // namespace vela

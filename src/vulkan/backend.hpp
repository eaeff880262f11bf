// The Vulkan backend: enumerating and opening Vulkan devices (vulkan:N), the
// validation switch, and its registration with the device registry.
#pragma once
#include <cstdint>
#include <vector>

#include "core/registry.hpp"

namespace vela::vk {

// Index is the position in the Vulkan devices' list (vulkan:N).
std::vector<DeviceInfo> enumerate();
Device& open(int index);
// Turn on the Khronos validation layer (before the first device is opened).
void set_validation(bool on);
bool validation_enabled();
// Validation messages seen so far (each also printed to stderr).
uint64_t validation_message_count();

// Code outside this folder that holds a logical device of the instance (the cpu's user-kernel
// runner, src/userk/host_runner.cpp) registers itself here before it arms the exit teardown
// (context.hpp): the teardown destroys it first, then the devices, then the instance, and
// set_validation refuses while it is open.
struct InstanceUser {
    bool (*open)() = nullptr;
    void (*destroy)() = nullptr;
};
void set_instance_user(InstanceUser user);

// Registers "vulkan" (alias "gpu") with the device registry.
void register_backend();

}  // namespace vela::vk

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

// Registers "vulkan" (alias "gpu") with the device registry; first sets the width of
// lavapipe's vectors (set_lavapipe_width), while the process has one thread.
void register_backend();

// Mesa's llvmpipe (lavapipe) compiles shaders for 256-bit vectors unless
// LP_NATIVE_VECTOR_WIDTH says otherwise, read when the driver initialises. On a
// processor with AVX-512 (F, BW, DQ, VL) and the variable unset, vela sets it
// to 512: lavapipe's subgroup becomes 16 lanes and its mm about twice as fast
// on a Zen 5 (docs/vulkan.md). A variable already set is respected. Before the
// first Vulkan instance; the decision shows in lavapipe's "vector width" limit.
void set_lavapipe_width();

}  // namespace vela::vk

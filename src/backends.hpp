// The backends this build links in, registered with the device registry in
// one place: the core (src/core) names no backend, and a new backend is one
// line in backends.cpp. This is the one file that sees every device folder
// (src/cpu, src/vulkan, src/userk): main.cpp and the Lua bindings reach the
// devices through the registry (core/registry.hpp) and the few calls below.
#pragma once

namespace vela {

// Registers every backend (cpu first, then vulkan); a second call does nothing.
// The cpu device receives its runner of general user kernels here
// (src/userk/host_runner.cpp). main() and the test binary call it before any
// device is used.
void register_backends();

// Turns on the Khronos validation layer for the Vulkan devices (before the first
// is opened; vulkan/backend.hpp's set_validation). For main's --validate.
void set_vulkan_validation(bool on);

}  // namespace vela

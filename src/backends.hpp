// The backends this build links in, registered with the device registry in
// one place: the core (src/core) names no backend, and a new backend is one
// line in backends.cpp.
#pragma once

namespace vela {

// Registers every backend (cpu first, then vulkan); a second call does nothing.
// main(), luaopen_vela and the test binary call it before any device is used.
void register_backends();

}  // namespace vela

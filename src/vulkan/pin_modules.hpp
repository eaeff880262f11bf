// Keeps the shared objects that the Vulkan loader opened mapped until exit, in
// sanitizer builds only (see pin_modules.cpp for why).
#pragma once

namespace vela::vk {

// Pins every shared object loaded so far (RTLD_NODELETE); a no-op unless built
// with AddressSanitizer.
void pin_loaded_modules();

}  // namespace vela::vk

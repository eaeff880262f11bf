// Why this exists: drivers (Mesa's since 22.3.6-1+deb12u2) make one-time
// allocations they never free, and the Vulkan loader dlcloses every driver in
// vkDestroyInstance, which runs from a static destructor before LeakSanitizer's
// exit-time check. LSan then sees the driver's frames as "<unknown module>", so
// tests/lsan.supp, which names driver libraries, cannot match them, and every
// process that touched Vulkan fails. Suppressing "<unknown module>" or turning
// leak detection off would hide vela's own leaks too. Instead, sanitizer builds
// pin each loaded object with RTLD_NODELETE: dlclose then leaves it mapped, the
// leak report names the library, and the suppressions (which list drivers,
// loader and layers only) apply; a leak with a frame in vela's code and none in
// those libraries is still reported.
#include "vulkan/pin_modules.hpp"

#if defined(__SANITIZE_ADDRESS__)
#include <dlfcn.h>
#include <link.h>

#include <string>
#include <vector>
#endif

namespace vela::vk {

void pin_loaded_modules() {
#if defined(__SANITIZE_ADDRESS__)
    std::vector<std::string> names;
    dl_iterate_phdr(
        [](dl_phdr_info* info, size_t, void* out) {
            if (info->dlpi_name && *info->dlpi_name) static_cast<std::vector<std::string>*>(out)->push_back(info->dlpi_name);
            return 0;
        },
        &names);
    // RTLD_NOLOAD: only objects already loaded; the handle adds a reference we keep on purpose.
    for (auto& n : names) (void)dlopen(n.c_str(), RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
#endif
}

}  // namespace vela::vk

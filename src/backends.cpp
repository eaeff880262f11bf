// register_backends(): the cpu, then Vulkan, so that list_devices() shows
// them in that order and the cpu is the fallback default device.
#include "backends.hpp"

#include <mutex>

#include "core/host_memory.hpp"
#include "cpu/cpu_device.hpp"
#include "userk/host_runner.hpp"
#include "vulkan/backend.hpp"

namespace vela {

void register_backends() {
    static std::once_flag once;
    std::call_once(once, [] {
        keep_freed_heap();  // before a driver loads: its compiler's allocations are the reason
        cpu::register_backend(userk::run_on_host);
        vk::register_backend();
    });
}

void set_vulkan_validation(bool on) { vk::set_validation(on); }

}  // namespace vela

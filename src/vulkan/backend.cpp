// The Vulkan backend (vulkan/backend.hpp): enumeration, opening a device once
// on first use, the validation switch, and the registration. Devices live
// until exit and are destroyed before the instance.
#include <cstdlib>
#include <memory>
#include <vector>

#include "core/error.hpp"
#include "vulkan/backend.hpp"
#include "vulkan/context.hpp"
#include "vulkan/device.hpp"

namespace vela::vk {

namespace {

InstanceUser& instance_user() {
    static InstanceUser user;
    return user;
}

// Constructed after the context (open() makes the context first), so destroyed before it.
std::vector<std::unique_ptr<VulkanDevice>>& opened() {
    static std::vector<std::unique_ptr<VulkanDevice>> devices;
    return devices;
}

bool any_open() {
    for (auto& d : opened())
        if (d) return true;
    const InstanceUser& u = instance_user();
    return u.open && u.open();  // the cpu's user-kernel runner holds a device of the instance too
}

// Everything vela made from the instance, newest first, then the instance.
void teardown() {
    if (const InstanceUser& u = instance_user(); u.destroy) u.destroy();
    opened().clear();
    Context::reset();
}

}  // namespace

void set_instance_user(InstanceUser user) { instance_user() = user; }

void arm_exit_teardown() { std::atexit(teardown); }

std::vector<DeviceInfo> enumerate() {
    std::vector<DeviceInfo> out;
    try {
        for (const PhysicalInfo& p : Context::get().physical()) out.push_back(p.info);
    } catch (const Error&) {
        // No Vulkan loader or driver: there are simply no Vulkan devices.
    }
    return out;
}

Device& open(int index) {
    Context& ctx = Context::get();
    auto& phys = ctx.physical();
    if (index < 0 || size_t(index) >= phys.size())
        fail("device: vulkan:%d does not exist (%zu Vulkan device%s found)", index, phys.size(),
             phys.size() == 1 ? "" : "s");
    const PhysicalInfo& p = phys[size_t(index)];
    if (!p.info.usable) fail("device: %s (%s) is not usable: %s", p.info.id.c_str(), p.info.name.c_str(), p.info.reason.c_str());
    auto& devs = opened();
    if (devs.size() < phys.size()) devs.resize(phys.size());
    if (!devs[size_t(index)]) devs[size_t(index)] = std::make_unique<VulkanDevice>(p, p.info.id, env_on("VELA_VK_STAGING"));
    return *devs[size_t(index)];
}

void set_validation(bool on) {
    if (on == Context::validation()) return;
    if (any_open())
        fail("set_validation: Vulkan devices are already open; enable validation before the first use of a "
             "Vulkan device (VELA_VALIDATE=1 or --validate)");
    Context::set_validation(on);
    if (Context::exists()) Context::reset();  // the next use makes an instance with the new choice
}

bool validation_enabled() { return Context::validation(); }
uint64_t validation_message_count() { return Context::messages(); }

void register_backend() {
    set_lavapipe_width();
    Backend b;
    b.name = "vulkan";
    b.aliases = {"gpu"};
    b.numbered = true;
    b.enumerate = enumerate;
    b.open = [](size_t index) -> Device& { return open(int(index)); };
    vela::register_backend(std::move(b));
}

}  // namespace vela::vk

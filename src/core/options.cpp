// Device options: a device has none unless it overrides these.
#include "core/device.hpp"
#include "core/error.hpp"

namespace vela {

void Device::set_option(const std::string& name, int64_t) {
    fail("option: %s has no option '%s'", this->name().c_str(), name.c_str());
}

int64_t Device::option(const std::string& name) const {
    fail("option: %s has no option '%s'", this->name().c_str(), name.c_str());
}

}  // namespace vela

// Runs a test body once on each usable device (cpu and every Vulkan device the
// run sees), naming the device in failures; an exception fails that device's
// run and the others still go.
#pragma once
#include <catch2/catch.hpp>

#include <exception>
#include <functional>

#include "core/device.hpp"
#include "core/registry.hpp"

namespace vela::test {

inline void on_every_device(const std::function<void(Device&)>& body) {
    for (const DeviceInfo& info : list_devices()) {
        if (!info.usable) continue;
        Device& d = get_device(info.id);
        INFO("device " << d.name());
        try {
            body(d);
            d.sync();
        } catch (const std::exception& e) {
            FAIL_CHECK(d.name() << " threw: " << e.what());
        }
    }
}

}  // namespace vela::test

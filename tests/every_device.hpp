// Runs a test body once on each usable device (cpu and every Vulkan device the
// run sees), naming the device in failures; an exception fails that device's
// run and the others still go. Also the usable devices as a list, and test
// data independent of anything under test.
#pragma once
#include <catch2/catch.hpp>

#include <cstdint>
#include <exception>
#include <functional>
#include <vector>

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

inline std::vector<Device*> usable_devices() {
    std::vector<Device*> out;
    for (const DeviceInfo& info : list_devices())
        if (info.usable) out.push_back(&get_device(info.id));
    return out;
}

// n splitmix64 values in [lo, hi), each a multiple of (hi − lo)/2^24.
inline std::vector<float> splitmix_values(size_t n, uint64_t seed, double lo = -4, double hi = 4) {
    std::vector<float> v(n);
    uint64_t s = seed;
    for (float& e : v) {
        uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
        e = float(lo + (hi - lo) * double(z >> 40) / double(1 << 24));
    }
    return v;
}

}  // namespace vela::test

// The Vulkan device's own behaviour, beyond the shared kernel body
// (test_kernels.cpp runs that on vulkan:0): the stream (batching, one host
// wait, barriers, deferred frees, interruption), memory (out of memory,
// reuse, staging), large grids and 64-bit addressing, transfers, and
// validation. Every test ends by checking that the validation layer (on
// under scripts/test.sh) reported nothing.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/ops.hpp"
#include "core/registry.hpp"

using namespace vela;

namespace {

Device& gpu() { return get_device("vulkan:0"); }

// Checks the validation layer's count did not move during a test.
struct NoValidationMessages {
    uint64_t before = vk::validation_message_count();
    ~NoValidationMessages() { CHECK(vk::validation_message_count() == before); }
};

std::vector<float> iota(int64_t n, float scale = 1.0f, float shift = 0.0f) {
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[size_t(i)] = float(i) * scale + shift;
    return v;
}

template <class F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("vulkan: enumerate lists lavapipe with driver, memory, limits", "[vulkan]") {
    NoValidationMessages guard;
    auto devs = vk::enumerate();
    REQUIRE(!devs.empty());
    const DeviceInfo& d = devs[0];
    CHECK(d.id == "vulkan:0");
    CHECK(!d.name.empty());
    CHECK(!d.driver.empty());
    CHECK(!d.driver_version.empty());
    CHECK(d.memory > 0);
    CHECK(d.subgroup > 0);
    CHECK(!d.limits.empty());
    if (d.driver == "llvmpipe") {
        CHECK(d.software);
        CHECK(d.type == "software");
    }
    CHECK(d.usable);
}

TEST_CASE("vulkan: cpu -> vulkan:0 -> cpu round trip is identical", "[vulkan]") {
    NoValidationMessages guard;
    Device& cpu = cpu_device();
    std::vector<float> v = iota(37 * 23, 0.37f, -100.0f);
    v[5] = 1e-38f;
    v[6] = -0.0f;
    v[7] = 3.4e38f;
    Matrix a = from_host(cpu, 37, 23, v.data());
    Matrix g = to_device(a, gpu());
    Matrix back = to_device(g, cpu);
    std::vector<float> out = to_host(back);
    REQUIRE(out.size() == v.size());
    CHECK(std::memcmp(out.data(), v.data(), v.size() * 4) == 0);

    // uint8 too, and strided, transposed views in both directions.
    std::vector<uint8_t> bytes(300);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = uint8_t(i * 7);
    Matrix u = from_host_u8(gpu(), 20, 15, bytes.data());
    std::vector<float> uf = to_host(u);
    for (size_t i = 0; i < bytes.size(); ++i) REQUIRE(uf[i] == float(bytes[i]));

    Matrix t = view(g, 2, 3, 5, 4).t();  // 4×5, transposed, ld 37, offset
    std::vector<float> tv = to_host(t);
    for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j < 5; ++j) REQUIRE(tv[size_t(i + j * 4)] == v[size_t((2 + j) + (3 + i) * 37)]);
}

TEST_CASE("vulkan: 1000 small dependent kernels then one read is one host wait", "[vulkan]") {
    NoValidationMessages guard;
    Device& d = gpu();
    Matrix x = zeros(d, 16, 1);
    Matrix y = zeros(d, 16, 1);
    d.sync();
    DeviceStats s0 = d.stats();
    // y ← 1·x + 1·y, then x ← y: each depends on the one before it.
    for (int i = 0; i < 500; ++i) {
        fill(x, 1.0f);
        axpy(1.0f, x, y);
    }
    float v = get(y, 3, 0);
    DeviceStats s1 = d.stats();
    CHECK(v == 500.0f);
    CHECK(s1.dispatches - s0.dispatches == 1000);
    CHECK(s1.host_waits - s0.host_waits == 1);
    CHECK(s1.submissions - s0.submissions >= 1);
}

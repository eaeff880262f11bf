// Vulkan devices and memory: enumeration, transfers, a 784×60000 matrix (large
// grids, 64-bit addressing), out of memory and recovery. (Staging: test_vulkan_staging.cpp.)
// Every test ends by checking that the validation layer (on under scripts/test.sh) reported nothing.
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
#include "cpu/cpu_device.hpp"
#include "error_of.hpp"
#include "kernel_reference.hpp"
#include "vulkan/device.hpp"
#include "vulkan_common.hpp"

using namespace vela;
using namespace vela::test;

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

TEST_CASE("vulkan: a 784×60000 matrix (47M elements, > 65,535 workgroups, > 128 MiB)", "[vulkan]") {
    NoValidationMessages guard;
    const int64_t rows = 784, cols = 60000;
    std::vector<uint8_t> px(size_t(rows * cols));
    for (size_t i = 0; i < px.size(); ++i) px[i] = uint8_t((i * 2654435761u) >> 24);
    Matrix u = from_host_u8(gpu(), rows, cols, px.data());
    Matrix f = empty(gpu(), rows, cols);
    copy(u, f);  // 183,750 workgroups of 256: the grid spans y
    double want = 0;
    for (uint8_t p : px) want += p;
    CHECK(std::fabs(sum(f) - want) <= 1e-5 * want);
    // A transposed view of the whole thing, scaled in place, then elements from both ends.
    Matrix t = f.t();  // 60000×784
    scal(0.5f, t);
    CHECK(get(f, 0, 0) == 0.5f * px[0]);
    CHECK(get(f, 783, 59999) == 0.5f * px[px.size() - 1]);
    CHECK(get(t, 59999, 1) == 0.5f * px[size_t(1 + 59999 * 784)]);
    CHECK(imax(col(f, 59999)) >= 0);
    // The last column gathered by index: the data-set path of a training loop.
    float last = float(cols);
    Matrix idx = from_host(gpu(), 1, 1, &last);
    Matrix batch = empty(gpu(), rows, 1);
    gather_cols(u, idx, batch, 1.0f);
    std::vector<float> b = to_host(batch);
    for (int64_t i = 0; i < rows; ++i) REQUIRE(b[size_t(i)] == float(px[size_t(i + (cols - 1) * rows)]));
}

TEST_CASE("vulkan: out of device memory is an error, and memory is usable afterwards", "[vulkan]") {
    NoValidationMessages guard;
    Device& d = gpu();
    d.sync();
    MemoryInfo mi = d.memory();
    REQUIRE(mi.total > 0);
    // More than the whole heap in one matrix.
    std::string e = error_of([&] { empty(d, int64_t(mi.total / 4 / 1024) + 1, 1024); });
    CHECK(!e.empty());
    // Exhaust the heap 256 MiB at a time.
    std::vector<Matrix> held;
    std::string full;
    const int64_t chunk = (256ll << 20) / 4;
    for (uint64_t i = 0; i <= mi.total / (256ull << 20) + 1 && full.empty(); ++i) {
        full = error_of([&] { held.push_back(empty(d, chunk, 1)); });
    }
    CHECK(full.find("out of device memory") != std::string::npos);
    INFO(full);
    for (Matrix& m : held) m.buf->release();
    held.clear();
    // Freed memory is reusable: a large matrix works again.
    Matrix m = empty(d, chunk, 1);
    fill(m, 3.0f);
    CHECK(get(m, chunk - 1, 0) == 3.0f);
}

// Host-side costs of the Vulkan stream, measured (hidden from CTest: run with
// `build/vela_tests "[vulkan-bench]"`): the time to record one kernel, and
// small dependent kernels per second, each dispatched on its own and batched.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>

#include "core/ops.hpp"
#include "core/registry.hpp"
#include "vulkan/device.hpp"

using namespace vela;

namespace {
double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

TEST_CASE("vulkan bench: recording cost and batched dispatch rate", "[.][vulkan-bench]") {
    Device& d = get_device("vulkan:0");
    auto& stream = dynamic_cast<vk::VulkanDevice&>(d).stream();
    Matrix x = zeros(d, 64, 1);
    Matrix y = zeros(d, 64, 1);
    d.sync();
    auto measure = [&](const char* mode) {
        // Recording only: 200 kernels stay below the submission bound, so nothing is submitted or waited for.
        double record = 0;
        int recorded = 0;
        for (int rep = 0; rep < 200; ++rep) {
            double t0 = now();
            for (int i = 0; i < 100; ++i) {
                axpy(1.0f, x, y);
                scal(0.5f, y);
            }
            record += now() - t0;
            recorded += 200;
            d.sync();
        }
        // Throughput: 100k small dependent kernels (64 elements each), then one sync.
        const int n = 100000;
        double t0 = now();
        for (int i = 0; i < n / 2; ++i) {
            axpy(1.0f, x, y);
            scal(0.5f, y);
        }
        d.sync();
        double rate = n / (now() - t0);
        std::printf("vulkan:0 %-22s record one kernel: %5.2f us (host, via ops::axpy/scal); "
                    "small dependent kernels: %7.0f per second (%d incl. sync)\n",
                    mode, record / recorded * 1e6, rate, n);
    };
    stream.set_batching(false);
    measure("one dispatch each");
    stream.set_batching(true);
    measure("batched (batch.comp)");
    CHECK(stream.batching());
}

TEST_CASE("vulkan bench: dispatch rate by kind", "[.][vulkan-bench-kinds]") {
    Device& d = get_device("vulkan:0");
    auto& stream = dynamic_cast<vk::VulkanDevice&>(d).stream();
    std::vector<Matrix> xs;
    for (int i = 0; i < 64; ++i) xs.push_back(zeros(d, 64, 1));
    d.sync();
    const int n = 20000;
    auto rate = [&](const char* what, auto&& body) {
        double t0 = now();
        for (int i = 0; i < n; ++i) body(i);
        d.sync();
        std::printf("%-40s %8.0f /s\n", what, n / (now() - t0));
    };
    for (bool batched : {false, true}) {
        stream.set_batching(batched);
        std::printf("%s\n", batched ? "batched:" : "one dispatch each:");
        rate("fill, same buffer (WAW barrier each)", [&](int) { fill(xs[0], 1.0f); });
        rate("fill, 64 buffers round robin (no barrier)", [&](int i) { fill(xs[size_t(i % 64)], 1.0f); });
        rate("scal, same buffer (barrier each)", [&](int) { scal(1.0f, xs[0]); });
        rate("tanh, same buffer", [&](int) { unary(Unary::tanh, xs[0], xs[0]); });
    }
    stream.set_batching(true);
}

TEST_CASE("vulkan bench: elementwise bandwidth on 47M elements", "[.][vulkan-bench-big]") {
    Device& d = get_device("vulkan:0");
    Matrix x = empty(d, 784, 60000), y = empty(d, 784, 60000);
    fill(x, 1.0f);
    fill(y, 1.0f);
    d.sync();
    auto run = [&](const char* what, auto&& body) {
        double t0 = now();
        body();
        d.sync();
        double s = now() - t0;
        std::printf("%-34s %7.1f ms  %6.2f Gelem/s\n", what, s * 1e3, 784.0 * 60000 / s * 1e-9);
    };
    run("fill", [&] { fill(x, 2.0f); });
    run("axpy", [&] { axpy(2.0f, x, y); });
    run("axpy, transposed view", [&] { axpy(2.0f, x.t(), y.t()); });
    run("axpy, 783×60000 view (ld 784)", [&] { axpy(2.0f, view(x, 0, 0, 783, 60000), view(y, 0, 0, 783, 60000)); });
    run("tanh", [&] { unary(Unary::tanh, x, y); });
    run("sum", [&] { (void)sum(x); });
}

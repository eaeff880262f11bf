// Host-side costs of the Vulkan stream, measured (hidden from CTest: run with
// `build/vela_tests "[vulkan-bench]"`): the time to record one dispatch, and
// small dispatches per second when batched.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>

#include "core/ops.hpp"
#include "core/registry.hpp"

using namespace vela;

namespace {
double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

TEST_CASE("vulkan bench: recording cost and batched dispatch rate", "[.][vulkan-bench]") {
    Device& d = get_device("vulkan:0");
    Matrix x = zeros(d, 64, 1);
    Matrix y = zeros(d, 64, 1);
    d.sync();

    // Recording only: 200 dispatches stay below the batch bound, so nothing is submitted or waited for.
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
    double us = record / recorded * 1e6;

    // Throughput: 100k small dependent dispatches, then one sync.
    const int n = 100000;
    double t0 = now();
    for (int i = 0; i < n / 2; ++i) {
        axpy(1.0f, x, y);
        scal(0.5f, y);
    }
    d.sync();
    double rate = n / (now() - t0);
    std::printf("vulkan:0 record one dispatch: %.2f us (host, via ops::axpy/scal)\n", us);
    std::printf("vulkan:0 batched small dispatches: %.0f per second (%d dispatches incl. sync)\n", rate, n);
    CHECK(us > 0);
}

TEST_CASE("vulkan bench: dispatch rate by kind", "[.][vulkan-bench-kinds]") {
    Device& d = get_device("vulkan:0");
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
    rate("fill, same buffer (WAW barrier each)", [&](int) { fill(xs[0], 1.0f); });
    rate("fill, 64 buffers round robin (no barrier)", [&](int i) { fill(xs[size_t(i % 64)], 1.0f); });
    rate("scal, same buffer (barrier each)", [&](int) { scal(1.0f, xs[0]); });
}

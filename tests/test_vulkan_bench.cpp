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

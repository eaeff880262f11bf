// The Vulkan stream: one host wait for many kernels, deferred frees, interruption,
// profiling, validation, and small kernels batched as steps of one dispatch.
// Every test ends by checking that the validation layer (on under scripts/test.sh) reported nothing.
#include <catch2/catch.hpp>

#include <algorithm>
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
#include "vulkan/kernels_blas.hpp"
#include "vulkan_common.hpp"

using namespace vela;
using namespace vela::test;

namespace {

// Host float64 twin of a device matrix, indexed like it (column-major, logical shape).
struct Twin {
    int64_t rows, cols;
    std::vector<double> v;
    double& operator()(int64_t i, int64_t j) { return v[size_t(i + j * rows)]; }
};
Twin twin_of(const Mat& m) {
    Twin t{m.m.rows, m.m.cols, {}};
    t.v.assign(m.h.begin(), m.h.end());
    return t;
}
void check_twin(const Matrix& m, const Twin& t, double tol) { check_close(to_host(m), t.v, tol); }

// A chain of small elementwise kernels with every kind of hazard between them
// (read after write, write after read, write after write, swap, aliasing),
// strided and transposed views, and an mm in the middle, checked against float64.
void small_kernel_chain() {
    Mat a = rnd(7, 5, -1, 1, 11), b = rnd(7, 5, -1, 1, 12), c = rnd(5, 7, -1, 1, 13), e = rnd(7, 5, -1, 1, 14);
    Mat bias = rnd(7, 1, -1, 1, 15), d = rnd(7, 7, -1, 1, 16);
    Twin A = twin_of(a), B = twin_of(b), C = twin_of(c), E = twin_of(e), Bias = twin_of(bias), D = twin_of(d);
    auto each = [](Twin& t, auto&& f) {
        for (int64_t j = 0; j < t.cols; ++j)
            for (int64_t i = 0; i < t.rows; ++i) f(i, j);
    };
    fill(a.m, 0.5f);
    each(A, [&](int64_t i, int64_t j) { A(i, j) = 0.5; });
    axpy(2.0f, b.m, a.m);
    each(A, [&](int64_t i, int64_t j) { A(i, j) += 2 * B(i, j); });
    scal(-1.5f, a.m);
    each(A, [&](int64_t i, int64_t j) { A(i, j) *= -1.5; });
    binary(Binary::mul, a.m, b.m, e.m);
    each(E, [&](int64_t i, int64_t j) { E(i, j) = A(i, j) * B(i, j); });
    unary(Unary::tanh, e.m, e.m);
    each(E, [&](int64_t i, int64_t j) { E(i, j) = std::tanh(E(i, j)); });
    add_bias(bias.m, e.m);
    each(E, [&](int64_t i, int64_t j) { E(i, j) += Bias(i, 0); });
    swap(a.m, b.m);
    std::swap(A, B);
    axpby(0.25f, c.m.t(), 2.0f, a.m);
    each(A, [&](int64_t i, int64_t j) { A(i, j) = 0.25 * C(j, i) + 2 * A(i, j); });
    copy(view(b.m, 1, 1, 3, 2), view(e.m, 2, 2, 3, 2));
    for (int64_t j = 0; j < 2; ++j)
        for (int64_t i = 0; i < 3; ++i) E(2 + i, 2 + j) = B(1 + i, 1 + j);
    unary(Unary::sigmoid, a.m, b.m);
    each(B, [&](int64_t i, int64_t j) { B(i, j) = 1 / (1 + std::exp(-A(i, j))); });
    binary(Binary::sub, b.m, e.m, e.m);
    each(E, [&](int64_t i, int64_t j) { E(i, j) = B(i, j) - E(i, j); });
    mm(1.0f, e.m, c.m, 0.0f, d.m);  // a dispatch of its own between batched kernels
    each(D, [&](int64_t i, int64_t j) {
        D(i, j) = 0;
        for (int64_t k = 0; k < 5; ++k) D(i, j) += E(i, k) * C(k, j);
    });
    scal(0.5f, d.m);
    each(D, [&](int64_t i, int64_t j) { D(i, j) *= 0.5; });
    const float frac[4] = {2, 1, 0.5f, 3};
    unary(Unary::linear_frac, d.m, d.m, frac);
    each(D, [&](int64_t i, int64_t j) { D(i, j) = (2 * D(i, j) + 1) / (0.5 * D(i, j) + 3); });
    check_twin(a.m, A, 1e-5);
    check_twin(b.m, B, 1e-5);
    check_twin(e.m, E, 1e-5);
    check_twin(d.m, D, 1e-5);
    // Writing from the host waits for the queued kernels that read the matrix.
    scal(2.0f, a.m);
    set(a.m, 0, 0, 42.0f);
    scal(2.0f, a.m);
    CHECK(get(a.m, 0, 0) == 84.0f);
    CHECK(std::fabs(get(a.m, 1, 0) - 4 * A(1, 0)) <= 1e-5 * (1 + std::fabs(4 * A(1, 0))));
}

}  // namespace

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
    // a device that stages its reads (a discrete GPU, VELA_VK_STAGING=1) adds the read's copy
    const bool staged = !static_cast<vk::VulkanDevice&>(d).mapped();
    CHECK(s1.dispatches - s0.dispatches == (staged ? 1001 : 1000));
    // A host wait is counted only when the fence is not yet signalled: if the
    // ring's earlier submissions already ran the work (a loaded machine, or a
    // fast device), the read finds it done and waits 0 times. The point is
    // that 1,000 kernels never cost more than the one wait for the read.
    CHECK(s1.host_waits - s0.host_waits <= 1);
    CHECK(s1.submissions - s0.submissions >= 1);
}

TEST_CASE("vulkan: a matrix released while queued work uses it is freed after that work", "[vulkan]") {
    NoValidationMessages guard;
    Device& d = gpu();
    d.sync();
    uint64_t used0 = d.memory().used;
    const int64_t n = 1 << 20;
    std::vector<float> av = iota(n, 1.0f / n);
    {
        Matrix a = from_host(d, n, 1, av.data());
        Matrix b = zeros(d, n, 1);
        for (int i = 0; i < 20; ++i) axpy(1.0f, a, b);  // queued, not yet run
        a.buf->release();
        // Memory freed early would be handed out here and overwritten before the axpys read it.
        Matrix c = empty(d, n, 1);
        fill(c, 1000.0f);
        Matrix c2 = empty(d, n, 1);
        fill(c2, 1000.0f);
        std::vector<float> bv = to_host(b);
        for (int64_t i = 0; i < n; i += 997) REQUIRE(bv[size_t(i)] == Approx(20.0 * av[size_t(i)]).epsilon(1e-5));
    }
    d.sync();
    CHECK(d.memory().used == used0);
}

TEST_CASE("vulkan: Ctrl-C while the host waits on the device returns, and the session goes on", "[vulkan]") {
    NoValidationMessages guard;
    Device& d = gpu();
    // The wait polls the flag between slices of 20 ms, so the work queued
    // when it starts must outlast one slice. What the host can queue is
    // bounded by the stream's ring (Stream::kRing command buffers of kBatch
    // kernels; recording more waits for the oldest first): an H200 ran a ring
    // of short kernels inside one slice however many rounds were recorded.
    // So the kernels are made long, not many: products of a size doubled
    // until 8 take 40 ms, 60 of them (one command buffer) then take 0.3 s or
    // more. The tiled variant (a GPU's own) on every device: one pipeline
    // whatever the size (the register blocks' stand-ins and per-size blocks
    // cost SwiftShader seconds of compiling), and the timed products run on
    // the kernel the 60 do.
    struct Tiled {
        Tiled() { vk::force_gemm_variant(vk::GemmVariant::tiled); }
        ~Tiled() { vk::force_gemm_variant(vk::GemmVariant::automatic); }
    } tiled;
    int64_t s = 128;
    Matrix a, c;
    for (;;) {
        a = empty(d, s, s);
        c = zeros(d, s, s);
        fill(a, 1.0f / float(s));
        mm(1.0f, a, a, 0.0f, c);  // makes the pipeline: timed below are the next 8
        d.sync();
        auto c0 = std::chrono::steady_clock::now();
        for (int i = 0; i < 8; ++i) mm(1.0f, a, a, 0.0f, c);
        d.sync();
        if (std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count() >= 0.04 || s >= 8192) break;
        s *= 2;
    }
    INFO("products of " << s << "×" << s);
    for (int i = 0; i < 60; ++i) mm(1.0f, a, a, 0.0f, c);
    d.flush();
    interrupt_flag() = true;
    auto t0 = std::chrono::steady_clock::now();
    bool interrupted = false;
    try {
        d.sync();
    } catch (const Interrupted&) {
        interrupted = true;
    }
    double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(interrupted);
    CHECK(interrupt_flag() == false);  // the wait took the Ctrl-C
    // The product running when the flag is seen finishes (dropped or not, the
    // rest run on a device without conditional rendering, not in this wait).
    CHECK(waited < 1.0);
    d.sync();  // the queued work still completes, or was dropped
    fill(c, 2.0f);
    CHECK(get(c, s - 1, s - 1) == 2.0f);
    mm(1.0f, a, a, 0.0f, c);  // and the device computes: every element is s·(1/s)² = 1/s
    CHECK(std::fabs(get(c, s - 1, 0) - 1.0 / double(s)) <= 1e-5 / double(s));
}

TEST_CASE("vulkan: profile times each dispatch with its kernel name", "[vulkan]") {
    NoValidationMessages guard;
    Device& d = gpu();
    Matrix x = zeros(d, 4096, 1), y = zeros(d, 4096, 1);
    d.profile_begin();
    fill(x, 1.0f);
    axpy(2.0f, x, y);
    unary(Unary::tanh, y, y);
    std::vector<KernelTime> t = d.profile_end();
    REQUIRE(t.size() == 3);
    CHECK(t[0].kernel == "fill");
    CHECK(t[1].kernel == "axpby");
    CHECK(t[2].kernel == "tanh");
    for (auto& k : t) CHECK(k.ms >= 0);
    // Profiling off again: nothing collected.
    fill(x, 0.0f);
    d.profile_begin();
    CHECK(d.profile_end().empty());
}

TEST_CASE("vulkan: validation is on under VELA_VALIDATE=1", "[vulkan]") {
    const char* e = std::getenv("VELA_VALIDATE");
    bool want = e && *e && std::string(e) != "0";
    CHECK(vk::validation_enabled() == want);
    gpu();  // a device is open (CTest runs each test case in its own process)
    CHECK_THROWS_AS(vk::set_validation(!want), Error);  // devices are open: too late to change
}

TEST_CASE("vulkan: small kernels run as steps of one batch, in order, against float64", "[vulkan]") {
    NoValidationMessages guard;
    Device& d = gpu();
    auto& stream = dynamic_cast<vk::VulkanDevice&>(d).stream();
    REQUIRE(stream.batching());
    DeviceStats s0 = d.stats();
    small_kernel_chain();
    DeviceStats s1 = d.stats();
    CHECK(s1.batched - s0.batched >= 15);  // every kernel of the chain but mm and the copies from the host
    SECTION("and the same chain with batching off") {
        stream.set_batching(false);
        small_kernel_chain();
        stream.set_batching(true);
        CHECK(d.stats().batched == s1.batched);
    }
}

TEST_CASE("vulkan: a batch of large steps stays within lavapipe's loop limit", "[vulkan]") {
    // llvmpipe ends a shader's loops after 65,535 iterations in all; 100 steps
    // of 2,048 iterations each would exceed it many times over in one dispatch.
    NoValidationMessages guard;
    Device& d = gpu();
    auto& stream = dynamic_cast<vk::VulkanDevice&>(d).stream();
    uint32_t iterations = stream.batch_iterations();
    stream.set_batching(true, 1u << 20);
    const int64_t n = 65536;
    std::vector<float> xv(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) xv[size_t(i)] = float(i % 7);
    Matrix x = from_host(d, n, 1, xv.data()), y = zeros(d, n, 1);
    DeviceStats s0 = d.stats();
    for (int k = 0; k < 100; ++k) axpy(1.0f, x, y);
    // Counted as they are recorded, before the read: a device that stages its
    // reads (a discrete GPU, VELA_VK_STAGING=1) records the read's copy as one
    // more step (an H200 counted 101 after the read).
    const uint64_t steps = d.stats().batched - s0.batched;
    std::vector<float> got = to_host(y);
    stream.set_batching(true, iterations);
    CHECK(steps == 100);
    for (int64_t i = 0; i < n; ++i) {
        INFO("element " << i);
        REQUIRE(got[size_t(i)] == 100.0f * xv[size_t(i)]);
    }
}

TEST_CASE("vulkan: batches of many mixes of step kinds (more than batch.comp's variants) against float64", "[vulkan]") {
    // Each batch runs the batch.comp variant made for its mix (each family
    // absent, one operation, or several); past 32 mixes the general variant.
    NoValidationMessages guard;
    Device& d = gpu();
    auto& stream = dynamic_cast<vk::VulkanDevice&>(d).stream();
    REQUIRE(stream.batching());
    uint32_t round = 0;
    for (int two_unary = 0; two_unary < 2; ++two_unary)
        for (int b = 0; b < 4; ++b)
            for (int l = 0; l < 3; ++l)
                for (int bias = 0; bias < 2; ++bias, ++round) {
                    INFO("unary ops " << 1 + two_unary << ", binary " << b << ", level 1 " << l << ", bias " << bias);
                    Mat x = rnd(5, 3, -1, 1, 100 + round), y = rnd(5, 3, 0.5f, 1.5f, 200 + round);
                    Mat bv = rnd(5, 1, -1, 1, 300 + round);
                    Twin X = twin_of(x), Y = twin_of(y), Bv = twin_of(bv);
                    DeviceStats s0 = d.stats();
                    unary(Unary::tanh, x.m, x.m);
                    for (double& v : X.v) v = std::tanh(v);
                    if (two_unary) {
                        unary(Unary::sigmoid, y.m, y.m);
                        for (double& v : Y.v) v = 1 / (1 + std::exp(-v));
                    }
                    binary(Binary(b), x.m, y.m, y.m);
                    for (size_t i = 0; i < Y.v.size(); ++i) {
                        double p = X.v[i], q = Y.v[i];
                        Y.v[i] = b == 0 ? p * q : b == 1 ? p / q : b == 2 ? p + q : p - q;
                    }
                    if (l == 0) {
                        fill(x.m, 0.25f);
                        for (double& v : X.v) v = 0.25;
                    } else if (l == 1) {
                        scal(-1.5f, y.m);
                        for (double& v : Y.v) v *= -1.5;
                    } else {
                        axpy(2.0f, x.m, y.m);
                        for (size_t i = 0; i < Y.v.size(); ++i) Y.v[i] += 2 * X.v[i];
                    }
                    if (bias) {
                        add_bias(bv.m, y.m);
                        for (int64_t j = 0; j < Y.cols; ++j)
                            for (int64_t i = 0; i < Y.rows; ++i) Y(i, j) += Bv(i, 0);
                    }
                    CHECK(d.stats().batched - s0.batched == uint64_t(3 + two_unary + bias));
                    check_twin(x.m, X, 1e-5);
                    check_twin(y.m, Y, 1e-5);
                }
}

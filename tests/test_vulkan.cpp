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
#include "error_of.hpp"
#include "kernel_reference.hpp"
#include "core/ops.hpp"
#include "core/registry.hpp"
#include "cpu/cpu_device.hpp"
#include "vulkan/device.hpp"

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

using vela::test::error_of;

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

namespace {

// A deterministic pseudo-random matrix in [lo, hi) on the device, and its host copy.
struct Mat {
    Matrix m;
    std::vector<float> h;
};
Mat rnd(int64_t rows, int64_t cols, float lo, float hi, uint32_t seed) {
    Mat r;
    r.h.resize(size_t(rows * cols));
    uint32_t s = seed * 2654435761u + 1;
    for (float& v : r.h) {
        s = s * 1664525u + 1013904223u;
        v = lo + (hi - lo) * float(s >> 8) * 0x1p-24f;
    }
    r.m = from_host(gpu(), rows, cols, r.h.data());
    return r;
}

void check_close(const std::vector<float>& got, const std::vector<double>& want, double tol) {
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) {
        INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
        REQUIRE(std::fabs(double(got[i]) - want[i]) <= tol * (1 + std::fabs(want[i])));
    }
}

}  // namespace

TEST_CASE("vulkan: level 1 on strided and transposed views", "[vulkan]") {
    NoValidationMessages guard;
    Mat a = rnd(9, 7, -2, 2, 1), b = rnd(7, 9, -2, 2, 2);
    // x: a 3×5 view of a at (1, 2); y: the transposed 5×3 view of b at (2, 1), read back as 3×5.
    Matrix x = view(a.m, 1, 2, 3, 5);
    Matrix y = view(b.m, 2, 1, 5, 3).t();
    auto xa = [&](int64_t i, int64_t j) { return double(a.h[size_t((1 + i) + (2 + j) * 9)]); };
    auto yb = [&](int64_t i, int64_t j) { return double(b.h[size_t((2 + j) + (1 + i) * 7)]); };
    axpby(1.5f, x, -0.5f, y);
    std::vector<double> want;
    for (int64_t j = 0; j < 5; ++j)
        for (int64_t i = 0; i < 3; ++i) want.push_back(1.5 * xa(i, j) - 0.5 * yb(i, j));
    check_close(to_host(y), want, 1e-6);
    // Elements of b outside the view are untouched.
    std::vector<float> bh = to_host(b.m);
    CHECK(bh[0] == b.h[0]);
    CHECK(bh[size_t(1 + 0 * 7)] == b.h[1]);

    // beta = 0 never reads y: NaN there does not propagate.
    Matrix z = zeros(gpu(), 3, 5);
    fill(z, std::nanf(""));
    axpby(2.0f, x, 0.0f, z);
    want.clear();
    for (int64_t j = 0; j < 5; ++j)
        for (int64_t i = 0; i < 3; ++i) want.push_back(2 * xa(i, j));
    check_close(to_host(z), want, 1e-6);

    // swap, scal, copy between a row and a column.
    Matrix r = row(a.m, 4);      // 1×7, step 9
    Matrix c = zeros(gpu(), 7, 1);
    copy(r, c);
    scal(-3.0f, c);
    swap(r, c);
    std::vector<float> rv = to_host(r), cv = to_host(c);
    for (int64_t j = 0; j < 7; ++j) {
        REQUIRE(cv[size_t(j)] == a.h[size_t(4 + j * 9)]);
        REQUIRE(rv[size_t(j)] == -3.0f * a.h[size_t(4 + j * 9)]);
    }
}

TEST_CASE("vulkan: uint8 to float copy and gather_cols", "[vulkan]") {
    NoValidationMessages guard;
    const int64_t rows = 13, cols = 40;
    std::vector<uint8_t> px(size_t(rows * cols));
    for (size_t i = 0; i < px.size(); ++i) px[i] = uint8_t((i * 37 + 11) % 256);
    Matrix u = from_host_u8(gpu(), rows, cols, px.data());
    Matrix f = zeros(gpu(), rows, cols);
    copy(u, f);
    std::vector<float> fv = to_host(f);
    for (size_t i = 0; i < px.size(); ++i) REQUIRE(fv[i] == float(px[i]));

    std::vector<float> idx = {40, 1, 7, 7, 23};
    Matrix ix = from_host(gpu(), 5, 1, idx.data());
    Matrix batch = zeros(gpu(), rows, 5);
    gather_cols(u, ix, batch, 1.0f / 255);
    Matrix batchf = zeros(gpu(), rows, 5);
    gather_cols(f, ix, batchf, 2.0f);
    std::vector<double> want, wantf;
    for (int64_t j = 0; j < 5; ++j)
        for (int64_t i = 0; i < rows; ++i) {
            double v = px[size_t(i + (int64_t(idx[size_t(j)]) - 1) * rows)];
            want.push_back(v / 255);
            wantf.push_back(2 * v);
        }
    check_close(to_host(batch), want, 1e-6);
    check_close(to_host(batchf), wantf, 1e-6);
}

TEST_CASE("vulkan: unary and binary functions against float64", "[vulkan]") {
    NoValidationMessages guard;
    // The reference table of tests/kernel_reference.hpp, on its input ranges.
    for (int op = 0; op < int(Unary::count_); ++op) {
        Unary u = Unary(op);
        INFO("unary " << unary_name(u));
        const ref::UnaryRef r = ref::unary(u);
        const Mat in = rnd(17, 11, r.lo, r.hi, 3 + uint32_t(op));
        Matrix y = zeros(gpu(), 17, 11);
        unary(u, in.m, y, ref::kUnaryParams);
        std::vector<double> want;
        for (float fv : in.h) want.push_back(r.f(fv));
        check_close(to_host(y), want, 2e-6);
    }
    Mat a = rnd(6, 9, -3, 3, 5), b = rnd(6, 9, 0.5f, 3, 6);
    for (int op = 0; op < int(Binary::count_); ++op) {
        INFO("binary " << binary_name(Binary(op)));
        Matrix c = zeros(gpu(), 6, 9);
        binary(Binary(op), a.m, b.m, c);
        std::vector<double> want;
        for (size_t i = 0; i < a.h.size(); ++i) {
            double p = a.h[i], q = b.h[i];
            want.push_back(op == 0 ? p * q : op == 1 ? p / q : op == 2 ? p + q : p - q);
        }
        check_close(to_host(c), want, 1e-6);
    }
}

TEST_CASE("vulkan: reductions and imax, small and multi-workgroup", "[vulkan]") {
    NoValidationMessages guard;
    for (int64_t n : {1, 7, 256, 1000, 300001}) {
        INFO("n = " << n);
        Mat x = rnd(n, 1, -1, 1, 7), y = rnd(1, n, -1, 1, 8);
        double d = 0, q = 0, a = 0, s = 0, best = -1;
        int64_t at = 0;
        for (int64_t i = 0; i < n; ++i) {
            double v = x.h[size_t(i)];
            d += v * y.h[size_t(i)];
            q += v * v;
            a += std::fabs(v);
            s += v;
            if (std::fabs(v) > best) best = std::fabs(v), at = i;
        }
        double tol = 1e-5 * std::sqrt(double(n));
        CHECK(std::fabs(dot(x.m, y.m) - d) <= tol);
        CHECK(std::fabs(nrm2(x.m) - std::sqrt(q)) <= tol);
        CHECK(std::fabs(asum(x.m) - a) <= tol);
        CHECK(std::fabs(sum(x.m) - s) <= tol);
        CHECK(imax(x.m) == at);
    }
    // Ties: the first index wins, across workgroups too.
    std::vector<float> t(100000, 1.0f);
    t[70000] = -5;
    t[90000] = 5;
    t[30] = -5;
    Matrix tm = from_host(gpu(), 1, 100000, t.data());
    CHECK(imax(tm) == 30);
}

TEST_CASE("vulkan: softmax, softmax_xent, argmax, add_bias against float64", "[vulkan]") {
    NoValidationMessages guard;
    const int64_t k = 10, n = 37;
    Mat z = rnd(k, n, -30, 30, 9);
    std::vector<float> labels(n);
    std::vector<uint8_t> labels8(n);
    for (int64_t j = 0; j < n; ++j) labels8[size_t(j)] = uint8_t(1 + (j * 3) % k), labels[size_t(j)] = labels8[size_t(j)];
    Matrix lf = from_host(gpu(), n, 1, labels.data());
    Matrix l8 = from_host_u8(gpu(), 1, n, labels8.data());

    std::vector<double> sm, dz, loss;
    std::vector<float> am;
    for (int64_t j = 0; j < n; ++j) {
        double m = -1e30, s = 0;
        int64_t best = 0;
        for (int64_t i = 0; i < k; ++i)
            if (z.h[size_t(i + j * k)] > m) m = z.h[size_t(i + j * k)], best = i;
        for (int64_t i = 0; i < k; ++i) s += std::exp(z.h[size_t(i + j * k)] - m);
        for (int64_t i = 0; i < k; ++i) {
            double p = std::exp(z.h[size_t(i + j * k)] - m) / s;
            sm.push_back(p);
            dz.push_back((p - (i == labels[size_t(j)] - 1 ? 1 : 0)) * 0.25);
        }
        loss.push_back(-(z.h[size_t(labels[size_t(j)] - 1 + j * k)] - m - std::log(s)));
        am.push_back(float(best + 1));
    }
    Matrix y = zeros(gpu(), k, n);
    softmax(z.m, y);
    check_close(to_host(y), sm, 1e-5);

    Matrix g = zeros(gpu(), k, n), lo = zeros(gpu(), n, 1);
    softmax_xent(z.m, lf, lo, 0.25f, g);
    check_close(to_host(g), dz, 1e-5);
    check_close(to_host(lo), loss, 1e-5);
    Matrix g8 = zeros(gpu(), k, n);
    softmax_xent(z.m, l8, Matrix{}, 0.25f, g8);
    check_close(to_host(g8), dz, 1e-5);

    Matrix idx = zeros(gpu(), 1, n);
    argmax(z.m, idx);
    CHECK(to_host(idx) == am);

    Mat b = rnd(k, 1, -1, 1, 10);
    Matrix yb = clone(z.m);
    add_bias(b.m, yb);
    std::vector<double> want;
    for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < k; ++i) want.push_back(double(z.h[size_t(i + j * k)]) + b.h[size_t(i)]);
    check_close(to_host(yb), want, 1e-6);
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

TEST_CASE("vulkan: Ctrl-C while the host waits on the device returns, and the session goes on", "[vulkan]") {
    NoValidationMessages guard;
    Device& d = gpu();
    const int64_t n = 1 << 20;
    Matrix x = zeros(d, n, 1);
    d.sync();
    for (int i = 0; i < 60; ++i) unary(Unary::exp, x, x);  // exp(0) = 1, then e, e^e, ... then inf
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
    CHECK(interrupt_flag() == false);
    // Unless the device finished all 60 passes within one 20 ms wait slice, the wait was cut short.
    if (interrupted) CHECK(waited < 1.0);
    d.sync();  // the queued work still completes
    fill(x, 2.0f);
    CHECK(get(x, n - 1, 0) == 2.0f);
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

TEST_CASE("vulkan: rand and randn are bit-identical to the cpu for the same seed", "[vulkan]") {
    NoValidationMessages guard;
    Device& cpu = cpu_device();
    for (Dist dist : {Dist::uniform, Dist::normal})
        for (uint64_t seed : {uint64_t(0), uint64_t(42), uint64_t(0x123456789abcdefull)}) {
            INFO("dist " << int(dist) << " seed " << seed);
            Matrix c = zeros(cpu, 301, 257), g = zeros(gpu(), 301, 257);
            random(dist, seed, c);
            random(dist, seed, g);
            std::vector<float> cv = to_host(c), gv = to_host(g);
            REQUIRE(std::memcmp(cv.data(), gv.data(), cv.size() * 4) == 0);
            // A strided, transposed view: values by logical index, not by storage.
            Matrix cb = zeros(cpu, 40, 50), gb = zeros(gpu(), 40, 50);
            random(dist, seed, view(cb, 3, 4, 20, 30).t());
            random(dist, seed, view(gb, 3, 4, 20, 30).t());
            cv = to_host(cb);
            gv = to_host(gb);
            REQUIRE(std::memcmp(cv.data(), gv.data(), cv.size() * 4) == 0);
        }
}

TEST_CASE("vulkan: four-element paths with tails and unaligned offsets", "[vulkan]") {
    NoValidationMessages guard;
    for (int64_t n : {1, 2, 3, 4, 5, 7, 8, 1001})
        for (int64_t off : {0, 1, 4}) {
            INFO("n = " << n << ", offset = " << off);
            Mat a = rnd(n + off, 1, -2, 2, 11), b = rnd(n + off, 1, 0.5f, 2, 12);
            Matrix x = view(a.m, off, 0, n, 1), y = view(b.m, off, 0, n, 1);
            Matrix z = zeros(gpu(), n + off, 1);
            Matrix zv = view(z, off, 0, n, 1);
            binary(Binary::div, x, y, zv);
            axpby(2.0f, x, 0.5f, zv);
            unary(Unary::sqr, zv, zv);
            scal(-1.0f, zv);
            std::vector<double> want;
            for (int64_t i = 0; i < n; ++i) {
                double p = a.h[size_t(off + i)], q = b.h[size_t(off + i)];
                double v = 2 * p + 0.5 * (p / q);
                want.push_back(-v * v);
            }
            check_close(to_host(zv), want, 1e-5);
            std::vector<float> all = to_host(z);
            for (int64_t i = 0; i < off; ++i) REQUIRE(all[size_t(i)] == 0.0f);  // outside the view: untouched
            fill(zv, 5.0f);
            all = to_host(z);
            for (int64_t i = 0; i < n + off; ++i) REQUIRE(all[size_t(i)] == (i < off ? 0.0f : 5.0f));
        }
}

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
    std::vector<float> got = to_host(y);
    stream.set_batching(true, iterations);
    CHECK(d.stats().batched - s0.batched == 100);
    for (int64_t i = 0; i < n; ++i) {
        INFO("element " << i);
        REQUIRE(got[size_t(i)] == 100.0f * xv[size_t(i)]);
    }
}

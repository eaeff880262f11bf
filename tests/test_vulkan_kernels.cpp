// Vulkan kernels beyond the shared body of test_kernels.cpp: strided views,
// uint8 copies and gathers, every unary op of the table, reductions, the fused
// kernels and the four-element paths, against float64.
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
    Mat a = rnd(6, 9, -3, 3, 5), b = rnd(6, 9, 0.5f, 3, 6), pa = rnd(6, 9, 0.1f, 3, 7);
    for (int op = 0; op < int(Binary::count_); ++op) {
        INFO("binary " << binary_name(Binary(op)));
        const Mat& x = Binary(op) == Binary::pow ? pa : a;  // a positive base: a fractional power of a < 0 is NaN
        Matrix c = zeros(gpu(), 6, 9);
        binary(Binary(op), x.m, b.m, c);
        std::vector<double> want;
        for (size_t i = 0; i < x.h.size(); ++i) want.push_back(ref::binary(Binary(op), x.h[i], b.h[i]));
        check_close(to_host(c), want, Binary(op) == Binary::pow ? 1e-5 : 1e-6);
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

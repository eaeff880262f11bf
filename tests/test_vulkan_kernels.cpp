// Vulkan kernels beyond the shared body of test_kernels.cpp (which runs every
// kernel on every device, views, transposes and the op table included): uint8
// copies and gathers, reductions past one workgroup of partial sums, and the
// four-element paths with their tails, against float64.
// Every test ends by checking that the validation layer (on under scripts/test.sh) reported nothing.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/ops.hpp"
#include "vulkan/device.hpp"
#include "vulkan_common.hpp"

using namespace vela;
using namespace vela::test;

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

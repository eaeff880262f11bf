// The cpu's products cut along their inner dimension (src/cpu/blas.cpp: when c
// is the smallest operand, each thread multiplies a part of op(a)'s columns by
// the same rows of op(b), and the partial sums are added by column pieces):
// against float64 on 1, 2 and 3 threads, with α, β, transposed and strided
// operands, a c of garbage for β = 0, and few columns (the sum in one piece);
// dense's bias and activation on each column piece of the sum, bit-identical
// to mm + add_bias + relu; and the same bits on every call. (About 0.2 s.)
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/ops.hpp"
#include "cpu/cpu_device.hpp"
#include "layouts.hpp"

using namespace vela;
using namespace vela::test;

namespace {

struct Case {
    int64_t m, k, n;  // c is m×n = (m×k)·(k×n), with m < k and n < k
    Layout a, b, c;
    float alpha, beta;
};

std::string name(const Case& s) {
    return std::to_string(s.m) + "×" + std::to_string(s.k) + "·" + std::to_string(s.k) + "×" + std::to_string(s.n) +
           " a " + layout_name(s.a) + " b " + layout_name(s.b) + " c " + layout_name(s.c) + " α " +
           std::to_string(s.alpha) + " β " + std::to_string(s.beta);
}

// c's values before the product: garbage (NaN included) when β = 0, which must not read them.
std::vector<float> c_before(const Case& s) {
    std::vector<float> c = data(size_t(s.m * s.n), 3, -1, 1);
    if (s.beta == 0.0f) c[0] = NAN, c[c.size() / 2] = INFINITY;
    return c;
}

void check(const Case& s) {
    INFO("mm " << name(s) << " on " << cpu::threads() << " threads");
    Device& d = cpu_device();
    auto a0 = data(size_t(s.m * s.k), 1, -1, 1), b0 = data(size_t(s.k * s.n), 2, -1, 1), c0 = c_before(s);
    Matrix a = operand(d, s.a, s.m, s.k, a0), b = operand(d, s.b, s.k, s.n, b0), c = operand(d, s.c, s.m, s.n, c0);
    mm(s.alpha, a, b, s.beta, c);
    std::vector<float> got = to_host(c);
    int64_t bad = 0;
    for (int64_t j = 0; j < s.n; j++)
        for (int64_t i = 0; i < s.m; i++) {
            const size_t e = size_t(i + j * s.m);
            double want = s.beta == 0.0f ? 0.0 : double(s.beta) * c0[e], mag = std::fabs(want);
            for (int64_t p = 0; p < s.k; p++) {
                const double t = double(s.alpha) * a0[size_t(i + p * s.m)] * b0[size_t(p + j * s.k)];
                want += t, mag += std::fabs(t);
            }
            bad += !(std::fabs(double(got[e]) - want) <= double(s.k + 2) * 1.2e-7 * mag + 1e-30);
        }
    CHECK(bad == 0);
    // the same bits on every call
    Matrix c2 = operand(d, s.c, s.m, s.n, c0);
    mm(s.alpha, a, b, s.beta, c2);
    std::vector<float> again = to_host(c2);
    CHECK(std::memcmp(got.data(), again.data(), got.size() * sizeof(float)) == 0);
}

}  // namespace

TEST_CASE("cpu mm: products cut along the inner dimension match float64", "[cpu][mm]") {
    const int before = cpu::threads();
    const Case cases[] = {
        // ≥ 0.5 MFLOP, c smaller than both inputs: 2 and 3 inner pieces, the sum in column pieces
        {40, 300, 24, Layout::dense, Layout::dense, Layout::dense, 1.0f, 0.0f},
        {40, 300, 24, Layout::trans, Layout::strided, Layout::strided, -1.5f, 0.5f},
        {40, 300, 24, Layout::strided, Layout::trans, Layout::trans, 0.75f, 1.0f},
        // few columns: the sum in one piece
        {40, 1500, 9, Layout::dense, Layout::trans, Layout::dense, 1.0f, 0.0f},
    };
    for (int t : {1, 2, 3}) {
        cpu::set_threads(t);
        for (const Case& s : cases) check(s);
    }
    cpu::set_threads(before);
}

TEST_CASE("cpu dense: an inner-cut product's bias and relu are those of mm + add_bias + relu", "[cpu][fused]") {
    const int before = cpu::threads();
    Device& d = cpu_device();
    const int64_t m = 48, k = 400, n = 32;
    auto w0 = data(size_t(m * k), 4, -1, 1), x0 = data(size_t(k * n), 5, -1, 1), b0 = data(size_t(m), 6, -1, 1);
    Matrix w = from_host(d, m, k, w0.data()), x = from_host(d, k, n, x0.data()), b = from_host(d, m, 1, b0.data());
    for (int t : {1, 2, 3}) {
        INFO(t << " threads");
        cpu::set_threads(t);
        Matrix fused = empty(d, m, n), steps = empty(d, m, n);
        dense(w, x, b, Act::relu, fused);
        mm(1, w, x, 0, steps);
        add_bias(b, steps);
        unary(Unary::relu, steps, steps);
        std::vector<float> f = to_host(fused), s = to_host(steps);
        CHECK(std::memcmp(f.data(), s.data(), f.size() * sizeof(float)) == 0);
        int64_t bad = 0;
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < m; i++) {
                double want = b0[size_t(i)], mag = std::fabs(want);
                for (int64_t p = 0; p < k; p++) {
                    const double v = double(w0[size_t(i + p * m)]) * x0[size_t(p + j * k)];
                    want += v, mag += std::fabs(v);
                }
                want = std::max(want, 0.0);
                bad += !(std::fabs(double(f[size_t(i + j * m)]) - want) <= double(k + 2) * 1.2e-7 * mag);
            }
        CHECK(bad == 0);
    }
    cpu::set_threads(before);
}

// The cpu's products cut along their inner dimension (src/cpu/blas.cpp: when c
// is at most half of either input, each thread multiplies a part of op(a)'s columns by
// the same rows of op(b), and the partial sums are added by column pieces):
// against float64 on 1, 2, 3 and 8 threads, with α, β, transposed and strided
// operands, a c of garbage for β = 0, and few columns (the sum in one piece);
// dense's bias and activation on each column piece of the sum, bit-identical
// to mm + add_bias + relu; and the same bits on every call. The step's small
// kernels that are now shared by the threads (softmax_xent by column halves,
// relu_backward from 16K elements) against float64 and the bits of one thread.
// (About 0.2 s.)
#include <catch2/catch.hpp>

#include <algorithm>
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
    int64_t m, k, n;  // c is m×n = (m×k)·(k×n), with 2m ≤ k and 2n ≤ k
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
        // ≥ 0.5 MFLOP, c small beside both inputs: 2 and 3 inner pieces, the sum in column pieces
        {40, 300, 24, Layout::dense, Layout::dense, Layout::dense, 1.0f, 0.0f},
        {40, 300, 24, Layout::trans, Layout::strided, Layout::strided, -1.5f, 0.5f},
        {40, 300, 24, Layout::strided, Layout::trans, Layout::trans, 0.75f, 1.0f},
        // few columns: the sum in one piece
        {40, 1500, 9, Layout::dense, Layout::trans, Layout::dense, 1.0f, 0.0f},
        // c half of each input: on 8 threads 6 pieces of k, held to 5 by the partials' size
        {192, 384, 192, Layout::dense, Layout::dense, Layout::dense, 1.0f, 0.25f},
    };
    for (int t : {1, 2, 3, 8}) {
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

TEST_CASE("cpu: softmax_xent and relu_backward cut across threads match float64 and one thread's bits", "[cpu][fused]") {
    const int before = cpu::threads();
    Device& d = cpu_device();
    const int64_t k = 10, n = 128, h = 256;  // the MLP's output layer and hidden layer at batch 128
    auto z0 = data(size_t(k * n), 7, -4, 4), g0 = data(size_t(h * n), 8, -1, 1), a0 = data(size_t(h * n), 9, -1, 1);
    std::vector<float> lab(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; j++) lab[size_t(j)] = float(1 + (j * 7) % k);
    Matrix z = from_host(d, k, n, z0.data()), y = from_host(d, 1, n, lab.data());
    Matrix g = from_host(d, h, n, g0.data()), a = from_host(d, h, n, a0.data());
    std::vector<float> loss1, dz1, delta1;
    for (int t : {1, 2, 3}) {
        INFO(t << " threads");
        cpu::set_threads(t);
        Matrix loss = empty(d, 1, n), dz = empty(d, k, n), delta = empty(d, h, n);
        softmax_xent(z, y, loss, 0.5f, dz);
        act_backward(Act::relu, g, a, delta);
        std::vector<float> l = to_host(loss), dzh = to_host(dz), dh = to_host(delta);
        int64_t bad = 0;
        for (int64_t j = 0; j < n; j++) {
            const int64_t c = int64_t(lab[size_t(j)]) - 1;
            double mx = -1e300, s = 0;
            for (int64_t i = 0; i < k; i++) mx = std::max(mx, double(z0[size_t(i + j * k)]));
            for (int64_t i = 0; i < k; i++) s += std::exp(double(z0[size_t(i + j * k)]) - mx);
            const double want = std::log(s) + mx - z0[size_t(c + j * k)];
            bad += !(std::fabs(l[size_t(j)] - want) <= 1e-5 * (1 + std::fabs(want)));
            for (int64_t i = 0; i < k; i++) {
                const double p = std::exp(double(z0[size_t(i + j * k)]) - mx) / s;
                const double dw = 0.5 * (p - (i == c ? 1.0 : 0.0));
                bad += !(std::fabs(dzh[size_t(i + j * k)] - dw) <= 1e-6);
            }
        }
        for (size_t e = 0; e < dh.size(); e++) bad += dh[e] != (a0[e] > 0 ? g0[e] : 0.0f);
        CHECK(bad == 0);
        if (t == 1) {
            loss1 = l, dz1 = dzh, delta1 = dh;
        } else {
            CHECK(std::memcmp(l.data(), loss1.data(), l.size() * sizeof(float)) == 0);
            CHECK(std::memcmp(dzh.data(), dz1.data(), dzh.size() * sizeof(float)) == 0);
            CHECK(std::memcmp(dh.data(), delta1.data(), dh.size() * sizeof(float)) == 0);
        }
    }
    cpu::set_threads(before);
}

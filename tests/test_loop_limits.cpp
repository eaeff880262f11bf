// Sizes past the loop limit of some drivers: lavapipe ends a shader loop once
// an invocation's loops have run 65,535 iterations, without an error. Every
// loop a user's size controls is bounded by construction (work split across
// invocations and passes); these cases run the sizes where the unbounded
// shaders went wrong (softmax from 21,845 rows, argmax from 65,536, mv and
// dense with a long k) on every usable device, against float64 references
// computed here.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/device.hpp"
#include "core/ops.hpp"
#include "core/registry.hpp"
#include "every_device.hpp"

using namespace vela;
using vela::test::on_every_device;

namespace {

// splitmix64 values in [-4, 4): independent of anything under test.
std::vector<float> data(size_t n, uint64_t seed) { return vela::test::splitmix_values(n, seed); }

// Softmax of each column of a rows×cols column-major matrix, in float64.
std::vector<double> softmax_ref(const std::vector<float>& x, int64_t rows, int64_t cols) {
    std::vector<double> y(x.size());
    for (int64_t j = 0; j < cols; ++j) {
        double m = -INFINITY, s = 0;
        for (int64_t i = 0; i < rows; ++i) m = std::max(m, double(x[size_t(i + j * rows)]));
        for (int64_t i = 0; i < rows; ++i) s += std::exp(double(x[size_t(i + j * rows)]) - m);
        for (int64_t i = 0; i < rows; ++i) y[size_t(i + j * rows)] = std::exp(double(x[size_t(i + j * rows)]) - m) / s;
    }
    return y;
}

// Every element within rel·|want| (+ abs); reports the first that is not.
void check_close(const std::vector<float>& got, const std::vector<double>& want, double rel, double abs = 0) {
    REQUIRE(got.size() == want.size());
    size_t bad = 0, first = 0;
    for (size_t k = 0; k < want.size(); ++k)
        if (!(std::fabs(got[k] - want[k]) <= rel * std::fabs(want[k]) + abs) && bad++ == 0) first = k;
    if (bad) FAIL_CHECK(bad << " of " << got.size() << " off; first at " << first << ": got " << got[first]
                            << ", want " << want[first]);
}

}  // namespace

TEST_CASE("kernels: loop limits, softmax and softmax_xent on columns of 21,845 to 70,000 rows", "[kernels][limits]") {
    on_every_device([](Device& d) {
        for (int64_t rows : {int64_t(21845), int64_t(70000)}) {
            const int64_t cols = 3;
            INFO(rows << " rows");
            std::vector<float> xv = data(size_t(rows * cols), 7 + uint64_t(rows));
            std::vector<double> want = softmax_ref(xv, rows, cols);
            Matrix x = from_host(d, rows, cols, xv.data());
            Matrix y = empty(d, rows, cols);
            softmax(x, y);
            check_close(to_host(y), want, 1e-4);
            // Each column sums to 1.
            std::vector<float> got = to_host(y);
            for (int64_t j = 0; j < cols; ++j) {
                double s = 0;
                for (int64_t i = 0; i < rows; ++i) s += got[size_t(i + j * rows)];
                CHECK(std::fabs(s - 1.0) < 1e-3);
            }
            // The transposed view too (row steps of ld), in place.
            Matrix xt = from_host(d, cols, rows, xv.data());  // storage cols×rows: its transpose is rows×cols
            std::vector<float> tv(xv.size());
            for (int64_t j = 0; j < cols; ++j)
                for (int64_t i = 0; i < rows; ++i) tv[size_t(i + j * rows)] = xv[size_t(j + i * cols)];
            std::vector<double> want_t = softmax_ref(tv, rows, cols);
            Matrix v = xt.t();
            softmax(v, v);
            check_close(to_host(v), want_t, 1e-4);

            // softmax_xent: labels near the end of the column, float and uint8 labels.
            std::vector<float> labels = {float(rows), 1.0f, float(rows - 1)};
            Matrix lab = from_host(d, cols, 1, labels.data());
            Matrix loss = empty(d, 1, cols), dz = empty(d, rows, cols);
            softmax_xent(x, lab, loss, 0.5f, dz);
            std::vector<double> dzw(want.size());
            std::vector<double> lw(static_cast<size_t>(cols));
            for (int64_t j = 0; j < cols; ++j) {
                int64_t l = int64_t(labels[size_t(j)]) - 1;
                lw[size_t(j)] = -std::log(want[size_t(l + j * rows)]);
                for (int64_t i = 0; i < rows; ++i)
                    dzw[size_t(i + j * rows)] = (want[size_t(i + j * rows)] - (i == l ? 1.0 : 0.0)) * 0.5;
            }
            check_close(to_host(dz), dzw, 1e-4, 1e-9);
            check_close(to_host(loss), lw, 1e-5, 1e-5);
        }
    });
}

TEST_CASE("kernels: loop limits, argmax and argmin on columns of 65,536 and 70,000 rows", "[kernels][limits]") {
    on_every_device([](Device& d) {
        for (int64_t rows : {int64_t(65536), int64_t(70000)})
            for (bool smallest : {false, true}) {
                const int64_t cols = 4;
                INFO(rows << " rows, " << (smallest ? "argmin" : "argmax"));
                std::vector<float> xv = data(size_t(rows * cols), 11);
                // Column maxima (minima) at the last row, the first row, a middle row, and a tie (the first wins).
                const int64_t at[] = {rows - 1, 0, rows / 2 + 17, 5000};
                const float v = smallest ? -10.0f : 10.0f;
                for (int64_t j = 0; j < cols; ++j) xv[size_t(at[j] + j * rows)] = v;
                xv[size_t(rows - 2 + 3 * rows)] = v;
                Matrix x = from_host(d, rows, cols, xv.data());
                Matrix idx = empty(d, 1, cols);
                smallest ? argmin(x, idx) : argmax(x, idx);
                std::vector<double> want;
                for (int64_t j = 0; j < cols; ++j) want.push_back(double(at[j] + 1));
                check_close(to_host(idx), want, 0);
            }
    });
}

TEST_CASE("kernels: uint8 stores, neighbouring bytes of one 32-bit word written at once", "[kernels][limits]") {
    // Without 8-bit storage a uint8 store is two atomics on the word holding
    // it; a plain read-modify-write would lose bytes written at the same time.
    on_every_device([](Device& d) {
        const int64_t n = 4099;
        std::vector<float> v(static_cast<size_t>(n));
        std::vector<uint8_t> bytes(v.size());
        for (int64_t k = 0; k < n; ++k) bytes[size_t(k)] = uint8_t((k * 37 + 11) % 256), v[size_t(k)] = bytes[size_t(k)];
        Matrix x = from_host_u8(d, n, 1, bytes.data());
        Matrix y = zeros(d, n, 1, DType::u8);
        copy(x, y);
        std::vector<double> want(v.begin(), v.end());
        check_close(to_host(y), want, 0);
        // Every other byte of a row of a uint8 matrix (a strided view), the rest untouched.
        Matrix m = zeros(d, 2, n, DType::u8);
        copy(x.t(), row(m, 1));
        std::vector<float> got = to_host(m);
        std::vector<double> w2(static_cast<size_t>(2 * n), 0.0);
        for (int64_t k = 0; k < n; ++k) w2[size_t(1 + 2 * k)] = v[size_t(k)];
        check_close(got, w2, 0);
    });
}

TEST_CASE("kernels: loop limits, mv and dense with a long inner dimension", "[kernels][limits]") {
    on_every_device([](Device& d) {
        const int64_t m = 3, n = 300000;  // mv: n/4 = 75,000 iterations in one loop before the split
        std::vector<float> av = data(size_t(m * n), 21), xv = data(size_t(n), 22);
        std::vector<float> y0 = {1.0f, -2.0f, 0.5f};
        for (bool trans : {false, true}) {
            INFO((trans ? "transposed a" : "a"));
            Matrix a = trans ? from_host(d, n, m, av.data()).t() : from_host(d, m, n, av.data());
            std::vector<double> want(static_cast<size_t>(m));
            double scale = 0;  // float sums are good to about 1e-5 of the sum of |terms|
            for (int64_t i = 0; i < m; ++i) {
                double s = 0, sa = 0;
                for (int64_t j = 0; j < n; ++j) {
                    double t = double(trans ? av[size_t(j + i * n)] : av[size_t(i + j * m)]) * double(xv[size_t(j)]);
                    s += t;
                    sa += std::fabs(t);
                }
                want[size_t(i)] = 0.5 * s + 2.0 * y0[size_t(i)];
                scale = std::max(scale, 0.5 * sa);
            }
            Matrix x = from_host(d, n, 1, xv.data());
            Matrix y = from_host(d, m, 1, y0.data());
            mv(0.5f, a, x, 2.0f, y);
            check_close(to_host(y), want, 0, 1e-5 * scale);
        }
        // dense: k = 40,000 (one pass would loop k / subgroup size times), with relu.
        const int64_t k = 40000, rows = 5, cols = 3;
        std::vector<float> wv = data(size_t(rows * k), 31), xv2 = data(size_t(k * cols), 32);
        std::vector<float> bv = {1, -1, 2, -2, 300};
        Matrix w = from_host(d, rows, k, wv.data()), x = from_host(d, k, cols, xv2.data());
        Matrix b = from_host(d, rows, 1, bv.data()), y = empty(d, rows, cols);
        dense(w, x, b, Act::relu, y);
        std::vector<double> want(size_t(rows * cols));
        double scale = 0;
        for (int64_t j = 0; j < cols; ++j)
            for (int64_t i = 0; i < rows; ++i) {
                double s = bv[size_t(i)], sa = std::fabs(s);
                for (int64_t t = 0; t < k; ++t) {
                    double e = double(wv[size_t(i + t * rows)]) * double(xv2[size_t(t + j * k)]);
                    s += e;
                    sa += std::fabs(e);
                }
                want[size_t(i + j * rows)] = std::max(s, 0.0);
                scale = std::max(scale, sa);
            }
        check_close(to_host(y), want, 0, 1e-5 * scale);
    });
}

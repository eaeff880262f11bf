// The fused optimizer kernels sgd_step and adam_step on every usable device:
// against float64 updates computed here from the same float inputs, on dense
// matrices, transposed views and strided sub-views, at a size past one grid
// dimension of every driver (2^24 + 5 elements: more than 65,535 workgroups of
// 256), and every bad argument rejected with a message naming the function and
// the argument, leaving all operands as they were.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "core/device.hpp"
#include "core/ops.hpp"
#include "cpu/cpu_device.hpp"
#include "every_device.hpp"

using namespace vela;
using vela::test::on_every_device;

namespace {

// splitmix64 values in [lo, hi): independent of anything under test.
std::vector<float> data(size_t n, uint64_t seed, double lo, double hi) {
    return vela::test::splitmix_values(n, seed, lo, hi);
}

enum class Layout { dense, trans, strided };
const char* layout_name(Layout l) { return l == Layout::dense ? "dense" : l == Layout::trans ? "transposed" : "strided"; }

// A rows×cols operand holding `vals` (column-major logical order) in the layout,
// and the buffer behind it (kept alive by the view).
Matrix operand(Device& d, Layout l, int64_t rows, int64_t cols, const std::vector<float>& vals) {
    if (l == Layout::dense) return from_host(d, rows, cols, vals.data());
    if (l == Layout::trans) {
        std::vector<float> st(vals.size());  // the stored cols×rows matrix is the transpose
        for (int64_t j = 0; j < cols; j++)
            for (int64_t i = 0; i < rows; i++) st[size_t(j + i * cols)] = vals[size_t(i + j * rows)];
        return from_host(d, cols, rows, st.data()).t();
    }
    // rows×cols inside a (rows + 3)×(cols + 2) matrix at (2, 1): ld = rows + 3.
    const int64_t R = rows + 3, C = cols + 2;
    std::vector<float> big(size_t(R * C), -7.0f);
    for (int64_t j = 0; j < cols; j++)
        for (int64_t i = 0; i < rows; i++) big[size_t(2 + i + (1 + j) * R)] = vals[size_t(i + j * rows)];
    return view(from_host(d, R, C, big.data()), 2, 1, rows, cols);
}

// |got − want| ≤ 4 ulp of float at the larger of |want| and the scale of the terms.
void check_close(const char* what, const std::vector<float>& got, const std::vector<double>& want,
                 const std::vector<double>& scale) {
    REQUIRE(got.size() == want.size());
    size_t bad = 0, first = 0;
    double worst = 0;
    for (size_t k = 0; k < got.size(); k++) {
        double tol = 4.0 * 1.1920929e-7 * std::max(std::fabs(want[k]), scale[k]) + 1e-30;
        double err = std::fabs(double(got[k]) - want[k]);
        if (!(err <= tol)) {
            if (bad++ == 0) first = k;
            worst = std::max(worst, err / tol);
        }
    }
    INFO(what << ": " << bad << " of " << got.size() << " elements off, first at " << first << " (got "
              << (bad ? got[first] : 0.0f) << ", want " << (bad ? want[first] : 0.0) << "), worst " << worst
              << " × the tolerance");
    CHECK(bad == 0);
}

struct Sgd {
    float lr, mu, wd;
    bool nesterov;
};

void run_sgd(Device& d, Layout l, int64_t rows, int64_t cols, Sgd o) {
    INFO("sgd_step " << layout_name(l) << " " << rows << "×" << cols << " lr " << o.lr << " momentum " << o.mu
                     << " weight_decay " << o.wd << (o.nesterov ? " nesterov" : ""));
    const size_t n = size_t(rows * cols);
    auto w0 = data(n, 11, -2, 2), g0 = data(n, 12, -1, 1), v0 = data(n, 13, -0.5, 0.5);
    Matrix w = operand(d, l, rows, cols, w0), g = operand(d, l, rows, cols, g0), v = operand(d, l, rows, cols, v0);
    sgd_step(w, g, v, o.lr, o.mu, o.wd, o.nesterov);
    std::vector<double> ww(n), vw(n), ws(n), vs(n);
    for (size_t k = 0; k < n; k++) {
        double gg = double(g0[k]) + double(o.wd) * w0[k];
        double vv = double(o.mu) * v0[k] + gg;
        double step = o.nesterov ? gg + double(o.mu) * vv : vv;
        vw[k] = vv;
        ww[k] = w0[k] - double(o.lr) * step;
        vs[k] = std::fabs(double(o.mu) * v0[k]) + std::fabs(g0[k]) + std::fabs(double(o.wd) * w0[k]);
        ws[k] = std::fabs(w0[k]) + std::fabs(double(o.lr)) * (vs[k] * (1 + std::fabs(double(o.mu))));
    }
    check_close("w", to_host(w), ww, ws);
    check_close("v", to_host(v), vw, vs);
    CHECK(to_host(g) == g0);  // the gradient is only read
}

void run_adam(Device& d, Layout l, int64_t rows, int64_t cols, uint64_t seed) {
    INFO("adam_step " << layout_name(l) << " " << rows << "×" << cols);
    const size_t n = size_t(rows * cols);
    const float lr = 0.01f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
    auto w0 = data(n, seed, -2, 2), g0 = data(n, seed + 1, -1, 1), m0 = data(n, seed + 2, -0.1, 0.1),
         v0 = data(n, seed + 3, 0, 0.01);
    Matrix w = operand(d, l, rows, cols, w0), g = operand(d, l, rows, cols, g0), m = operand(d, l, rows, cols, m0),
           v = operand(d, l, rows, cols, v0);
    adam_step(w, g, m, v, lr, b1, b2, eps);
    std::vector<double> ww(n), mw(n), vw(n), ws(n), ms(n), vs(n);
    for (size_t k = 0; k < n; k++) {
        double mm = double(b1) * m0[k] + (1.0 - double(b1)) * g0[k];
        double vv = double(b2) * v0[k] + (1.0 - double(b2)) * double(g0[k]) * g0[k];
        double step = mm / (std::sqrt(vv) + double(eps));
        mw[k] = mm, vw[k] = vv;
        ww[k] = w0[k] - double(lr) * step;
        ms[k] = std::fabs(double(b1) * m0[k]) + std::fabs((1.0 - double(b1)) * g0[k]);
        vs[k] = std::fabs(double(b2) * v0[k]) + (1.0 - double(b2)) * double(g0[k]) * g0[k];
        // The step's float error: m's (relative to its terms ms), v's through √v, and the quotient's roundings.
        ws[k] = std::fabs(w0[k]) +
                double(lr) * 2 * (ms[k] / (std::sqrt(vv) + double(eps)) + std::fabs(step) * (1 + vs[k] / vv));
    }
    check_close("w", to_host(w), ww, ws);
    check_close("m", to_host(m), mw, ms);
    check_close("v", to_host(v), vw, vs);
    CHECK(to_host(g) == g0);
}

}  // namespace

TEST_CASE("optim kernels: sgd_step against float64 on every layout", "[kernels][optim]") {
    on_every_device([](Device& d) {
        for (Layout l : {Layout::dense, Layout::trans, Layout::strided})
            for (Sgd o : {Sgd{0.05f, 0.9f, 0.0f, false}, Sgd{0.1f, 0.5f, 1e-3f, false}, Sgd{0.02f, 0.9f, 0.01f, true},
                          Sgd{0.1f, 0.0f, 0.0f, false}})
                for (auto [r, c] : {std::pair<int64_t, int64_t>{37, 23}, {1, 300}, {513, 1}}) run_sgd(d, l, r, c, o);
    });
}

TEST_CASE("optim kernels: adam_step against float64 on every layout", "[kernels][optim]") {
    on_every_device([](Device& d) {
        for (Layout l : {Layout::dense, Layout::trans, Layout::strided})
            for (auto [r, c] : {std::pair<int64_t, int64_t>{37, 23}, {1, 300}, {513, 1}}) run_adam(d, l, r, c, 21);
    });
}

TEST_CASE("optim kernels: 2^24 + 5 elements, past one grid dimension", "[kernels][optim]") {
    on_every_device([](Device& d) {
        run_sgd(d, Layout::dense, (int64_t(1) << 24) + 5, 1, Sgd{0.05f, 0.9f, 1e-4f, true});
        run_adam(d, Layout::dense, (int64_t(1) << 23) + 3, 2, 31);
    });
}

TEST_CASE("optim kernels: bad arguments are rejected, nothing changes", "[kernels][optim]") {
    on_every_device([](Device& d) {
        auto w0 = data(12, 41, -1, 1);
        Matrix w = from_host(d, 3, 4, w0.data()), g = zeros(d, 3, 4), v = zeros(d, 3, 4), m = zeros(d, 3, 4);
        auto fails = [&](auto f, const std::string& words) {
            CHECK_THROWS_WITH(f(), Catch::Contains(words));
            CHECK(to_host(w) == w0);
        };
        fails([&] { sgd_step(w, g, zeros(d, 4, 3), 0.1f, 0.9f); }, "sgd_step: w is 3×4 but v is 4×3");
        fails([&] { adam_step(w, zeros(d, 3, 5), m, v, 0.1f, 0.9f, 0.999f, 1e-8f); }, "adam_step: w is 3×4 but g is 3×5");
        fails([&] { sgd_step(w, g, w, 0.1f, 0.9f); }, "sgd_step: v overlaps w");
        fails([&] { adam_step(w, g, m, m, 0.1f, 0.9f, 0.999f, 1e-8f); }, "adam_step: v overlaps m");
        fails([&] { sgd_step(w, view(w, 0, 0, 3, 4), v, 0.1f, 0.9f); }, "sgd_step: g overlaps w");
        fails([&] { sgd_step(w, g, v, 0.1f, 0.0f, 0.0f, true); }, "sgd_step: nesterov needs a momentum");
        fails([&] { sgd_step(w, g, zeros(d, 3, 4, DType::u8), 0.1f, 0.9f); }, "sgd_step: v is uint8 but must be float32");
        Matrix dead = zeros(d, 3, 4);
        dead.buf->release();
        fails([&] { adam_step(w, g, m, dead, 0.1f, 0.9f, 0.999f, 1e-8f); }, "adam_step: v");
        if (&d != &cpu_device()) {
            Matrix gc = zeros(cpu_device(), 3, 4);
            fails([&] { sgd_step(w, gc, v, 0.1f, 0.9f); }, "sgd_step: w is on " + d.name() + " but g is on cpu");
        }
    });
}

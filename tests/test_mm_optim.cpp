// mm_sgd_step (g ← a·b, then sgd_step(w, g, v, ...) on each piece of g's
// columns as soon as it is computed: nn.fit's weight gradients on the cpu)
// against float64 computed here from the same float inputs, on the shapes
// that take each path of the cpu device (column pieces on both threads, row
// pieces, one piece, a transposed g, strided and transposed w and v), on 1, 2
// and 3 threads; the same bits as mm then sgd_step; bad arguments rejected
// with nothing changed.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "core/device.hpp"
#include "core/ops.hpp"
#include "cpu/cpu_device.hpp"
#include "every_device.hpp"
#include "layouts.hpp"

using namespace vela;
using vela::test::on_every_device;
using namespace vela::test;

namespace {

struct Case {
    int64_t m, k, n;   // g is m×n = (m×k)·(k×n)
    Layout g, state;   // g's layout; w's and v's
    float lr, mu, wd;
    bool nesterov;
};

std::string name(const Case& c) {
    auto ln = layout_name;
    return std::to_string(c.m) + "×" + std::to_string(c.k) + "·" + std::to_string(c.k) + "×" + std::to_string(c.n) +
           " g " + ln(c.g) + ", w and v " + ln(c.state) + ", lr " + std::to_string(c.lr) + " momentum " +
           std::to_string(c.mu) + " weight_decay " + std::to_string(c.wd) + (c.nesterov ? " nesterov" : "");
}

// |got − want| ≤ tol[k]; counts the elements off and shows the first.
void check_within(const char* what, const std::vector<float>& got, const std::vector<double>& want,
                  const std::vector<double>& tol) {
    REQUIRE(got.size() == want.size());
    size_t bad = 0, first = 0;
    for (size_t k = 0; k < got.size(); k++)
        if (!(std::fabs(double(got[k]) - want[k]) <= tol[k]) && bad++ == 0) first = k;
    INFO(what << ": " << bad << " of " << got.size() << " elements off, first at " << first << " (got "
              << (bad ? got[first] : 0.0f) << ", want " << (bad ? want[first] : 0.0) << ")");
    CHECK(bad == 0);
}

// Equal bit for bit (NaN never appears here); counts the elements that differ.
void check_same(const char* what, const std::vector<float>& got, const std::vector<float>& want) {
    REQUIRE(got.size() == want.size());
    size_t bad = 0;
    for (size_t k = 0; k < got.size(); k++) bad += got[k] != want[k];
    INFO(what << ": " << bad << " of " << got.size() << " elements differ from mm then sgd_step");
    CHECK(bad == 0);
}

void run(Device& d, const Case& c) {
    INFO("mm_sgd_step " << name(c) << " on " << d.name());
    const size_t nm = size_t(c.m * c.n);
    auto a0 = data(size_t(c.m * c.k), 1, -1, 1), b0 = data(size_t(c.k * c.n), 2, -1, 1);
    auto w0 = data(nm, 3, -2, 2), v0 = data(nm, 4, -0.5, 0.5);
    Matrix a = from_host(d, c.m, c.k, a0.data()), b = from_host(d, c.k, c.n, b0.data());
    Matrix g = operand(d, c.g, c.m, c.n, std::vector<float>(nm, 5.0f));  // garbage: β = 0 overwrites it
    Matrix w = operand(d, c.state, c.m, c.n, w0), v = operand(d, c.state, c.m, c.n, v0);
    mm_sgd_step(a, b, g, w, v, c.lr, c.mu, c.wd, c.nesterov);

    // float64: g = a·b; the update from it, each tolerance from the terms' magnitudes.
    const double eps = 1.1920929e-7, mu = c.mu, lr = c.lr, wd = c.wd;
    std::vector<double> gw(nm), gt(nm), vw(nm), vt(nm), ww(nm), wt(nm);
    for (int64_t j = 0; j < c.n; j++)
        for (int64_t i = 0; i < c.m; i++) {
            double s = 0, sa = 0;
            for (int64_t p = 0; p < c.k; p++) {
                double t = double(a0[size_t(i + p * c.m)]) * b0[size_t(p + j * c.k)];
                s += t, sa += std::fabs(t);
            }
            const size_t e = size_t(i + j * c.m);
            gw[e] = s, gt[e] = double(c.k + 2) * eps * sa + 1e-30;  // a float sum of k products
            double gg = s + wd * w0[e], vv = mu * v0[e] + gg, step = c.nesterov ? gg + mu * vv : vv;
            vw[e] = vv, ww[e] = w0[e] - lr * step;
            double vmag = std::fabs(mu * v0[e]) + std::fabs(s) + std::fabs(wd * w0[e]);
            vt[e] = gt[e] + 4 * eps * vmag;
            wt[e] = lr * (1 + mu) * (vt[e] + 4 * eps * vmag) + 4 * eps * (std::fabs(w0[e]) + lr * (1 + mu) * vmag);
        }
    check_within("g", to_host(g), gw, gt);
    check_within("v", to_host(v), vw, vt);
    check_within("w", to_host(w), ww, wt);
    check_same("a", to_host(a), a0);
    check_same("b", to_host(b), b0);

    // The same bits as the two kernels it fuses, on this device, with operands of the same layouts.
    Matrix g2 = operand(d, c.g, c.m, c.n, std::vector<float>(nm, 5.0f));
    Matrix w2 = operand(d, c.state, c.m, c.n, w0), v2 = operand(d, c.state, c.m, c.n, v0);
    mm(1.0f, a, b, 0.0f, g2);
    sgd_step(w2, g2, v2, c.lr, c.mu, c.wd, c.nesterov);
    check_same("g", to_host(g), to_host(g2));
    check_same("v", to_host(v), to_host(v2));
    check_same("w", to_host(w), to_host(w2));
}

const Case kCases[] = {
    // nn.fit's first layer: dW is 256×784 from δ (256×128) and xᵀ, cut in column pieces on every thread.
    {256, 128, 784, Layout::dense, Layout::dense, 0.05f, 0.9f, 0.0f, false},
    {256, 128, 784, Layout::dense, Layout::dense, 0.02f, 0.9f, 1e-3f, true},
    // the output layer's 10×256, columns too
    {10, 128, 256, Layout::dense, Layout::dense, 0.05f, 0.9f, 0.0f, false},
    // strided and transposed w and v in column pieces (per column; element by element)
    {64, 40, 200, Layout::dense, Layout::strided, 0.1f, 0.5f, 1e-2f, false},
    {64, 40, 200, Layout::dense, Layout::trans, 0.1f, 0.5f, 0.0f, true},
    // few columns: row pieces, updated after the product; tiny: one piece; a transposed g
    {300, 50, 6, Layout::dense, Layout::dense, 0.05f, 0.9f, 0.0f, false},
    {5, 3, 7, Layout::strided, Layout::dense, 0.05f, 0.9f, 0.0f, false},
    {96, 64, 120, Layout::trans, Layout::strided, 0.05f, 0.9f, 0.0f, false},
};

}  // namespace

TEST_CASE("mm_sgd_step: against float64, and the bits of mm then sgd_step", "[kernels][optim]") {
    on_every_device([](Device& d) {
        for (const Case& c : kCases) run(d, c);
    });
}

TEST_CASE("mm_sgd_step: on 1, 2 and 3 threads of the cpu", "[kernels][optim][cpu]") {
    const int before = cpu::threads();
    for (int t : {1, 2, 3}) {
        cpu::set_threads(t);
        INFO(t << " threads");
        run(cpu_device(), kCases[0]);
        run(cpu_device(), kCases[3]);
    }
    cpu::set_threads(before);
}

TEST_CASE("mm_sgd_step: bad arguments are rejected, nothing changes", "[kernels][optim]") {
    on_every_device([](Device& d) {
        auto w0 = data(12, 41, -1, 1), g0 = data(12, 42, -1, 1);
        Matrix a = zeros(d, 3, 2), b = zeros(d, 2, 4), g = from_host(d, 3, 4, g0.data());
        Matrix w = from_host(d, 3, 4, w0.data()), v = zeros(d, 3, 4);
        auto fails = [&](auto f, const std::string& words) {
            CHECK_THROWS_WITH(f(), Catch::Contains(words));
            CHECK(to_host(w) == w0);
            CHECK(to_host(g) == g0);
        };
        fails([&] { mm_sgd_step(a, zeros(d, 3, 4), g, w, v, 0.1, 0.9); }, "mm_sgd_step: a is 3×2 but b is 3×4");
        fails([&] { mm_sgd_step(a, b, zeros(d, 3, 5), w, v, 0.1, 0.9); }, "mm_sgd_step: g is 3×5 but a·b is 3×4");
        fails([&] { mm_sgd_step(a, b, g, w, zeros(d, 4, 3), 0.1, 0.9); }, "mm_sgd_step: w is 3×4 but v is 4×3");
        fails([&] { mm_sgd_step(a, b, g, w, v, 0.1, 0.0, 0.0, true); }, "mm_sgd_step: nesterov needs a momentum");
        fails([&] { mm_sgd_step(a, b, g, w, v, -1, 0.9); }, "mm_sgd_step: lr is -1");
        fails([&] { mm_sgd_step(a, b, g, w, g, 0.1, 0.9); }, "mm_sgd_step: v overlaps g");
        fails([&] { mm_sgd_step(view(w, 0, 0, 3, 2), b, g, w, v, 0.1, 0.9); }, "mm_sgd_step: w aliases a");
        fails([&] { mm_sgd_step(a, view(v, 0, 0, 2, 4), g, w, v, 0.1, 0.9); }, "mm_sgd_step: v aliases b");
    });
}

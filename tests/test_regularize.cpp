// The regularization kernels (dropout, batchnorm_stats, batchnorm,
// batchnorm_backward, random_shift) on every device, on dense operands and on
// views (an offset and ld > rows; transposed), against float64 references
// computed here: each result checked element by element, and every parent
// element outside an output view unchanged. Philox values come from the
// Random123 definition in core/philox.hpp (checked against its known answers
// in test_core/test_kernels and, independently, by tests/lua/test_regularize.lua).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/ops.hpp"
#include "core/philox.hpp"
#include "every_device.hpp"

using namespace vela;

namespace {

uint64_t mix(uint64_t& s) {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

enum class Layout { dense, padded, trans };
const Layout kLayouts[] = {Layout::dense, Layout::padded, Layout::trans};
const char* name(Layout l) { return l == Layout::dense ? "dense" : l == Layout::padded ? "padded" : "trans"; }

// A rows×cols operand laid out as `layout` inside a parent of random values
// (padded: at (3, 2) of a parent 4 rows and 3 columns larger; trans: the
// transpose of such a view).
struct Op {
    int64_t rows, cols;
    Layout layout;
    std::vector<float> parent;  // host copy of the parent at creation
    Matrix p, m;

    int64_t prow() const { return layout == Layout::dense ? rows : layout == Layout::padded ? rows + 4 : cols + 4; }
    int64_t pcol() const { return layout == Layout::dense ? cols : layout == Layout::padded ? cols + 3 : rows + 3; }
    int64_t at(int64_t i, int64_t j) const {
        if (layout == Layout::dense) return i + j * rows;
        if (layout == Layout::padded) return (i + 3) + (j + 2) * prow();
        return (j + 3) + (i + 2) * prow();
    }
    double operator()(int64_t i, int64_t j) const { return parent[size_t(at(i, j))]; }
};

Op make(Device& d, int64_t rows, int64_t cols, Layout l, uint64_t seed, float lo = -1, float hi = 1) {
    Op o{rows, cols, l, {}, {}, {}};
    o.parent.resize(size_t(o.prow() * o.pcol()));
    for (float& v : o.parent) v = lo + (hi - lo) * float(double(mix(seed) >> 40) / double(1 << 24));
    o.p = from_host(d, o.prow(), o.pcol(), o.parent.data());
    if (l == Layout::dense) o.m = o.p;
    else if (l == Layout::padded) o.m = view(o.p, 3, 2, rows, cols);
    else o.m = view(o.p, 3, 2, cols, rows).t();
    return o;
}

// The output view holds want(i, j) within tol·scale, and the parent outside it is unchanged.
template <class Want>
void check(const Op& o, Want want, double tol, double scale, const char* what) {
    std::vector<float> got = to_host(o.m);
    int64_t bad = 0;
    char first[160] = "";
    for (int64_t j = 0; j < o.cols; j++)
        for (int64_t i = 0; i < o.rows; i++) {
            double g = got[size_t(i + j * o.rows)], w = want(i, j);
            if (!(std::fabs(g - w) <= tol * scale) && bad++ == 0)
                std::snprintf(first, sizeof first, "(%lld, %lld): got %.9g, want %.9g", (long long)i + 1,
                              (long long)j + 1, g, w);
        }
    INFO(what << ": " << bad << " elements off, first " << first);
    CHECK(bad == 0);
    std::vector<float> parent = to_host(o.p);
    std::vector<bool> inside(parent.size(), false);
    for (int64_t j = 0; j < o.cols; j++)
        for (int64_t i = 0; i < o.rows; i++) inside[size_t(o.at(i, j))] = true;
    int64_t touched = 0;
    for (size_t k = 0; k < parent.size(); k++)
        if (!inside[k] && std::memcmp(&parent[k], &o.parent[k], sizeof(float)) != 0) touched++;
    INFO(what << ": parent elements outside the view changed");
    CHECK(touched == 0);
}

philox::Counter draw(uint64_t seed, uint64_t step, uint64_t k) {
    return philox::philox4x32_10({uint32_t(k), uint32_t(k >> 32), uint32_t(step), uint32_t(step >> 32)},
                                 {uint32_t(seed), uint32_t(seed >> 32)});
}

}  // namespace

TEST_CASE("kernels: regularize, dropout on views: mask and y exact, the rest untouched", "[kernels][regularize]") {
    test::on_every_device([](Device& d) {
        for (Layout lx : kLayouts)
            for (Layout lo : kLayouts)
                for (float p : {0.0f, 0.3f, 0.75f}) {
                    INFO("x " << name(lx) << ", outputs " << name(lo) << ", p " << p);
                    const int64_t r = 33, c = 7;
                    Op x = make(d, r, c, lx, 1), mask = make(d, r, c, lo, 2), y = make(d, r, c, lo, 3);
                    dropout(99, 4, p, x.m, mask.m, y.m);
                    const float scale = 1.0f / (1.0f - p);
                    auto m = [&](int64_t i, int64_t j) {
                        uint64_t k = uint64_t(j * r + i);
                        float u = float(draw(99, 4, k >> 2)[k & 3] >> 8) * 0x1p-24f;
                        return u >= p ? double(scale) : 0.0;
                    };
                    check(mask, m, 0, 1, "mask");
                    check(y, [&](int64_t i, int64_t j) { return double(float(x(i, j)) * float(m(i, j))); }, 0, 1, "y");
                }
    });
}

TEST_CASE("kernels: regularize, random_shift on views", "[kernels][regularize]") {
    test::on_every_device([](Device& d) {
        struct Img {
            int64_t C, H, W, s;
        };
        // 1,500 pixels a row: a row is more than one of the shader's runs of 1,024.
        for (Img im : {Img{2, 5, 4, 2}, Img{1, 3, 1500, 3}})
        for (Layout lx : kLayouts)
            for (Layout ly : kLayouts) {
                INFO("x " << name(lx) << ", y " << name(ly) << ", " << im.C << "×" << im.H << "×" << im.W);
                const int64_t C = im.C, H = im.H, W = im.W, n = 6, s = im.s, rows = C * H * W;
                Op x = make(d, rows, n, lx, 4), y = make(d, rows, n, ly, 5);
                random_shift(7, 3, s, H, W, x.m, y.m);
                check(y,
                      [&](int64_t i, int64_t j) {
                          philox::Counter w = draw(7, 3, uint64_t(j));
                          int64_t dr = int64_t(w[0] % uint32_t(2 * s + 1)) - s, dc = int64_t(w[1] % uint32_t(2 * s + 1)) - s;
                          int64_t ch = i / (H * W), r = i % (H * W) / W, q = i % W;
                          int64_t sr = r - dr, sq = q - dc;
                          if (sr < 0 || sr >= H || sq < 0 || sq >= W) return 0.0;
                          return x(ch * H * W + sr * W + sq, j);
                      },
                      0, 1, "y");
            }
    });
}

TEST_CASE("kernels: regularize, batchnorm statistics, forward and backward on views against float64",
          "[kernels][regularize]") {
    test::on_every_device([](Device& d) {
        struct Case {
            int64_t rows, group, n;
        };
        for (Case cs : {Case{5, 1, 7}, Case{12, 4, 3}, Case{1, 1, 33}, Case{6, 6, 1}, Case{4, 2, 9000}})
            for (Layout lx : kLayouts) {
                INFO(cs.rows << "×" << cs.n << " group " << cs.group << " x " << name(lx));
                const int64_t F = cs.rows / cs.group, N = cs.group * cs.n;
                Op x = make(d, cs.rows, cs.n, lx, 6, 1, 4), dy = make(d, cs.rows, cs.n, Layout::trans, 7);
                Op g = make(d, F, 1, Layout::padded, 8), b = make(d, 1, F, Layout::trans, 9);
                Op mean = make(d, F, 1, Layout::padded, 10), var = make(d, 1, F, Layout::padded, 11);
                batchnorm_stats(x.m, cs.group, mean.m, var.m);
                const size_t nf = size_t(F);
                std::vector<double> hm(nf), hv(nf), sd(nf), sdx(nf);
                for (int64_t f = 0; f < F; f++) {
                    double s = 0, q = 0;
                    for (int64_t j = 0; j < cs.n; j++)
                        for (int64_t i = f * cs.group; i < (f + 1) * cs.group; i++) s += x(i, j);
                    hm[size_t(f)] = s / double(N);
                    for (int64_t j = 0; j < cs.n; j++)
                        for (int64_t i = f * cs.group; i < (f + 1) * cs.group; i++) q += std::pow(x(i, j) - hm[size_t(f)], 2);
                    hv[size_t(f)] = q / double(N);
                }
                check(mean, [&](int64_t i, int64_t) { return hm[size_t(i)]; }, 1e-6, 4, "mean");
                check(var, [&](int64_t, int64_t j) { return hv[size_t(j)]; }, 1e-5, 1, "var");
                // forward and backward from the statistics the device computed (as a layer does)
                std::vector<float> dm = to_host(mean.m), dv = to_host(var.m);
                auto inv = [&](int64_t f) { return 1.0 / std::sqrt(double(dv[size_t(f)]) + 1e-5); };
                Op y = make(d, cs.rows, cs.n, Layout::padded, 12);
                batchnorm(x.m, mean.m, var.m, g.m, b.m, 1e-5f, cs.group, y.m);
                check(y,
                      [&](int64_t i, int64_t j) {
                          int64_t f = i / cs.group;
                          return g(f, 0) * (x(i, j) - dm[size_t(f)]) * inv(f) + b(0, f);
                      },
                      1e-5, 8, "y");
                Op dg = make(d, F, 1, Layout::padded, 13), db = make(d, F, 1, Layout::trans, 14);
                Op dx = make(d, cs.rows, cs.n, lx, 15);
                batchnorm_backward(dy.m, x.m, mean.m, var.m, g.m, 1e-5f, cs.group, dg.m, db.m, dx.m);
                double scale_dg = 0, scale_db = 0;
                for (int64_t f = 0; f < F; f++) {
                    double a = 0, c = 0;
                    for (int64_t j = 0; j < cs.n; j++)
                        for (int64_t i = f * cs.group; i < (f + 1) * cs.group; i++) {
                            a += dy(i, j);
                            c += dy(i, j) * (x(i, j) - dm[size_t(f)]) * inv(f);
                        }
                    sd[size_t(f)] = a, sdx[size_t(f)] = c;
                    scale_db = std::max(scale_db, std::sqrt(double(N)));
                    scale_dg = std::max(scale_dg, std::sqrt(double(N)) * 2);
                }
                check(db, [&](int64_t f, int64_t) { return sd[size_t(f)]; }, 1e-5, scale_db, "dbeta");
                check(dg, [&](int64_t f, int64_t) { return sdx[size_t(f)]; }, 1e-5, scale_dg, "dgamma");
                check(dx,
                      [&](int64_t i, int64_t j) {
                          int64_t f = i / cs.group;
                          double xh = (x(i, j) - dm[size_t(f)]) * inv(f);
                          return g(f, 0) * inv(f) / double(N) *
                                 (double(N) * dy(i, j) - sd[size_t(f)] - xh * sdx[size_t(f)]);
                      },
                      1e-5, 8, "dx");
            }
    });
}

TEST_CASE("kernels: regularize, edge inputs, dropout of NaN and ±Inf follows IEEE (a dropped one is NaN)",
          "[kernels][regularize][edge]") {
    test::on_every_device([](Device& d) {
        const float nan = std::nanf(""), inf = INFINITY;
        std::vector<float> xs;
        for (int k = 0; k < 16; k++) xs.insert(xs.end(), {nan, inf, -inf, 2.0f});
        Matrix x = from_host(d, 4, 16, xs.data()), mask = zeros(d, 4, 16), y = zeros(d, 4, 16);
        dropout(5, 1, 0.5f, x, mask, y);
        std::vector<float> m = to_host(mask), got = to_host(y);
        int dropped = 0;
        for (size_t k = 0; k < got.size(); k++) {
            INFO("element " << k + 1 << ": x " << xs[k] << ", mask " << m[k] << ", y " << got[k]);
            if (m[k] == 0.0f) {
                dropped++;
                if (std::isfinite(xs[k])) CHECK(got[k] == 0.0f);
                else CHECK(std::isnan(got[k]));  // 0·NaN and 0·Inf
            } else {
                CHECK(m[k] == 2.0f);
                if (std::isnan(xs[k])) CHECK(std::isnan(got[k]));
                else CHECK(got[k] == xs[k] * 2.0f);
            }
        }
        CHECK(dropped > 0);
        CHECK(dropped < 64);
    });
}

// The sequence kernels (layernorm, layernorm_backward, embedding_backward) on
// every device: values worked by hand for a 2×2 case, then random operands
// (dense, padded and transposed views) against float64 references computed
// here, with columns and rows past the 65,535 iterations a driver may allow
// a loop, the scatter-add's sums over repeated tokens the same bits on every
// run, and bad indices named.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/ops.hpp"
#include "error_of.hpp"
#include "every_device.hpp"
#include "vulkan/kernels_bmm.hpp"
#include "vulkan/kernels_layernorm.hpp"

using namespace vela;

namespace {

std::vector<float> randoms(size_t n, uint64_t seed, float lo = -1, float hi = 1) {
    std::vector<float> v(n);
    for (float& x : v) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        x = lo + (hi - lo) * float(double(seed >> 40) / double(1 << 24));
    }
    return v;
}

// A rows×cols operand holding `host` (column-major): dense, at (3, 2) of a larger parent, or the transpose of such a view.
Matrix place(Device& d, int64_t rows, int64_t cols, const std::vector<float>& host, int layout) {
    if (layout == 0) return from_host(d, rows, cols, host.data());
    if (layout == 1) {
        Matrix p = zeros(d, rows + 4, cols + 3);
        Matrix m = view(p, 3, 2, rows, cols);
        for (int64_t j = 0; j < cols; j++) copy(from_host(d, rows, 1, host.data() + j * rows), col(m, j));
        return m;
    }
    std::vector<float> t(host.size());
    for (int64_t j = 0; j < cols; j++)
        for (int64_t i = 0; i < rows; i++) t[size_t(j + i * cols)] = host[size_t(i + j * rows)];
    Matrix p = zeros(d, cols + 4, rows + 3);
    Matrix m = view(p, 3, 2, cols, rows);
    for (int64_t i = 0; i < rows; i++) copy(from_host(d, cols, 1, t.data() + i * cols), col(m, i));
    return m.t();
}

// Largest |got − want| over the elements, relative to max(1, |want|).
double worst(const std::vector<float>& got, const std::vector<double>& want) {
    double w = 0;
    for (size_t k = 0; k < want.size(); k++)
        w = std::max(w, std::fabs(got[k] - want[k]) / std::max(1.0, std::fabs(want[k])));
    return w;
}

struct LnRef {
    std::vector<double> y, mean, rstd, dx, dgamma, dbeta;
};

// Float64 layer norm of each column and its backward.
LnRef layernorm_ref(int64_t m, int64_t n, const std::vector<float>& x, const std::vector<float>& g,
                    const std::vector<float>& b, const std::vector<float>& dy, double eps) {
    LnRef r{std::vector<double>(size_t(m * n)), std::vector<double>(size_t(n)), std::vector<double>(size_t(n)),
            std::vector<double>(size_t(m * n)), std::vector<double>(size_t(m)), std::vector<double>(size_t(m))};
    for (int64_t j = 0; j < n; j++) {
        const float* c = &x[size_t(j * m)];
        double mu = 0, v = 0;
        for (int64_t i = 0; i < m; i++) mu += c[i];
        mu /= double(m);
        for (int64_t i = 0; i < m; i++) v += (c[i] - mu) * (c[i] - mu);
        double rs = 1 / std::sqrt(v / double(m) + eps), s1 = 0, s2 = 0;
        r.mean[size_t(j)] = mu, r.rstd[size_t(j)] = rs;
        for (int64_t i = 0; i < m; i++) {
            size_t k = size_t(i + j * m);
            double xh = (c[i] - mu) * rs, gg = double(dy[k]) * g[size_t(i)];
            r.y[k] = g[size_t(i)] * xh + b[size_t(i)];
            r.dbeta[size_t(i)] += dy[k], r.dgamma[size_t(i)] += dy[k] * xh;
            s1 += gg, s2 += gg * xh;
        }
        for (int64_t i = 0; i < m; i++) {
            size_t k = size_t(i + j * m);
            double xh = (c[i] - mu) * rs, gg = double(dy[k]) * g[size_t(i)];
            r.dx[k] = rs * (gg - s1 / double(m) - xh * s2 / double(m));
        }
    }
    return r;
}

}  // namespace

TEST_CASE("kernels: sequence, layernorm and its backward worked by hand", "[kernels][sequence]") {
    test::on_every_device([](Device& d) {
        // Columns (1, 3): mean 2, var 1, with eps = 3 rstd = 1/√4 = 0.5; (0, 0): mean 0, rstd = 1/√3.
        const float xv[] = {1, 3, 0, 0}, gv[] = {2, 0.5f}, bv[] = {0, 1}, ones[] = {1, 1, 1, 1};
        Matrix x = from_host(d, 2, 2, xv), g = from_host(d, 2, 1, gv), b = from_host(d, 2, 1, bv);
        Matrix mean = zeros(d, 2, 1), rstd = zeros(d, 2, 1), y = zeros(d, 2, 2);
        layernorm(x, g, b, 3.0f, mean, rstd, y);
        std::vector<float> yh = to_host(y), mh = to_host(mean), rh = to_host(rstd);
        CHECK(yh[0] == Approx(-1.0));  // 2·(−0.5) + 0
        CHECK(yh[1] == Approx(1.25));  // 0.5·0.5 + 1
        CHECK(yh[2] == Approx(0.0).margin(1e-7));
        CHECK(yh[3] == Approx(1.0));
        CHECK(mh[0] == Approx(2.0)); CHECK(mh[1] == Approx(0.0).margin(1e-7));
        CHECK(rh[0] == Approx(0.5)); CHECK(rh[1] == Approx(1 / std::sqrt(3.0)));
        // dy = 1: g = (2, 0.5), mean(g) = 1.25; column 1: x̂ = (−0.5, 0.5), mean(g·x̂) = −0.375,
        // dx = 0.5·((0.75, −0.75) + 0.375·(−0.5, 0.5)) = (0.28125, −0.28125); column 2: x̂ = 0,
        // dx = (0.75, −0.75)/√3. dβ = (2, 2), dγ = Σ x̂ = (−0.5, 0.5).
        Matrix dy = from_host(d, 2, 2, ones), dg = zeros(d, 2, 1), db = zeros(d, 2, 1), dx = zeros(d, 2, 2);
        layernorm_backward(dy, x, mean, rstd, g, dg, db, dx);
        std::vector<float> dxh = to_host(dx), dgh = to_host(dg), dbh = to_host(db);
        CHECK(dxh[0] == Approx(0.28125)); CHECK(dxh[1] == Approx(-0.28125));
        CHECK(dxh[2] == Approx(0.75 / std::sqrt(3.0))); CHECK(dxh[3] == Approx(-0.75 / std::sqrt(3.0)));
        CHECK(dgh[0] == Approx(-0.5)); CHECK(dgh[1] == Approx(0.5));
        CHECK(dbh[0] == Approx(2.0)); CHECK(dbh[1] == Approx(2.0));
    });
}

TEST_CASE("kernels: sequence, layernorm forward and backward on views against float64, past the loop limits",
          "[kernels][sequence][limits]") {
    struct Size {
        int64_t m, n;
    };
    const Size sizes[] = {{1, 1}, {5, 7}, {64, 33}, {300, 3}, {70000, 2}, {3, 70000}};
    test::on_every_device([&](Device& d) {
        for (Size s : sizes)
            for (int layout = 0; layout < 3; layout++) {
                if ((s.m * s.n > 100000) && layout != 0) continue;
                INFO(s.m << "×" << s.n << " layout " << layout);
                const size_t mn = size_t(s.m * s.n);
                auto xv = randoms(mn, 1 + s.m, -2, 3), dyv = randoms(mn, 7 + s.n);
                auto gv = randoms(size_t(s.m), 3, 0.5f, 1.5f), bv = randoms(size_t(s.m), 5);
                LnRef r = layernorm_ref(s.m, s.n, xv, gv, bv, dyv, 1e-5);
                Matrix x = place(d, s.m, s.n, xv, layout), dy = place(d, s.m, s.n, dyv, layout);
                Matrix g = from_host(d, s.m, 1, gv.data()), b = from_host(d, s.m, 1, bv.data());
                Matrix mean = zeros(d, s.n, 1), rstd = zeros(d, s.n, 1), y = place(d, s.m, s.n, xv, layout);
                layernorm(x, g, b, 1e-5f, mean, rstd, y);
                CHECK(worst(to_host(y), r.y) < 2e-4);
                CHECK(worst(to_host(mean), r.mean) < 1e-5);
                std::vector<double> rel(r.rstd.size(), 1.0);
                std::vector<float> rh = to_host(rstd);
                for (size_t k = 0; k < rh.size(); k++) rh[k] = float(rh[k] / r.rstd[k]);
                CHECK(worst(rh, rel) < 1e-5);
                Matrix dg = zeros(d, s.m, 1), db = zeros(d, s.m, 1), dx = place(d, s.m, s.n, dyv, 1 - layout % 2);
                layernorm_backward(dy, x, mean, rstd, g, dg, db, dx);
                CHECK(worst(to_host(dx), r.dx) < 1e-3);
                // Sums over up to 70,000 columns: float32 accumulation on Vulkan.
                CHECK(worst(to_host(dg), r.dgamma) < (s.n > 1000 ? 2e-3 : 1e-4));
                CHECK(worst(to_host(db), r.dbeta) < (s.n > 1000 ? 2e-3 : 1e-4));
            }
    });
}

TEST_CASE("kernels: sequence, layernorm argument errors", "[kernels][sequence]") {
    test::on_every_device([](Device& d) {
        Matrix x = zeros(d, 4, 3), g = zeros(d, 4, 1), mean = zeros(d, 3, 1), rstd = zeros(d, 3, 1);
        CHECK(test::error_of([&] { layernorm(x, zeros(d, 3, 1), g, 1e-5f, mean, rstd, x); }) ==
              "layernorm: gamma is 3×1 but must be a vector of 4 elements (one per row of x)");
        CHECK(test::error_of([&] { layernorm(x, g, g, 0.0f, mean, rstd, x); }) ==
              "layernorm: eps is 0 but must be a positive number");
        CHECK(test::error_of([&] { layernorm(x, g, g, 1e-5f, zeros(d, 4, 1), rstd, x); }) ==
              "layernorm: mean is 4×1 but must be a vector of 3 elements (one per column of x)");
    });
}

TEST_CASE("kernels: sequence, embedding_backward against float64, repeated tokens the same bits every run",
          "[kernels][sequence][limits]") {
    struct Size {
        int64_t dim, vocab, n;
    };
    const Size sizes[] = {{1, 1, 1}, {3, 5, 17}, {16, 65, 300}, {2, 3, 9000}};
    test::on_every_device([&](Device& d) {
        for (Size s : sizes)
            for (int layout = 0; layout < 3; layout++) {
                INFO(s.dim << "×" << s.vocab << ", " << s.n << " tokens, layout " << layout);
                auto dyv = randoms(size_t(s.dim * s.n), 11 + s.n), e0 = randoms(size_t(s.dim * s.vocab), 13);
                auto iv = randoms(size_t(s.n), 17, 0, float(s.vocab));
                for (float& v : iv) v = std::floor(v) + 1 > float(s.vocab) ? float(s.vocab) : std::floor(v) + 1;
                std::vector<double> want(e0.begin(), e0.end());
                for (int64_t j = 0; j < s.n; j++)
                    for (int64_t i = 0; i < s.dim; i++)
                        want[size_t(i + (int64_t(iv[size_t(j)]) - 1) * s.dim)] += dyv[size_t(i + j * s.dim)];
                Matrix dy = place(d, s.dim, s.n, dyv, layout), idx = from_host(d, 1, s.n, iv.data());
                Matrix dE = place(d, s.dim, s.vocab, e0, 2 - layout), dE2 = place(d, s.dim, s.vocab, e0, 0);
                embedding_backward(dy, idx, dE);
                embedding_backward(dy, idx, dE2);
                std::vector<float> got = to_host(dE), got2 = to_host(dE2);
                CHECK(worst(got, want) < 1e-4 * std::sqrt(double(s.n)));
                CHECK(std::memcmp(got.data(), got2.data(), got.size() * sizeof(float)) == 0);
            }
    });
}

TEST_CASE("kernels: sequence, embedding_backward names a bad index", "[kernels][sequence]") {
    test::on_every_device([](Device& d) {
        const float bad[] = {1, 2, 6, 0};
        Matrix dy = zeros(d, 2, 4), dE = zeros(d, 2, 5), idx = from_host(d, 4, 1, bad);
        std::string e = test::error_of([&] {
            embedding_backward(dy, idx, dE);
            to_host(dE);
        });
        CHECK(e.find("embedding_backward: idx at position 3 is not a column index of dE (an integer in 1..5)") !=
              std::string::npos);
        CHECK(test::error_of([&] { embedding_backward(dy, zeros(d, 3, 1), dE); }) ==
              "embedding_backward: idx has 3 indices but dy has 4 columns (one index per column of dy)");
    });
}

TEST_CASE("kernels: sequence, softmax_causal worked by hand for 3 tokens", "[kernels][sequence]") {
    test::on_every_device([](Device& d) {
        // Column 1 sees key 1, column 2 keys 1-2, column 3 keys 1-3 with scores (0, ln 2, 0).
        const float xv[] = {5, -1, 7, 0, 0, 9, 0, float(std::log(2.0)), 0};
        Matrix x = from_host(d, 3, 3, xv), y = zeros(d, 3, 3);
        softmax_causal(x, y);
        std::vector<float> yh = to_host(y);
        const double want[] = {1, 0, 0, 0.5, 0.5, 0, 0.25, 0.5, 0.25};
        for (int k = 0; k < 9; k++) CHECK(yh[size_t(k)] == Approx(want[k]).margin(1e-7));
        // dy = (1, 2, 3) in column 3: Σ y·dy = 2, dx = y ∘ (dy − 2) = (−0.25, 0, 0.25).
        const float dyv[] = {1, 1, 1, 1, 1, 1, 1, 2, 3};
        Matrix dy = from_host(d, 3, 3, dyv), dx = zeros(d, 3, 3);
        softmax_causal_backward(y, dy, dx);
        std::vector<float> dxh = to_host(dx);
        const double wdx[] = {0, 0, 0, 0, 0, 0, -0.25, 0, 0.25};
        for (int k = 0; k < 9; k++) CHECK(dxh[size_t(k)] == Approx(wdx[k]).margin(1e-7));
    });
}

TEST_CASE("kernels: sequence, softmax_causal and its backward on views against float64",
          "[kernels][sequence]") {
    struct Size {
        int64_t T, n;
    };
    const Size sizes[] = {{1, 1}, {1, 4}, {5, 15}, {64, 128}, {300, 600}};
    test::on_every_device([&](Device& d) {
        for (Size s : sizes)
            for (int layout = 0; layout < 3; layout++) {
                INFO(s.T << "×" << s.n << " layout " << layout);
                const size_t tn = size_t(s.T * s.n);
                auto xv = randoms(tn, 21 + s.T, -4, 4), dyv = randoms(tn, 23 + s.n);
                std::vector<double> y(tn), dx(tn);
                for (int64_t j = 0; j < s.n; j++) {
                    int64_t p = j % s.T;
                    double m = -INFINITY, sum = 0, dot = 0;
                    for (int64_t i = 0; i <= p; i++) m = std::max(m, double(xv[size_t(i + j * s.T)]));
                    for (int64_t i = 0; i <= p; i++) sum += std::exp(xv[size_t(i + j * s.T)] - m);
                    for (int64_t i = 0; i <= p; i++) {
                        size_t k = size_t(i + j * s.T);
                        y[k] = std::exp(xv[k] - m) / sum;
                        dot += y[k] * dyv[k];
                    }
                    for (int64_t i = 0; i <= p; i++) {
                        size_t k = size_t(i + j * s.T);
                        dx[k] = y[k] * (dyv[k] - dot);
                    }
                }
                Matrix x = place(d, s.T, s.n, xv, layout), ym = place(d, s.T, s.n, dyv, 2 - layout);
                softmax_causal(x, ym);
                CHECK(worst(to_host(ym), y) < 1e-5);
                softmax_causal(x, x);  // in place
                CHECK(worst(to_host(x), y) < 1e-5);
                Matrix dym = place(d, s.T, s.n, dyv, layout), dxm = place(d, s.T, s.n, xv, (layout + 1) % 3);
                softmax_causal_backward(ym, dym, dxm);
                CHECK(worst(to_host(dxm), dx) < 1e-5);
                softmax_causal_backward(ym, dym, dym);  // dx = dy
                CHECK(worst(to_host(dym), dx) < 1e-5);
            }
        if (d.name() != "cpu") {  // one column per invocation: the loop bound is the context T
            Matrix big = zeros(d, 4097, 4097);
            CHECK(test::error_of([&] { softmax_causal(big, big); }) ==
                  "softmax_causal: x has 4097 rows but " + d.name() +
                      " takes at most 4096 (the context T; each column is one loop)");
        }
        CHECK(test::error_of([&] { softmax_causal(zeros(d, 3, 4), zeros(d, 3, 4)); }) ==
              "softmax_causal: x is 3×4 but must be T×n with n a multiple of T (one column per query, T keys per "
              "column)");
    });
}

TEST_CASE("kernels: sequence, bmm worked by hand", "[kernels][sequence][bmm]") {
    test::on_every_device([](Device& d) {
        // A₁ = (1 2), A₂ = (3 4); B₁ = (1 1)ᵀ, B₂ = (2 0)ᵀ: A₁B₁ = 3, A₂B₂ = 6; c = (1 1), α = 2, β = 1: (7 13).
        const float av[] = {1, 2, 3, 4}, bv[] = {1, 1, 2, 0}, cv[] = {1, 1};
        Matrix a = from_host(d, 1, 4, av), b = from_host(d, 2, 2, bv), c = from_host(d, 1, 2, cv);
        bmm(2.0f, a, b, 1.0f, c, 2);
        std::vector<float> ch = to_host(c);
        CHECK(ch[0] == 7.0f);
        CHECK(ch[1] == 13.0f);
        // tb: b = (1 1 | 2 0) as 1×4, blocks Bᵢᵀ 2×1, the same products.
        Matrix bt = from_host(d, 1, 4, bv), c2 = zeros(d, 1, 2);
        bmm(1.0f, a, bt, 0.0f, c2, 2, false, true);
        ch = to_host(c2);
        CHECK(ch[0] == 3.0f);
        CHECK(ch[1] == 6.0f);
    });
}

namespace {

// Float64 reference of bmm on logical column-major operands (a, b in the shapes bmm takes).
std::vector<double> bmm_ref(int64_t m, int64_t n, int64_t k, int64_t count, bool ta, bool tb, double alpha,
                            const std::vector<float>& a, const std::vector<float>& b, double beta,
                            const std::vector<float>& c) {
    std::vector<double> r(c.begin(), c.end());
    for (int64_t z = 0; z < count; z++)
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < m; i++) {
                double s = 0;
                for (int64_t l = 0; l < k; l++) {
                    double x = ta ? a[size_t(l + (z * m + i) * k)] : a[size_t(i + (z * k + l) * m)];
                    double y = tb ? b[size_t(j + (z * k + l) * n)] : b[size_t(l + (z * n + j) * k)];
                    s += x * y;
                }
                size_t e = size_t(i + (z * n + j) * m);
                r[e] = alpha * s + (beta == 0 ? 0.0 : beta * c[e]);
            }
    return r;
}

}  // namespace

TEST_CASE("kernels: sequence, bmm on views, transposed, α and β against float64, past the block limits",
          "[kernels][sequence][bmm][limits]") {
    struct Size {
        int64_t m, n, k, count;
    };
    const Size sizes[] = {{1, 1, 1, 1}, {3, 5, 7, 4}, {17, 16, 33, 3}, {64, 64, 32, 6}, {2, 3, 0, 2},
                          {1, 1, 20000, 2}, {2, 3, 2, 70000}};
    const float ab[][2] = {{1, 0}, {0, 1}, {0.5f, -1.5f}};
    test::on_every_device([&](Device& d) {
        for (Size s : sizes)
            for (int t = 0; t < 4; t++)
                for (int layout = 0; layout < 3; layout++)
                    for (auto [alpha, beta] : ab) {
                        const bool big = s.count > 1000 || s.k > 1000;
                        if (big && (layout != 0 || alpha != 0.5f)) continue;  // place() copies views column by column
                        const bool ta = t & 1, tb = t & 2;
                        INFO(s.m << "×" << s.n << "×" << s.k << " count " << s.count << " ta " << ta << " tb " << tb
                                 << " layout " << layout << " α " << alpha << " β " << beta);
                        const int64_t ar = ta ? s.k : s.m, ac = (ta ? s.m : s.k) * s.count;
                        const int64_t br = tb ? s.n : s.k, bc = (tb ? s.k : s.n) * s.count;
                        auto av = randoms(size_t(ar * ac), 31 + s.m), bv = randoms(size_t(br * bc), 37 + s.n);
                        auto cv = randoms(size_t(s.m * s.n * s.count), 41 + s.k);
                        auto want = bmm_ref(s.m, s.n, s.k, s.count, ta, tb, alpha, av, bv, beta, cv);
                        if (beta == 0) std::fill(cv.begin(), cv.end(), NAN);  // β = 0: c is never read
                        Matrix a = place(d, ar, ac, av, layout), b = place(d, br, bc, bv, (layout + 1) % 3);
                        Matrix c = place(d, s.m, s.n * s.count, cv, (layout + 2) % 3);
                        bmm(alpha, a, b, beta, c, s.count, ta, tb);
                        CHECK(worst(to_host(c), want) < 1e-5 * std::sqrt(double(std::max<int64_t>(s.k, 1))) + 1e-6);
                    }
        // Past a lowered per-dispatch block limit on Vulkan (the cpu ignores it): 20 blocks of 19×21×18 in
        // dispatches of 7, each transpose, each variant: bmm.comp direct and tiled, the register-blocked mm
        // (the software drivers'; bmm.comp where the device lacks subgroup ballot).
        for (int tiled = 0; tiled < 3; tiled++)
            for (int t = 0; t < 4; t++) {
                const bool ta = t & 1, tb = t & 2;
                INFO("tiled " << tiled << " ta " << ta << " tb " << tb);
                vk::limit_bmm_blocks(7);
                vk::force_bmm_tiled(tiled);
                const int64_t m = 19, n = 21, k = 18, cnt = 20;
                auto av = randoms(size_t(m * k * cnt), 3), bv = randoms(size_t(k * n * cnt), 5);
                auto cv = randoms(size_t(m * n * cnt), 7);
                auto want = bmm_ref(m, n, k, cnt, ta, tb, 1.0, av, bv, 1.0, cv);
                Matrix a = from_host(d, ta ? k : m, (ta ? m : k) * cnt, av.data());
                Matrix b = from_host(d, tb ? n : k, (tb ? k : n) * cnt, bv.data());
                Matrix c = from_host(d, m, n * cnt, cv.data());
                bmm(1.0f, a, b, 1.0f, c, cnt, ta, tb);
                std::vector<float> got = to_host(c);
                vk::limit_bmm_blocks(0);
                vk::force_bmm_tiled(-1);
                CHECK(worst(got, want) < 1e-5);
            }
    });
}

TEST_CASE("kernels: sequence, bmm argument errors", "[kernels][sequence][bmm]") {
    test::on_every_device([](Device& d) {
        Matrix a = zeros(d, 2, 6), b = zeros(d, 3, 4), c = zeros(d, 2, 4);
        CHECK(test::error_of([&] { bmm(1, a, b, 0, c, 0); }) ==
              "bmm: count is 0 but must be a positive integer (the number of blocks)");
        CHECK(test::error_of([&] { bmm(1, a, b, 0, c, 4); }) ==
              "bmm: a is 2×6 but count is 4 (count must divide a's 6 columns into equal blocks)");
        CHECK(test::error_of([&] { bmm(1, a, b, 0, c, 2, true); }) ==
              "bmm: the blocks aᵢᵀ are 3×2 and bᵢ are 3×2 (aᵢᵀ's columns must equal bᵢ's rows; count = 2)");
        CHECK(test::error_of([&] { bmm(1, a, b, 0, zeros(d, 3, 4), 2); }) ==
              "bmm: the blocks cᵢ are 3×2 but aᵢ·bᵢ is 2×2 (c must be 2×4; count = 2)");
        Matrix big = zeros(d, 3, 12);
        CHECK(test::error_of([&] { bmm(1, view(big, 0, 0, 2, 6), view(big, 0, 6, 3, 4), 0, view(big, 0, 8, 2, 4), 2); }) ==
              "bmm: c aliases b (the output of bmm must not overlap its inputs)");
    });
}

// VulkanDevice's own layer-norm kernels (shaders/layernorm.comp): columns longer than one
// workgroup's chunk (the chunked path, reached at 300,000 rows and, with the per-loop iteration
// limit lowered to 3, at 1,000 rows), more columns than one grid dimension's 65,535 workgroups,
// γ, mean and rstd as strided row views, columns far from 0 (mean 1000), and y = x.
TEST_CASE("kernels: sequence, layernorm chunked columns, strided vectors, offset columns against float64",
          "[kernels][sequence][layernorm][limits]") {
    struct Case {
        int64_t m, n;
        uint64_t limit;
        int layout;
        float offset;
    };
    const Case cases[] = {{1000, 5, 3, 0, 0},  {1000, 5, 3, 1, 0},     {1000, 5, 3, 2, 0}, {300000, 2, 0, 0, 0},
                          {3, 70000, 0, 0, 0}, {257, 300, 0, 2, 1000}, {2000, 3, 5, 0, 1000}};
    test::on_every_device([&](Device& d) {
        for (const Case& s : cases) {
            INFO(s.m << "×" << s.n << " limit " << s.limit << " layout " << s.layout << " offset " << s.offset);
            vk::limit_layernorm_iterations(s.limit);
            const size_t mn = size_t(s.m * s.n);
            auto xv = randoms(mn, 11 + s.m, s.offset - 1, s.offset + 1), dyv = randoms(mn, 13 + s.n);
            auto gv = randoms(size_t(s.m), 17, 0.5f, 1.5f), bv = randoms(size_t(s.m), 19);
            LnRef r = layernorm_ref(s.m, s.n, xv, gv, bv, dyv, 1e-5);
            Matrix x = place(d, s.m, s.n, xv, s.layout), dy = place(d, s.m, s.n, dyv, s.layout);
            // γ as row 1 of a 2×m matrix (step 2), mean and rstd as rows of a 3×n matrix (step 3).
            Matrix gp = zeros(d, 2, s.m), st = zeros(d, 3, s.n);
            Matrix g = row(gp, 1), mean = row(st, 0), rstd = row(st, 2);
            copy(from_host(d, 1, s.m, gv.data()), g);
            Matrix b = from_host(d, s.m, 1, bv.data()), y = zeros(d, s.m, s.n);
            layernorm(x, g, b, 1e-5f, mean, rstd, y);
            const double tol = s.offset != 0 ? 2e-3 : 2e-4;
            CHECK(worst(to_host(y), r.y) < tol);
            std::vector<float> mh = to_host(mean), rh = to_host(rstd);
            CHECK(worst(mh, r.mean) < (s.offset != 0 ? 2e-6 : 1e-5));
            for (size_t k = 0; k < rh.size(); k++) rh[k] = float(rh[k] / r.rstd[k]);
            CHECK(worst(rh, std::vector<double>(rh.size(), 1.0)) < tol);
            Matrix dg = zeros(d, s.m, 1), db = zeros(d, s.m, 1), dx = zeros(d, s.m, s.n);
            layernorm_backward(dy, x, mean, rstd, g, dg, db, dx);
            CHECK(worst(to_host(dx), r.dx) < (s.offset != 0 ? 1e-2 : 1e-3));
            CHECK(worst(to_host(dg), r.dgamma) < (s.n > 1000 || s.offset != 0 ? 2e-3 : 1e-4));
            CHECK(worst(to_host(db), r.dbeta) < (s.n > 1000 ? 2e-3 : 1e-4));
            layernorm(x, g, b, 1e-5f, mean, rstd, x);  // in place (y = x)
            CHECK(worst(to_host(x), r.y) < tol);
        }
        vk::limit_layernorm_iterations(0);
    });
}

// The convolution and pooling kernels (im2col, col2im, maxpool, avgpool, their
// backward steps, to_images/from_images) on every usable device, against
// float64 references computed here with the plain loops of the definitions
// (each written from the formula, not from the kernels), on dense operands and
// on views, and at sizes past the loop limit of llvmpipe (65,535 iterations per
// invocation): windows and covering counts that take several passes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "core/device.hpp"
#include "core/error.hpp"
#include "core/ops.hpp"
#include "every_device.hpp"

using namespace vela;
using vela::test::on_every_device;

namespace {

// splitmix64 values in [-4, 4); with ties, rounded down to multiples of 1/2
// so that maxima tie now and then.
std::vector<float> data(size_t n, uint64_t seed, bool ties = false) {
    std::vector<float> v = vela::test::splitmix_values(n, seed);
    if (ties)
        for (float& e : v) e = std::floor(e * 2) / 2;
    return v;
}

// Pixel (c, iy, ix) of sample n of a dense (C·H·W)×N batch, 0 outside the image.
double pixel(const std::vector<float>& x, const ConvGeom& g, int64_t n, int64_t c, int64_t iy, int64_t ix) {
    if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) return 0.0;
    return x[size_t(n * g.pixels() + (c * g.h + iy) * g.w + ix)];
}

// Calls f(n, c, iy, ix, k) for every entry k (column-major) of the im2col
// matrix of an N-image batch: pixel (iy, ix) of channel c of image n, which may
// lie on the padding.
template <class F>
void for_each_patch_entry(const ConvGeom& g, int64_t N, F f) {
    const int64_t oh = g.oh(), ow = g.ow(), R = g.patch();
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < g.c; c++)
            for (int64_t ky = 0; ky < g.kh; ky++)
                for (int64_t kx = 0; kx < g.kw; kx++)
                    for (int64_t oy = 0; oy < oh; oy++)
                        for (int64_t ox = 0; ox < ow; ox++) {
                            int64_t r = (c * g.kh + ky) * g.kw + kx, q = n * oh * ow + oy * ow + ox;
                            f(n, c, oy * g.sh - g.ph + ky, ox * g.sw - g.pw + kx, size_t(r + q * R));
                        }
}

std::vector<double> im2col_ref(const std::vector<float>& x, const ConvGeom& g, int64_t N) {
    std::vector<double> cols(size_t(g.patch() * g.oh() * g.ow() * N));
    for_each_patch_entry(g, N, [&](int64_t n, int64_t c, int64_t iy, int64_t ix, size_t k) {
        cols[k] = pixel(x, g, n, c, iy, ix);
    });
    return cols;
}

// x0 + the scatter of every cols entry to its pixel (entries on padding dropped).
std::vector<double> col2im_ref(const std::vector<float>& cols, const std::vector<float>& x0, const ConvGeom& g,
                               int64_t N) {
    std::vector<double> x(x0.begin(), x0.end());
    for_each_patch_entry(g, N, [&](int64_t n, int64_t c, int64_t iy, int64_t ix, size_t k) {
        if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) return;
        x[size_t(n * g.pixels() + (c * g.h + iy) * g.w + ix)] += cols[k];
    });
    return x;
}

struct PoolRef {
    std::vector<double> max, idx, avg;
};

// Every window scanned in row-major order over the padded image; padding is
// skipped by max and counts as 0 for the average (divided by kh·kw).
PoolRef pool_ref(const std::vector<float>& x, const ConvGeom& g, int64_t N) {
    const int64_t oh = g.oh(), ow = g.ow(), outs = g.c * oh * ow;
    PoolRef r{std::vector<double>(size_t(outs * N)), std::vector<double>(size_t(outs * N)),
              std::vector<double>(size_t(outs * N))};
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < g.c; c++)
            for (int64_t oy = 0; oy < oh; oy++)
                for (int64_t ox = 0; ox < ow; ox++) {
                    double m = -INFINITY, s = 0;
                    int64_t at = -1;
                    for (int64_t ky = 0; ky < g.kh; ky++)
                        for (int64_t kx = 0; kx < g.kw; kx++) {
                            int64_t iy = oy * g.sh - g.ph + ky, ix = ox * g.sw - g.pw + kx;
                            if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
                            double v = pixel(x, g, n, c, iy, ix);
                            s += v;
                            if (at < 0 || v > m) m = v, at = (c * g.h + iy) * g.w + ix;
                        }
                    size_t o = size_t(n * outs + (c * oh + oy) * ow + ox);
                    r.max[o] = m, r.idx[o] = double(at + 1), r.avg[o] = s / double(g.kh * g.kw);
                }
    return r;
}

// dx of max pooling: each dy added to the pixel its window's maximum came from.
std::vector<double> maxpool_backward_ref(const std::vector<float>& dy, const std::vector<double>& idx,
                                         const ConvGeom& g, int64_t N) {
    const int64_t outs = g.c * g.oh() * g.ow();
    std::vector<double> dx(size_t(g.pixels() * N), 0.0);
    for (int64_t n = 0; n < N; n++)
        for (int64_t o = 0; o < outs; o++) dx[size_t(n * g.pixels() + int64_t(idx[size_t(n * outs + o)]) - 1)] += dy[size_t(n * outs + o)];
    return dx;
}

std::vector<double> avgpool_backward_ref(const std::vector<float>& dy, const ConvGeom& g, int64_t N) {
    const int64_t oh = g.oh(), ow = g.ow(), outs = g.c * oh * ow;
    std::vector<double> dx(size_t(g.pixels() * N), 0.0);
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < g.c; c++)
            for (int64_t oy = 0; oy < oh; oy++)
                for (int64_t ox = 0; ox < ow; ox++)
                    for (int64_t ky = 0; ky < g.kh; ky++)
                        for (int64_t kx = 0; kx < g.kw; kx++) {
                            int64_t iy = oy * g.sh - g.ph + ky, ix = ox * g.sw - g.pw + kx;
                            if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
                            dx[size_t(n * g.pixels() + (c * g.h + iy) * g.w + ix)] +=
                                dy[size_t(n * outs + (c * oh + oy) * ow + ox)] / double(g.kh * g.kw);
                        }
    return dx;
}

void check_close(const std::vector<float>& got, const std::vector<double>& want, double rel, double abs) {
    REQUIRE(got.size() == want.size());
    size_t bad = 0, first = 0;
    for (size_t k = 0; k < want.size(); ++k)
        if (!(std::fabs(got[k] - want[k]) <= rel * std::fabs(want[k]) + abs) && bad++ == 0) first = k;
    if (bad)
        FAIL_CHECK(bad << " of " << got.size() << " off; first at " << first << ": got " << got[first] << ", want "
                       << want[first]);
}

void check_exact(const std::vector<float>& got, const std::vector<double>& want) { check_close(got, want, 0, 0); }

ConvGeom geom(int64_t c, int64_t h, int64_t w, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw) {
    ConvGeom g;
    g.c = c, g.h = h, g.w = w, g.kh = kh, g.kw = kw, g.sh = sh, g.sw = sw, g.ph = ph, g.pw = pw;
    return g;
}

std::string str(const ConvGeom& g) {
    return format("c%lld %lldx%lld k%lldx%lld s%lldx%lld p%lldx%lld", (long long)g.c, (long long)g.h, (long long)g.w,
                  (long long)g.kh, (long long)g.kw, (long long)g.sh, (long long)g.sw, (long long)g.ph, (long long)g.pw);
}

// A dense N-column matrix as a view: columns 2..N+1 of a wider matrix with a
// row offset (ld > rows), holding v.
Matrix as_view(Device& d, const std::vector<float>& v, int64_t rows, int64_t cols) {
    Matrix big = zeros(d, rows + 3, cols + 2);
    Matrix m = view(big, 2, 1, rows, cols);
    Matrix dense = from_host(d, rows, cols, v.data());
    copy(dense, m);
    return m;
}

}  // namespace

TEST_CASE("kernels: conv im2col and col2im against float64 loops", "[kernels][conv]") {
    const std::vector<ConvGeom> geoms = {
        geom(3, 7, 6, 3, 3, 1, 1, 1, 1), geom(2, 9, 8, 3, 2, 2, 3, 1, 0), geom(1, 5, 5, 5, 5, 1, 1, 0, 0),
        geom(4, 8, 8, 2, 2, 2, 2, 0, 0), geom(1, 28, 28, 5, 5, 1, 1, 2, 2), geom(2, 4, 11, 1, 4, 3, 1, 0, 3)};
    on_every_device([&](Device& d) {
        for (const ConvGeom& g : geoms) {
            for (bool views : {false, true}) {
                INFO(str(g) << (views ? " views" : " dense"));
                const int64_t N = 3, R = g.patch(), Q = g.positions() * N;
                std::vector<float> xv = data(size_t(g.pixels() * N), uint64_t(g.c * 131 + g.h * 7 + g.kw));
                Matrix x = views ? as_view(d, xv, g.pixels(), N) : from_host(d, g.pixels(), N, xv.data());
                // cols: dense, or the transposed view of a Q×R matrix (how nn.conv2d keeps it).
                Matrix store = views ? zeros(d, Q, R) : zeros(d, R, Q);
                Matrix cols = views ? store.t() : store;
                im2col(g, x, cols);
                check_exact(to_host(cols), im2col_ref(xv, g, N));
                // cols a view with unit row step that starts 1 or 2 elements into a wider
                // matrix (ld R + 3): its runs of four rows are not 16-byte aligned.
                for (int64_t off : {1, 2}) {
                    INFO("cols at row offset " << off);
                    Matrix wide = zeros(d, R + 3, Q);
                    Matrix part = view(wide, off, 0, R, Q);
                    im2col(g, x, part);
                    check_exact(to_host(part), im2col_ref(xv, g, N));
                }

                std::vector<float> cv = data(size_t(R * Q), 99 + uint64_t(R));
                Matrix c2 = views ? as_view(d, cv, R, Q) : from_host(d, R, Q, cv.data());
                std::vector<float> x0 = data(size_t(g.pixels() * N), 5);
                Matrix xo = views ? as_view(d, x0, g.pixels(), N) : from_host(d, g.pixels(), N, x0.data());
                col2im(g, c2, xo);  // accumulates onto x0
                check_close(to_host(xo), col2im_ref(cv, x0, g, N), 1e-5, 1e-5);
                // The same windows stored row by row (cols as the transpose of a Q×R matrix).
                std::vector<float> tv(cv.size());
                for (int64_t q = 0; q < Q; q++)
                    for (int64_t r = 0; r < R; r++) tv[size_t(q + r * Q)] = cv[size_t(r + q * R)];
                Matrix c3 = from_host(d, Q, R, tv.data()).t();
                Matrix xt = views ? as_view(d, x0, g.pixels(), N) : from_host(d, g.pixels(), N, x0.data());
                col2im(g, c3, xt);
                check_close(to_host(xt), col2im_ref(cv, x0, g, N), 1e-5, 1e-5);
            }
        }
    });
}

TEST_CASE("kernels: conv max and average pooling and their backward steps against float64 loops", "[kernels][conv]") {
    const std::vector<ConvGeom> geoms = {
        geom(3, 8, 8, 2, 2, 2, 2, 0, 0), geom(2, 7, 9, 3, 3, 2, 2, 1, 1), geom(1, 6, 5, 3, 2, 1, 1, 1, 1),
        geom(4, 24, 24, 2, 2, 2, 2, 0, 0), geom(2, 5, 7, 5, 4, 3, 1, 2, 0),
        // 2×2 stride 2 with an odd last row and column, and rows of 4 windows and a rest
        geom(2, 9, 11, 2, 2, 2, 2, 0, 0), geom(1, 3, 19, 2, 2, 2, 2, 0, 0),
        // rows of exactly 4 windows (the cpu's two-rows-a-vector loop): an odd last column and row, an odd row count
        geom(2, 9, 9, 2, 2, 2, 2, 0, 0), geom(3, 6, 8, 2, 2, 2, 2, 0, 0),
        // windows apart (stride > window) with padding: pixels in no window
        geom(2, 9, 10, 2, 3, 3, 4, 1, 1)};
    on_every_device([&](Device& d) {
        for (const ConvGeom& g : geoms) {
            for (bool views : {false, true}) {
                INFO(str(g) << (views ? " views" : " dense"));
                const int64_t N = 3, outs = g.c * g.positions();
                std::vector<float> xv = data(size_t(g.pixels() * N), uint64_t(g.c * 17 + g.w), true);
                Matrix x = views ? as_view(d, xv, g.pixels(), N) : from_host(d, g.pixels(), N, xv.data());
                PoolRef want = pool_ref(xv, g, N);
                Matrix y = views ? view(zeros(d, outs + 1, N + 1), 1, 0, outs, N) : zeros(d, outs, N);
                Matrix idx = zeros(d, outs, N);
                maxpool(g, x, y, idx);
                check_exact(to_host(y), want.max);
                check_exact(to_host(idx), want.idx);
                avgpool(g, x, y);
                check_close(to_host(y), want.avg, 1e-5, 1e-6);

                std::vector<float> dyv = data(size_t(outs * N), 3 + uint64_t(outs));
                Matrix dy = views ? as_view(d, dyv, outs, N) : from_host(d, outs, N, dyv.data());
                Matrix dx = views ? view(zeros(d, g.pixels() + 2, N), 2, 0, g.pixels(), N) : empty(d, g.pixels(), N);
                maxpool_backward(g, dy, idx, dx);
                check_close(to_host(dx), maxpool_backward_ref(dyv, want.idx, g, N), 1e-6, 1e-6);
                avgpool_backward(g, dy, dx);
                check_close(to_host(dx), avgpool_backward_ref(dyv, g, N), 1e-5, 1e-6);
            }
        }
    });
}

// The rule of docs/edge-contract.md: NaN loses to any number (−Inf too); a
// window of only NaN gives NaN at its first pixel, so the backward routes the
// window's gradient there (before: −Inf, index 0, the gradient dropped).
TEST_CASE("kernels: conv maxpool picks the first maximum; NaN loses, an all-NaN window is NaN at its first pixel",
          "[kernels][conv][edge]") {
    auto same = [](const std::vector<float>& got, const std::vector<float>& want) {
        REQUIRE(got.size() == want.size());
        for (size_t k = 0; k < want.size(); k++) {
            INFO("output " << k + 1 << ": got " << got[k] << ", want " << want[k]);
            CHECK((std::isnan(want[k]) ? std::isnan(got[k]) : got[k] == want[k]));
        }
    };
    on_every_device([&](Device& d) {
        ConvGeom g = geom(1, 2, 4, 2, 2, 2, 2, 0, 0);
        const float nan = std::numeric_limits<float>::quiet_NaN();
        // column-major 8×1: pixels row 0: 1 5 nan nan; row 1: 5 2 nan nan
        std::vector<float> xv = {1, 5, nan, nan, 5, 2, nan, nan};
        Matrix x = from_host(d, 8, 1, xv.data()), y = zeros(d, 2, 1), idx = zeros(d, 2, 1);
        maxpool(g, x, y, idx);
        same(to_host(y), {5, nan});
        same(to_host(idx), {2, 3});  // pixel (0, 1), row 2, before (1, 0) at row 5; the NaN window's first pixel
        // The backward routes both windows' gradients.
        const float dyv[] = {10, 20};
        Matrix dy = from_host(d, 2, 1, dyv), dx = zeros(d, 8, 1);
        maxpool_backward(g, dy, idx, dx);
        same(to_host(dx), {0, 10, 20, 0, 0, 0, 0, 0});
        // Four windows in a row (the cpu's vector path): row 0: 1 5 nan nan 3 3 -inf -inf;
        // row 1: 5 2 nan nan 3 7 -inf nan
        ConvGeom g4 = geom(1, 2, 8, 2, 2, 2, 2, 0, 0);
        std::vector<float> x4 = {1, 5, nan, nan, 3, 3, -INFINITY, -INFINITY, 5, 2, nan, nan, 3, 7, -INFINITY, nan};
        Matrix xm = from_host(d, 16, 1, x4.data()), y4 = zeros(d, 4, 1), i4 = zeros(d, 4, 1);
        maxpool(g4, xm, y4, i4);
        same(to_host(y4), {5, nan, 7, -INFINITY});
        same(to_host(i4), {2, 3, 14, 7});  // pixel (1, 5); the first −inf, pixel (0, 6)
        // Eight windows in a row (the cpu's AVX2 path): the four above twice over.
        ConvGeom g8 = geom(1, 2, 16, 2, 2, 2, 2, 0, 0);
        std::vector<float> x8(32);
        for (int64_t r = 0; r < 2; r++)
            for (int64_t k = 0; k < 16; k++) x8[size_t(r * 16 + k)] = x4[size_t(r * 8 + k % 8)];
        Matrix x8m = from_host(d, 32, 1, x8.data()), y8 = zeros(d, 8, 1), i8 = zeros(d, 8, 1);
        maxpool(g8, x8m, y8, i8);
        same(to_host(y8), {5, nan, 7, -INFINITY, 5, nan, 7, -INFINITY});
        same(to_host(i8), {2, 3, 22, 7, 10, 11, 30, 15});  // 1-based rows: r·16 + column + 1
        // Eight more windows on the AVX2 path (pixels top-left, top-right, bottom-left,
        // bottom-right): NaN first then numbers; a number after NaNs; ties (−0 and 0: the
        // first); a larger value after a NaN; −Inf after NaN; all equal; all −Inf; NaN after the maximum.
        const float wins[8][4] = {{nan, 3, 1, 4},  {nan, nan, 2, nan}, {0, -0.0f, 0, 0},   {2, nan, 2, 3},
                                  {nan, -INFINITY, nan, nan}, {1, 1, 1, 1}, {-INFINITY, -INFINITY, -INFINITY, -INFINITY},
                                  {3, 2, nan, 1}};
        std::vector<float> xw(32);
        for (int64_t k = 0; k < 8; k++) {
            xw[size_t(2 * k)] = wins[k][0], xw[size_t(2 * k + 1)] = wins[k][1];
            xw[size_t(16 + 2 * k)] = wins[k][2], xw[size_t(16 + 2 * k + 1)] = wins[k][3];
        }
        Matrix xwm = from_host(d, 32, 1, xw.data()), yw = zeros(d, 8, 1), iw = zeros(d, 8, 1);
        maxpool(g8, xwm, yw, iw);
        same(to_host(yw), {4, 2, 0, 3, -INFINITY, 1, -INFINITY, 3});
        same(to_host(iw), {18, 19, 5, 24, 10, 11, 13, 15});
        // The same windows four at a time: 4 windows in a row (the SSE loop), then as
        // one 4×8 image (two output rows of 4: the AVX2 two-rows loop).
        std::vector<float> x48(32);
        for (int64_t h = 0; h < 2; h++) {
            std::vector<float> xs(16);
            for (int64_t k = 0; k < 4; k++) {
                const float* p = wins[h * 4 + k];
                xs[size_t(2 * k)] = p[0], xs[size_t(2 * k + 1)] = p[1], xs[size_t(8 + 2 * k)] = p[2], xs[size_t(8 + 2 * k + 1)] = p[3];
            }
            std::copy(xs.begin(), xs.end(), x48.begin() + h * 16);
            Matrix xsm = from_host(d, 16, 1, xs.data()), ys = zeros(d, 4, 1), is = zeros(d, 4, 1);
            maxpool(g4, xsm, ys, is);
            same(to_host(ys), h == 0 ? std::vector<float>{4, 2, 0, 3} : std::vector<float>{-INFINITY, 1, -INFINITY, 3});
            same(to_host(is), h == 0 ? std::vector<float>{10, 11, 5, 16} : std::vector<float>{2, 3, 5, 7});
        }
        ConvGeom g48 = geom(1, 4, 8, 2, 2, 2, 2, 0, 0);
        Matrix x48m = from_host(d, 32, 1, x48.data()), y48 = zeros(d, 8, 1), i48 = zeros(d, 8, 1);
        maxpool(g48, x48m, y48, i48);
        same(to_host(y48), {4, 2, 0, 3, -INFINITY, 1, -INFINITY, 3});
        same(to_host(i48), {10, 11, 5, 16, 18, 19, 21, 23});
        // and back: each window's gradient at the pixel i48 names
        std::vector<float> g8v = {1, 2, 3, 4, 5, 6, 7, 8};
        Matrix dy48 = from_host(d, 8, 1, g8v.data()), dx48 = zeros(d, 32, 1);
        maxpool_backward(g48, dy48, i48, dx48);
        std::vector<float> want48(32, 0.0f);
        const float at48[8] = {10, 11, 5, 16, 18, 19, 21, 23};
        for (int k = 0; k < 8; k++) want48[size_t(at48[k]) - 1] = g8v[size_t(k)];
        same(to_host(dx48), want48);
        // The general loop (3×3 windows, stride 1, padding 1): NaN first, then −Inf.
        ConvGeom g3 = geom(1, 2, 2, 3, 3, 1, 1, 1, 1);
        std::vector<float> x3 = {nan, -INFINITY, nan, nan};
        Matrix x3m = from_host(d, 4, 1, x3.data()), y3 = zeros(d, 4, 1), i3 = zeros(d, 4, 1);
        maxpool(g3, x3m, y3, i3);
        same(to_host(y3), {-INFINITY, -INFINITY, -INFINITY, -INFINITY});
        same(to_host(i3), {2, 2, 2, 2});
        std::vector<float> xn = {nan, nan, nan, nan};
        Matrix xnm = from_host(d, 4, 1, xn.data());
        maxpool(g3, xnm, y3, i3);
        same(to_host(y3), {nan, nan, nan, nan});
        same(to_host(i3), {1, 1, 1, 1});
    });
}

TEST_CASE("kernels: conv to_images and from_images move between the GEMM's layout and the images'", "[kernels][conv]") {
    on_every_device([](Device& d) {
        const int64_t C = 5, P = 13, N = 4;
        std::vector<float> uv = data(size_t(P * N * C), 11), bv = data(size_t(C), 12);
        Matrix u = from_host(d, P * N, C, uv.data()), b = from_host(d, C, 1, bv.data());
        Matrix y = zeros(d, C * P, N);
        to_images(u, b, y);
        std::vector<double> want(size_t(C * P * N));
        for (int64_t n = 0; n < N; n++)
            for (int64_t c = 0; c < C; c++)
                for (int64_t p = 0; p < P; p++)
                    want[size_t(c * P + p + n * C * P)] = double(uv[size_t(n * P + p + c * P * N)]) + bv[size_t(c)];
        check_close(to_host(y), want, 1e-7, 0);
        to_images(u, Matrix{}, y);
        for (int64_t k = 0; k < C * P * N; k++) want[size_t(k)] -= bv[size_t(k / P % C)];
        check_close(to_host(y), want, 1e-6, 1e-6);
        // from_images into a transposed view: the exact inverse.
        Matrix ut = zeros(d, C, P * N);
        from_images(y, ut.t());
        check_exact(to_host(ut.t()), std::vector<double>(uv.begin(), uv.end()));
    });
}

// llvmpipe ends an invocation's loops after 65,535 iterations. Pooling over a
// 1×70,000 window would loop that long in one invocation; the kernels walk at
// most 4,096 window positions per dispatch, in passes. The gathers (col2im
// and the backward steps, one invocation per pixel over the outputs covering
// it) take several passes from 4,096 covering outputs (65×65 windows at
// stride 1); past 65,535 they would need ~4·10^9 operations, so the test
// stops at the size that exercises the passes.
TEST_CASE("kernels: conv pooling past the loop limit (windows of 70,000) and gathers in several passes",
          "[kernels][conv][limits]") {
    on_every_device([](Device& d) {
        // The third: two windows of 70,000 side by side (not overlapping) and a pixel in none.
        for (const ConvGeom& g : {geom(2, 1, 70001, 1, 70000, 1, 1, 0, 0), geom(1, 129, 129, 65, 65, 1, 1, 0, 0),
                                  geom(1, 1, 140001, 1, 70000, 1, 70000, 0, 0)}) {
            INFO(str(g));
            const int64_t N = 2, outs = g.c * g.positions();
            std::vector<float> xv = data(size_t(g.pixels() * N), 77, true);
            Matrix x = from_host(d, g.pixels(), N, xv.data()), y = zeros(d, outs, N), idx = zeros(d, outs, N);
            PoolRef want = pool_ref(xv, g, N);
            maxpool(g, x, y, idx);
            check_exact(to_host(y), want.max);
            check_exact(to_host(idx), want.idx);
            // Float sums of up to 70,000 terms in [-4, 4) against float64 ones: within n·2^-24·4 / (kh·kw).
            avgpool(g, x, y);
            check_close(to_host(y), want.avg, 1e-4, 4 * std::ldexp(1.0, -24) * 4);
            std::vector<float> dyv = data(size_t(outs * N), 78);
            Matrix dy = from_host(d, outs, N, dyv.data()), dx = empty(d, g.pixels(), N);
            avgpool_backward(g, dy, dx);
            check_close(to_host(dx), avgpool_backward_ref(dyv, g, N), 1e-4, 1e-6);
            maxpool_backward(g, dy, idx, dx);
            check_close(to_host(dx), maxpool_backward_ref(dyv, want.idx, g, N), 1e-5, 1e-6);
        }
        ConvGeom g = geom(1, 129, 129, 65, 65, 1, 1, 0, 0);  // 4,225 windows cover the middle pixel
        const int64_t N = 1, R = g.patch(), Q = g.positions() * N;
        std::vector<float> cv = data(size_t(R * Q), 79), x0 = data(size_t(g.pixels() * N), 80);
        Matrix cols = from_host(d, R, Q, cv.data()), x = from_host(d, g.pixels(), N, x0.data());
        col2im(g, cols, x);
        // A float sum of 4,225 terms in [-4, 4): within 4,225·2^-24·4 of the float64 one.
        check_close(to_host(x), col2im_ref(cv, x0, g, N), 0, 4225 * std::ldexp(1.0, -24) * 4);
    });
}

TEST_CASE("kernels: conv argument errors name the function and the argument", "[kernels][conv]") {
    on_every_device([](Device& d) {
        ConvGeom g = geom(1, 4, 4, 3, 3, 1, 1, 0, 0);
        Matrix x = zeros(d, 16, 2), cols = zeros(d, 9, 8);
        auto msg = [](auto f) {
            try {
                f();
            } catch (const Error& e) {
                return std::string(e.what());
            }
            return std::string("no error");
        };
        CHECK(msg([&] { im2col(g, zeros(d, 15, 2), cols); }).find("im2col: x is 15×2 but must have 16 rows") == 0);
        CHECK(msg([&] { im2col(g, x, zeros(d, 9, 7)); }).find("im2col: cols is 9×7 but must be 9×8") == 0);
        ConvGeom big = geom(1, 4, 4, 5, 5, 1, 1, 0, 0);
        CHECK(msg([&] { im2col(big, x, cols); }).find("im2col: the 5×5 window does not fit the 4×4 image") == 0);
        ConvGeom padded = geom(1, 4, 4, 2, 2, 2, 2, 2, 0);
        Matrix y = zeros(d, 4, 2), idx = zeros(d, 4, 2);
        CHECK(msg([&] { maxpool(padded, x, y, idx); }).find("maxpool: padding 2×0 is more than half") == 0);
        ConvGeom p2 = geom(1, 4, 4, 2, 2, 2, 2, 0, 0);
        CHECK(msg([&] { maxpool(p2, x, y, y); }).find("maxpool: idx aliases y") == 0);
        CHECK(msg([&] { avgpool(p2, x, zeros(d, 5, 2)); }).find("avgpool: y is 5×2 but must be 4×2") == 0);
        CHECK(msg([&] { to_images(zeros(d, 6, 2), Matrix{}, zeros(d, 7, 2)); }).find("to_images: y is 7×2") == 0);
        ConvGeom zero = geom(1, 4, 4, 2, 2, 0, 2, 0, 0);
        CHECK(msg([&] { avgpool(zero, x, y); }).find("avgpool: the vertical stride is 0 (must be ≥ 1)") == 0);
    });
}

namespace {

// shaders/udiv.glsl step by step in float32 on the host, the reciprocal moved
// by `ulps` (Vulkan lets 1/x be off by a few ulp): the GLSL's arithmetic, so a
// change there belongs here too.
uint32_t udiv_glsl(uint32_t a, uint32_t d, int ulps) {
    float rd = 1.0f / float(d);
    for (int i = 0; i < std::abs(ulps); i++) rd = std::nextafter(rd, ulps > 0 ? 2.0f : 0.0f);
    uint32_t q = uint32_t(std::min(float(a) * rd, 4294967040.0f));
    int32_t r = int32_t(a - q * d);
    q += uint32_t(int32_t(std::floor(float(r) * rd)));
    r = int32_t(a - q * d);
    if (r < 0) q -= 1u;
    else if (uint32_t(r) >= d) q += 1u;
    return q;
}

}  // namespace

TEST_CASE("kernels: conv shaders' float division (udiv.glsl) equals integer division", "[kernels][conv]") {
    const uint32_t ds[] = {1, 2, 3, 5, 7, 24, 25, 576, 784, 800, 4096, 18432, 65535, 100003, 1u << 20, 12345678,
                           (1u << 30) - 1};
    uint64_t bad = 0, n = 0;
    uint64_t state = 12345;
    auto next = [&] { state = state * 6364136223846793005ull + 1442695040888963407ull; return uint32_t(state >> 32); };
    for (uint32_t d : ds)
        for (int ulps = -3; ulps <= 3; ulps += 3) {
            auto check = [&](uint64_t a) {
                n++;
                if (udiv_glsl(uint32_t(a), d, ulps) != uint32_t(a / d) && bad++ == 0)
                    FAIL_CHECK(a << " / " << d << " (1/d off by " << ulps << " ulp) gave " << udiv_glsl(uint32_t(a), d, ulps));
            };
            for (uint64_t a = 0; a < 20000; a++) check(a);
            for (uint64_t a = 0xffffffffull - 20000; a <= 0xffffffffull; a++) check(a);
            for (int i = 0; i < 20000; i++) check(next());
            for (uint64_t m = 1; m <= 0xffffffffull / d && m < 20000; m++)  // either side of multiples of d
                for (uint64_t a : {m * d - 1, m * d, m * d + 1})
                    if (a <= 0xffffffffull) check(a);
            for (int i = 0; i < 20000; i++) {  // near multiples of d across the whole range
                uint64_t a = uint64_t(next()) / d * d;
                for (uint64_t b : {a - 1, a, a + 1})
                    if (b <= 0xffffffffull) check(b);
            }
        }
    CHECK(bad == 0);
    CHECK(n > 1000000);
}

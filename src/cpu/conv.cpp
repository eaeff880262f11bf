// Convolution on the CPU: im2col/col2im around OpenBLAS's GEMM, and the two
// layout moves between a GEMM's (positions·samples) × channels result and the
// image layout (pooling is in src/cpu/pooling.cpp).
// Every kernel is threaded over (channel, sample) pairs or rows of its output,
// which own disjoint parts of the output, so no two threads write one element.
#include "cpu/cpu_kernels.hpp"

#include <algorithm>
#include <vector>

#include "cpu/conv_walk.hpp"

namespace vela::cpu {

using convwalk::Plane;
using convwalk::per_channel;
using convwalk::plane;

namespace {

// The output positions o (0..n-1) whose window start o·s − p + k lies in [0, size): [lo, hi).
void inside(int64_t size, int64_t s, int64_t pad, int64_t k, int64_t n, int64_t& lo, int64_t& hi) {
    // o·s ≥ pad − k  and  o·s < size + pad − k
    int64_t a = pad - k;
    lo = a <= 0 ? 0 : (a + s - 1) / s;
    int64_t b = size + pad - k;  // o·s < b
    hi = b <= 0 ? 0 : (b + s - 1) / s;
    lo = std::min(lo, n), hi = std::min(std::max(hi, lo), n);
}

// Runs of n floats, written as loops over fixed 8-float blocks so that GCC
// neither calls memmove for a short run nor has to test the two for overlap.
inline void copy_run(float* __restrict d, const float* __restrict s, int64_t n) {
    int64_t k = 0;
    for (; k + 8 <= n; k += 8) __builtin_memcpy(d + k, s + k, 8 * sizeof(float));
    for (; k < n; k++) d[k] = s[k];
}
inline void add_run(float* __restrict d, const float* __restrict s, int64_t n) {
    int64_t k = 0;
    for (; k + 8 <= n; k += 8)
        for (int64_t i = 0; i < 8; i++) d[k + i] += s[k + i];
    for (; k < n; k++) d[k] += s[k];
}


}  // namespace

// A window that lies wholly inside the image, its kw pixels per row moved as
// one short run: KW the width when known at compile time (the run is then a
// few moves, not a call to memmove per run), 0 for any width.
template <int KW>
static void window_to_column(const float* in, int64_t hw, int64_t w, int64_t c, int64_t kh, int64_t kw, float* out) {
    const int64_t n = KW ? KW : kw;
    for (int64_t ch = 0; ch < c; ch++, in += hw)
        for (int64_t ky = 0; ky < kh; ky++, out += n) {
            const float* s = in + ky * w;
            for (int64_t kx = 0; kx < n; kx++) out[kx] = s[kx];
        }
}

template <int KW>
static void column_to_window(const float* src, int64_t w, int64_t kh, int64_t kw, float* img) {
    const int64_t n = KW ? KW : kw;
    for (int64_t ky = 0; ky < kh; ky++, src += n) {
        float* row = img + ky * w;
        for (int64_t kx = 0; kx < n; kx++) row[kx] += src[kx];
    }
}

// cols with its rows contiguous (each column one window, the layout nn.conv2d
// keeps): one task per run of columns, each column written in one pass.
static void im2col_by_column(const ConvGeom& g, const Plane& X, const Plane& C, int64_t N) {
    const int64_t oh = g.oh(), ow = g.ow(), P = oh * ow, hw = g.h * g.w, R = g.patch();
    const int64_t grain = R >= kGrain ? 1 : kGrain / std::max<int64_t>(R, 1);
    parallel_for(P * N, grain, [&](int64_t b, int64_t e) {
        for (int64_t q = b; q < e; q++) {
            const int64_t n = q / P, pos = q % P, oy = pos / ow, ox = pos % ow;
            const int64_t y0 = oy * g.sh - g.ph, x0 = ox * g.sw - g.pw;
            float* out = &C.at(0, q);
            const float* in = &X.at(0, n);
            const bool inside = y0 >= 0 && y0 + g.kh <= g.h && x0 >= 0 && x0 + g.kw <= g.w;
            if (inside && X.rs == 1) {
                const float* at = in + y0 * g.w + x0;
                if (g.kw == 5) window_to_column<5>(at, hw, g.w, g.c, g.kh, g.kw, out);
                else if (g.kw == 3) window_to_column<3>(at, hw, g.w, g.c, g.kh, g.kw, out);
                else window_to_column<0>(at, hw, g.w, g.c, g.kh, g.kw, out);
                continue;
            }
            for (int64_t c = 0; c < g.c; c++) {
                const float* img = in + c * hw * X.rs;
                for (int64_t ky = 0; ky < g.kh; ky++) {
                    const int64_t iy = y0 + ky;
                    float* o = out + (c * g.kh + ky) * g.kw;
                    if (inside && X.rs == 1) {
                        std::copy(img + iy * g.w + x0, img + iy * g.w + x0 + g.kw, o);
                        continue;
                    }
                    for (int64_t kx = 0; kx < g.kw; kx++) {
                        const int64_t ix = x0 + kx;
                        o[kx] = (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w) ? img[(iy * g.w + ix) * X.rs] : 0.0f;
                    }
                }
            }
        }
    });
}

void CpuDevice::im2col(const ConvGeom& g, const Matrix& x, const Matrix& cols) {
    Timed t(this, Kernel::im2col);
    const int64_t oh = g.oh(), ow = g.ow(), P = oh * ow, hw = g.h * g.w, N = x.cols;
    const Plane X = plane(x), C = plane(cols);
    if (C.rs == 1) return im2col_by_column(g, X, C, N);
    // One task per (patch row r, sample n), taken r-major, so that a range of
    // tasks works out r's place in the window once per r: cols(r, n·P + oy·ow
    // + ox) for every position.
    const int64_t R = g.patch();
    const int64_t grain = P >= kGrain ? 1 : kGrain / std::max<int64_t>(P, 1);
    parallel_for(R * N, grain, [&](int64_t b, int64_t e) {
        for (int64_t t = b; t < e;) {
            const int64_t r = t / N, n0 = t % N, n1 = std::min(N, n0 + (e - t));
            t += n1 - n0;
            const int64_t c = r / (g.kh * g.kw), ky = r / g.kw % g.kh, kx = r % g.kw;
            int64_t xlo, xhi;
            inside(g.w, g.sw, g.pw, kx, ow, xlo, xhi);
            const int64_t ix0 = xlo * g.sw - g.pw + kx;
            // Locals: the runs are copied through memcpy, which may alias
            // anything, so fields read through g, C and X would be reloaded per run.
            const int64_t h = g.h, w = g.w, sh = g.sh, ph = g.ph, cs = C.cs, xrs = X.rs, sw = g.sw;
            const bool unit = cs == 1 && xrs == 1 && sw == 1;
            for (int64_t n = n0; n < n1; n++) {
                float* out = &C.at(r, n * P);
                const float* in = &X.at(c * hw, n);
                for (int64_t oy = 0; oy < oh; oy++) {
                    const int64_t iy = oy * sh - ph + ky;
                    float* o = out + oy * ow * cs;
                    if (iy < 0 || iy >= h) {
                        for (int64_t ox = 0; ox < ow; ox++) o[ox * cs] = 0.0f;
                        continue;
                    }
                    const float* row = in + iy * w * xrs;
                    for (int64_t ox = 0; ox < xlo; ox++) o[ox * cs] = 0.0f;
                    if (unit) {
                        copy_run(o + xlo, row + ix0, xhi - xlo);
                    } else {
                        for (int64_t ox = xlo; ox < xhi; ox++) o[ox * cs] = row[(ix0 + (ox - xlo) * sw) * xrs];
                    }
                    for (int64_t ox = xhi; ox < ow; ox++) o[ox * cs] = 0.0f;
                }
            }
        }
    });
}

// cols with its rows contiguous (each column one window): one task per
// sample, which reads its windows in order, each whole, and adds every
// channel's piece of it into the sample's image (a few KB: it stays in the
// L1 cache). Per (channel, sample) tasks, as the strided layout below has,
// read each window 25 floats at a time, once per channel: in the CNN of
// scripts/bench/cnn.lua (800-float windows) col2im was 17% of a training
// step's kernel time on one thread that way. Each pixel sums its windows in
// the same order (positions in turn) either way.
static void col2im_by_column(const ConvGeom& g, const Plane& C, const Plane& X, int64_t N) {
    const int64_t oh = g.oh(), ow = g.ow(), P = oh * ow, hw = g.h * g.w, khw = g.kh * g.kw, R = g.patch();
    const int64_t grain = R * P >= kGrain ? 1 : kGrain / std::max<int64_t>(R * P, 1);
    parallel_for(N, grain, [&](int64_t b, int64_t e) {
        for (int64_t n = b; n < e; n++) {
            float* img = &X.at(0, n);
            for (int64_t oy = 0; oy < oh; oy++)
                for (int64_t ox = 0; ox < ow; ox++) {
                    const float* src = &C.at(0, n * P + oy * ow + ox);
                    const int64_t y0 = oy * g.sh - g.ph, x0 = ox * g.sw - g.pw;
                    if (X.rs == 1 && y0 >= 0 && y0 + g.kh <= g.h && x0 >= 0 && x0 + g.kw <= g.w) {
                        float* at = img + y0 * g.w + x0;
                        for (int64_t c = 0; c < g.c; c++, src += khw, at += hw) {
                            if (g.kw == 5) column_to_window<5>(src, g.w, g.kh, g.kw, at);
                            else if (g.kw == 3) column_to_window<3>(src, g.w, g.kh, g.kw, at);
                            else column_to_window<0>(src, g.w, g.kh, g.kw, at);
                        }
                        continue;
                    }
                    for (int64_t c = 0; c < g.c; c++, src += khw) {
                        float* chan = img + c * hw * X.rs;
                        for (int64_t ky = 0; ky < g.kh; ky++) {
                            const int64_t iy = y0 + ky;
                            if (iy < 0 || iy >= g.h) continue;
                            float* row = chan + iy * g.w * X.rs;
                            const float* s = src + ky * g.kw;
                            for (int64_t kx = 0; kx < g.kw; kx++) {
                                const int64_t ix = x0 + kx;
                                if (ix >= 0 && ix < g.w) row[ix * X.rs] += s[kx];
                            }
                        }
                    }
                }
        }
    });
}

void CpuDevice::col2im(const ConvGeom& g, const Matrix& cols, const Matrix& x) {
    Timed t(this, Kernel::col2im);
    const int64_t oh = g.oh(), ow = g.ow(), P = oh * ow, hw = g.h * g.w;
    const Plane X = plane(x), C = plane(cols);
    if (C.rs == 1) return col2im_by_column(g, C, X, x.cols);
    // The positions whose window row ky (column kx) lies in the image, worked
    // out once rather than (with two divisions each) in every task.
    std::vector<int64_t> ylo(size_t(g.kh)), yhi(size_t(g.kh)), xlo(size_t(g.kw)), xhi(size_t(g.kw));
    for (int64_t ky = 0; ky < g.kh; ky++) inside(g.h, g.sh, g.ph, ky, oh, ylo[size_t(ky)], yhi[size_t(ky)]);
    for (int64_t kx = 0; kx < g.kw; kx++) inside(g.w, g.sw, g.pw, kx, ow, xlo[size_t(kx)], xhi[size_t(kx)]);
    // One task per (channel, sample): it alone writes that channel of that sample.
    per_channel(g.c, x.cols, g.kh * g.kw * P, [&](int64_t c, int64_t n) {
        float* img = &X.at(c * hw, n);
        for (int64_t ky = 0; ky < g.kh; ky++) {
            for (int64_t kx = 0; kx < g.kw; kx++) {
                const int64_t r = (c * g.kh + ky) * g.kw + kx;
                const int64_t x0 = xlo[size_t(kx)], x1 = xhi[size_t(kx)];
                const float* src = &C.at(r, n * P);
                for (int64_t oy = ylo[size_t(ky)]; oy < yhi[size_t(ky)]; oy++) {
                    const int64_t iy = oy * g.sh - g.ph + ky;
                    float* row = img + iy * g.w * X.rs;
                    const float* s = src + oy * ow * C.cs;
                    if (X.rs == 1 && C.cs == 1 && g.sw == 1) {
                        add_run(row + x0 - g.pw + kx, s + x0, x1 - x0);
                        continue;
                    }
                    for (int64_t ox = x0; ox < x1; ox++) row[(ox * g.sw - g.pw + kx) * X.rs] += s[ox * C.cs];
                }
            }
        }
    });
}


void CpuDevice::to_images(const Matrix& u, const Matrix& b, const Matrix& y) {
    Timed t(this, Kernel::to_images);
    const int64_t C = u.cols, P = y.rows / C;
    const Plane U = plane(u), Y = plane(y);
    const bool has_b = b.buf != nullptr;
    const float* bp = has_b ? fptr(b) : nullptr;
    const int64_t bi = has_b ? b.inc() : 0;
    per_channel(C, y.cols, P, [&](int64_t c, int64_t n) {
        const float add = has_b ? bp[c * bi] : 0.0f;
        const float* s = &U.at(n * P, c);
        float* d = &Y.at(c * P, n);
        if (U.rs == 1 && Y.rs == 1) {
            for (int64_t p = 0; p < P; p++) d[p] = s[p] + add;
        } else {
            for (int64_t p = 0; p < P; p++) d[p * Y.rs] = s[p * U.rs] + add;
        }
    });
}

void CpuDevice::from_images(const Matrix& y, const Matrix& u) {
    Timed t(this, Kernel::from_images);
    const int64_t C = u.cols, P = y.rows / C;
    const Plane U = plane(u), Y = plane(y);
    per_channel(C, y.cols, P, [&](int64_t c, int64_t n) {
        const float* s = &Y.at(c * P, n);
        float* d = &U.at(n * P, c);
        if (U.rs == 1 && Y.rs == 1) {
            std::copy(s, s + P, d);
        } else {
            for (int64_t p = 0; p < P; p++) d[p * U.rs] = s[p * Y.rs];
        }
    });
}

}  // namespace vela::cpu

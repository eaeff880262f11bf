// Convolution and pooling on the CPU: im2col/col2im around OpenBLAS's GEMM,
// max and average pooling and their backward steps, and the two layout moves
// between a GEMM's (positions·samples) × channels result and the image layout.
// Every kernel is threaded over (channel, sample) pairs or rows of its output,
// which own disjoint parts of the output, so no two threads write one element.
#include "cpu/conv.hpp"

#include <algorithm>
#include <limits>
#include <vector>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "cpu/cpu_kernels.hpp"

namespace vela::cpu {

namespace {

// A 2-D walk over a view: element (i, j) at p[i·rs + j·cs].
struct Plane {
    float* p;
    int64_t rs, cs;
    float& at(int64_t i, int64_t j) const { return p[i * rs + j * cs]; }
};
Plane plane(const Matrix& m) { return {fptr(m), m.row_step(), m.col_step()}; }

// Runs f(c, n) for every (channel, sample) pair, in parallel, each pair
// carrying `work` elements (for the grain).
template <class F>
void per_channel(int64_t channels, int64_t samples, int64_t work, F&& f) {
    const int64_t grain = work >= kGrain ? 1 : kGrain / std::max<int64_t>(work, 1);
    parallel_for(channels * samples, grain, [&](int64_t b, int64_t e) {
        for (int64_t t = b; t < e; t++) f(t % channels, t / channels);
    });
}

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

void im2col(const ConvGeom& g, const Matrix& x, const Matrix& cols) {
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

void col2im(const ConvGeom& g, const Matrix& cols, const Matrix& x) {
    const int64_t oh = g.oh(), ow = g.ow(), P = oh * ow, hw = g.h * g.w;
    const Plane X = plane(x), C = plane(cols);
    // The positions whose window row ky (column kx) lies in the image, worked
    // out once rather than (with two divisions each) in every task.
    std::vector<int64_t> ylo(size_t(g.kh)), yhi(size_t(g.kh)), xlo(size_t(g.kw)), xhi(size_t(g.kw));
    for (int64_t ky = 0; ky < g.kh; ky++) inside(g.h, g.sh, g.ph, ky, oh, ylo[size_t(ky)], yhi[size_t(ky)]);
    for (int64_t kx = 0; kx < g.kw; kx++) inside(g.w, g.sw, g.pw, kx, ow, xlo[size_t(kx)], xhi[size_t(kx)]);
    // One task per (channel, sample): it alone writes that channel of that sample.
    per_channel(g.c, x.cols, g.kh * g.kw * P, [&](int64_t c, int64_t n) {
        float* img = &X.at(c * hw, n);
        if (C.rs == 1) {
            // Each column of cols one window (contiguous): read it in order, add into the image.
            for (int64_t oy = 0; oy < oh; oy++)
                for (int64_t ox = 0; ox < ow; ox++) {
                    const float* src = &C.at(c * g.kh * g.kw, n * P + oy * ow + ox);
                    const int64_t y0 = oy * g.sh - g.ph, x0 = ox * g.sw - g.pw;
                    if (X.rs == 1 && y0 >= 0 && y0 + g.kh <= g.h && x0 >= 0 && x0 + g.kw <= g.w) {
                        float* at = img + y0 * g.w + x0;
                        if (g.kw == 5) column_to_window<5>(src, g.w, g.kh, g.kw, at);
                        else if (g.kw == 3) column_to_window<3>(src, g.w, g.kh, g.kw, at);
                        else column_to_window<0>(src, g.w, g.kh, g.kw, at);
                        continue;
                    }
                    for (int64_t ky = 0; ky < g.kh; ky++) {
                        const int64_t iy = y0 + ky;
                        if (iy < 0 || iy >= g.h) continue;
                        float* row = img + iy * g.w * X.rs;
                        const float* s = src + ky * g.kw;
                        for (int64_t kx = 0; kx < g.kw; kx++) {
                            const int64_t ix = x0 + kx;
                            if (ix >= 0 && ix < g.w) row[ix * X.rs] += s[kx];
                        }
                    }
                }
            return;
        }
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

// The common pool: 2×2 windows, stride 2, no padding, every sample's pixels
// contiguous. The windows tile the image (an odd last row or column is in
// none), so each output reads its four pixels straight, without index
// arithmetic per element, and the backward writes each pixel once.
static bool pool_2x2(const ConvGeom& g, const Plane& a, const Plane& b, const Plane& c) {
    return g.kh == 2 && g.kw == 2 && g.sh == 2 && g.sw == 2 && g.ph == 0 && g.pw == 0 && a.rs == 1 && b.rs == 1 &&
           c.rs == 1;
}

// One row of 2×2 windows: r0, r1 the two image rows, ow outputs; `base` the
// 1-based index (as a float, exact below 2^24) of r0[0]. The same rule as the
// general loop, written without branches: v wins over the best so far when
// larger, or when equal and nothing has won yet (index 0); NaN never wins.
#if defined(__x86_64__)
// Eight windows at a time with AVX2, where the CPU has it (the build's
// baseline is SSE2): the same rule on the same values, so the same results.
// Returns how many outputs it wrote (a multiple of 8); max2x2_row does the rest.
static bool has_avx2() {
    __builtin_cpu_init();  // a static initializer may run before libgcc's own
    return __builtin_cpu_supports("avx2");
}
static const bool kAvx2 = has_avx2();

__attribute__((target("avx2"))) static int64_t max2x2_row_avx2(const float* r0, const float* r1, int64_t w,
                                                                  int64_t ow, float base, float* y, float* idx) {
    // _mm256_shuffle_ps works within 128-bit halves: its even/odd split of 16
    // pixels gives windows 0 1 4 5 | 2 3 6 7, so the indices are made in
    // that order and both results put back in window order by one permute.
    const __m256 step = _mm256_setr_ps(0.0f, 2.0f, 8.0f, 10.0f, 4.0f, 6.0f, 12.0f, 14.0f);
    const __m256 one = _mm256_set1_ps(1.0f), fw = _mm256_set1_ps(float(w)), zero = _mm256_setzero_ps();
    const __m256 ninf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
    int64_t ox = 0;
    for (; ox + 8 <= ow; ox += 8) {
        const __m256 a0 = _mm256_loadu_ps(r0 + 2 * ox), a1 = _mm256_loadu_ps(r0 + 2 * ox + 8);
        const __m256 b0 = _mm256_loadu_ps(r1 + 2 * ox), b1 = _mm256_loadu_ps(r1 + 2 * ox + 8);
        const __m256 f = _mm256_add_ps(_mm256_set1_ps(base + float(2 * ox)), step);
        const __m256 v[4] = {_mm256_shuffle_ps(a0, a1, _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm256_shuffle_ps(a0, a1, _MM_SHUFFLE(3, 1, 3, 1)),
                             _mm256_shuffle_ps(b0, b1, _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm256_shuffle_ps(b0, b1, _MM_SHUFFLE(3, 1, 3, 1))};
        const __m256 at[4] = {f, _mm256_add_ps(f, one), _mm256_add_ps(f, fw), _mm256_add_ps(_mm256_add_ps(f, fw), one)};
        __m256 bv = ninf, bi = zero;
        for (int k = 0; k < 4; k++) {
            const __m256 take = _mm256_or_ps(_mm256_cmp_ps(v[k], bv, _CMP_GT_OQ),
                                             _mm256_and_ps(_mm256_cmp_ps(v[k], bv, _CMP_EQ_OQ),
                                                           _mm256_cmp_ps(bi, zero, _CMP_EQ_OQ)));
            bv = _mm256_blendv_ps(bv, v[k], take);
            bi = _mm256_blendv_ps(bi, at[k], take);
        }
        _mm256_storeu_ps(y + ox, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(bv), 0xD8)));
        _mm256_storeu_ps(idx + ox, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(bi), 0xD8)));
    }
    return ox;
}

// The backward of eight windows at a time (see the SSE loop in maxpool_backward).
__attribute__((target("avx2"))) static int64_t unpool2x2_row_avx2(const float* dr, const float* ir, int64_t w,
                                                                    int64_t ow, float f0, float* r0, float* r1) {
    const __m256 step = _mm256_setr_ps(0.0f, 2.0f, 4.0f, 6.0f, 8.0f, 10.0f, 12.0f, 14.0f);
    const __m256 one = _mm256_set1_ps(1.0f), fw = _mm256_set1_ps(float(w));
    int64_t ox = 0;
    for (; ox + 8 <= ow; ox += 8) {
        const __m256 f = _mm256_add_ps(_mm256_set1_ps(f0 + float(2 * ox)), step), fb = _mm256_add_ps(f, fw);
        const __m256 v = _mm256_loadu_ps(dr + ox), at = _mm256_loadu_ps(ir + ox);
        const __m256 e0 = _mm256_and_ps(v, _mm256_cmp_ps(at, f, _CMP_EQ_OQ));
        const __m256 o0 = _mm256_and_ps(v, _mm256_cmp_ps(at, _mm256_add_ps(f, one), _CMP_EQ_OQ));
        const __m256 e1 = _mm256_and_ps(v, _mm256_cmp_ps(at, fb, _CMP_EQ_OQ));
        const __m256 o1 = _mm256_and_ps(v, _mm256_cmp_ps(at, _mm256_add_ps(fb, one), _CMP_EQ_OQ));
        // unpacklo/hi interleave within 128-bit halves; permute2f128 puts the halves in order.
        const __m256 l0 = _mm256_unpacklo_ps(e0, o0), h0 = _mm256_unpackhi_ps(e0, o0);
        const __m256 l1 = _mm256_unpacklo_ps(e1, o1), h1 = _mm256_unpackhi_ps(e1, o1);
        _mm256_storeu_ps(r0 + 2 * ox, _mm256_permute2f128_ps(l0, h0, 0x20));
        _mm256_storeu_ps(r0 + 2 * ox + 8, _mm256_permute2f128_ps(l0, h0, 0x31));
        _mm256_storeu_ps(r1 + 2 * ox, _mm256_permute2f128_ps(l1, h1, 0x20));
        _mm256_storeu_ps(r1 + 2 * ox + 8, _mm256_permute2f128_ps(l1, h1, 0x31));
    }
    return ox;
}
#endif

static inline void max2x2_row(const float* r0, const float* r1, int64_t w, int64_t ow, float base, float* y,
                              float* idx) {
    int64_t ox = 0;
#if defined(__x86_64__)
    if (kAvx2) ox = max2x2_row_avx2(r0, r1, w, ow, base, y, idx);
#endif
#if defined(__SSE2__)
    // Four windows at a time: their pixels split into even and odd columns.
    const __m128 step = _mm_setr_ps(0.0f, 2.0f, 4.0f, 6.0f), one = _mm_set1_ps(1.0f), fw = _mm_set1_ps(float(w));
    const __m128 zero = _mm_setzero_ps(), ninf = _mm_set1_ps(-std::numeric_limits<float>::infinity());
    for (; ox + 4 <= ow; ox += 4) {
        const __m128 a0 = _mm_loadu_ps(r0 + 2 * ox), a1 = _mm_loadu_ps(r0 + 2 * ox + 4);
        const __m128 b0 = _mm_loadu_ps(r1 + 2 * ox), b1 = _mm_loadu_ps(r1 + 2 * ox + 4);
        const __m128 f = _mm_add_ps(_mm_set1_ps(base + float(2 * ox)), step);
        const __m128 v[4] = {_mm_shuffle_ps(a0, a1, _MM_SHUFFLE(2, 0, 2, 0)), _mm_shuffle_ps(a0, a1, _MM_SHUFFLE(3, 1, 3, 1)),
                             _mm_shuffle_ps(b0, b1, _MM_SHUFFLE(2, 0, 2, 0)), _mm_shuffle_ps(b0, b1, _MM_SHUFFLE(3, 1, 3, 1))};
        const __m128 at[4] = {f, _mm_add_ps(f, one), _mm_add_ps(f, fw), _mm_add_ps(_mm_add_ps(f, fw), one)};
        __m128 bv = ninf, bi = zero;
        for (int k = 0; k < 4; k++) {
            const __m128 take = _mm_or_ps(_mm_cmpgt_ps(v[k], bv),
                                          _mm_and_ps(_mm_cmpeq_ps(v[k], bv), _mm_cmpeq_ps(bi, zero)));
            bv = _mm_or_ps(_mm_and_ps(take, v[k]), _mm_andnot_ps(take, bv));
            bi = _mm_or_ps(_mm_and_ps(take, at[k]), _mm_andnot_ps(take, bi));
        }
        _mm_storeu_ps(y + ox, bv);
        _mm_storeu_ps(idx + ox, bi);
    }
#endif
    for (; ox < ow; ox++) {
        const float f = base + float(2 * ox);
        const float v[4] = {r0[2 * ox], r0[2 * ox + 1], r1[2 * ox], r1[2 * ox + 1]};
        const float at[4] = {f, f + 1.0f, f + float(w), f + float(w) + 1.0f};
        float bv = -std::numeric_limits<float>::infinity(), bi = 0.0f;
        for (int k = 0; k < 4; k++) {
            const bool take = v[k] > bv || (v[k] == bv && bi == 0.0f);
            bv = take ? v[k] : bv;
            bi = take ? at[k] : bi;
        }
        y[ox] = bv;
        idx[ox] = bi;
    }
}

void maxpool(const ConvGeom& g, const Matrix& x, const Matrix& y, const Matrix& idx) {
    const int64_t oh = g.oh(), ow = g.ow(), P = oh * ow, hw = g.h * g.w;
    const Plane X = plane(x), Y = plane(y), I = plane(idx);
    if (pool_2x2(g, X, Y, I)) {
        per_channel(g.c, x.cols, 4 * P, [&](int64_t c, int64_t n) {
            const float* img = &X.at(c * hw, n);
            float* yo = &Y.at(c * P, n);
            float* io = &I.at(c * P, n);
            for (int64_t oy = 0; oy < oh; oy++) {
                const float* r0 = img + 2 * oy * g.w;
                max2x2_row(r0, r0 + g.w, g.w, ow, float(c * hw + 2 * oy * g.w + 1), yo + oy * ow, io + oy * ow);
            }
        });
        return;
    }
    per_channel(g.c, x.cols, g.kh * g.kw * P, [&](int64_t c, int64_t n) {
        const float* img = &X.at(c * hw, n);
        for (int64_t oy = 0; oy < oh; oy++) {
            const int64_t y0 = std::max<int64_t>(oy * g.sh - g.ph, 0), y1 = std::min(oy * g.sh - g.ph + g.kh, g.h);
            for (int64_t ox = 0; ox < ow; ox++) {
                const int64_t x0 = std::max<int64_t>(ox * g.sw - g.pw, 0), x1 = std::min(ox * g.sw - g.pw + g.kw, g.w);
                // The largest value, the first on ties; NaN never wins (a window
                // without a number gives −inf and index 0), as on Vulkan.
                int64_t best = -1;
                float bv = -std::numeric_limits<float>::infinity();
                for (int64_t iy = y0; iy < y1; iy++)
                    for (int64_t ix = x0; ix < x1; ix++) {
                        const float v = img[(iy * g.w + ix) * X.rs];
                        if (v > bv || (v == bv && best < 0)) bv = v, best = iy * g.w + ix;
                    }
                const int64_t o = c * P + oy * ow + ox;
                Y.at(o, n) = bv;
                I.at(o, n) = best < 0 ? 0.0f : float(c * hw + best + 1);
            }
        }
    });
}

// An index that is not a pixel of its own output's window is ignored (as on
// Vulkan, where each pixel gathers from the windows that hold it).
void maxpool_backward(const ConvGeom& g, const Matrix& dy, const Matrix& idx, const Matrix& dx) {
    const int64_t oh = g.oh(), ow = g.ow(), P = oh * ow, hw = g.h * g.w;
    const Plane D = plane(dy), I = plane(idx), X = plane(dx);
    if (pool_2x2(g, D, I, X)) {
        // Each pixel of a window gets the window's gradient when it is the
        // window's winner, else 0; pixels in no window (an odd last row or
        // column) get 0.
        per_channel(g.c, dx.cols, 4 * P, [&](int64_t c, int64_t n) {
            float* img = &X.at(c * hw, n);
            const float* d = &D.at(c * P, n);
            const float* ix = &I.at(c * P, n);
            for (int64_t oy = 0; oy < oh; oy++) {
                float* r0 = img + 2 * oy * g.w;
                float* r1 = r0 + g.w;
                const float* dr = d + oy * ow;
                const float* ir = ix + oy * ow;
                const float f0 = float(c * hw + 2 * oy * g.w + 1);
                int64_t ox = 0;
#if defined(__x86_64__)
                if (kAvx2) ox = unpool2x2_row_avx2(dr, ir, g.w, ow, f0, r0, r1);
#endif
#if defined(__SSE2__)
                const __m128 step = _mm_setr_ps(0.0f, 2.0f, 4.0f, 6.0f), one = _mm_set1_ps(1.0f);
                const __m128 fw = _mm_set1_ps(float(g.w));
                for (; ox + 4 <= ow; ox += 4) {
                    const __m128 f = _mm_add_ps(_mm_set1_ps(f0 + float(2 * ox)), step), fb = _mm_add_ps(f, fw);
                    const __m128 v = _mm_loadu_ps(dr + ox), at = _mm_loadu_ps(ir + ox);
                    const __m128 e0 = _mm_and_ps(v, _mm_cmpeq_ps(at, f)), o0 = _mm_and_ps(v, _mm_cmpeq_ps(at, _mm_add_ps(f, one)));
                    const __m128 e1 = _mm_and_ps(v, _mm_cmpeq_ps(at, fb)), o1 = _mm_and_ps(v, _mm_cmpeq_ps(at, _mm_add_ps(fb, one)));
                    _mm_storeu_ps(r0 + 2 * ox, _mm_unpacklo_ps(e0, o0));
                    _mm_storeu_ps(r0 + 2 * ox + 4, _mm_unpackhi_ps(e0, o0));
                    _mm_storeu_ps(r1 + 2 * ox, _mm_unpacklo_ps(e1, o1));
                    _mm_storeu_ps(r1 + 2 * ox + 4, _mm_unpackhi_ps(e1, o1));
                }
#endif
                for (; ox < ow; ox++) {
                    const float f = f0 + float(2 * ox), v = dr[ox], at = ir[ox];
                    r0[2 * ox] = at == f ? v : 0.0f;
                    r0[2 * ox + 1] = at == f + 1.0f ? v : 0.0f;
                    r1[2 * ox] = at == f + float(g.w) ? v : 0.0f;
                    r1[2 * ox + 1] = at == f + float(g.w) + 1.0f ? v : 0.0f;
                }
                if (g.w & 1) r0[g.w - 1] = r1[g.w - 1] = 0.0f;
            }
            if (g.h & 1) std::fill(img + (g.h - 1) * g.w, img + hw, 0.0f);
        });
        return;
    }
    per_channel(g.c, dx.cols, P + hw, [&](int64_t c, int64_t n) {
        float* img = &X.at(c * hw, n);
        for (int64_t k = 0; k < hw; k++) img[k * X.rs] = 0.0f;
        for (int64_t oy = 0; oy < oh; oy++)
            for (int64_t ox = 0; ox < ow; ox++) {
                const int64_t o = c * P + oy * ow + ox;
                const float f = I.at(o, n) - float(c * hw + 1);
                if (!(f >= 0.0f && f < float(hw))) continue;
                const int64_t k = int64_t(f), iy = k / g.w, ix = k % g.w;
                const int64_t wy = iy - (oy * g.sh - g.ph), wx = ix - (ox * g.sw - g.pw);
                if (wy < 0 || wy >= g.kh || wx < 0 || wx >= g.kw) continue;
                img[k * X.rs] += D.at(o, n);
            }
    });
}

void avgpool(const ConvGeom& g, const Matrix& x, const Matrix& y) {
    const int64_t oh = g.oh(), ow = g.ow(), P = oh * ow, hw = g.h * g.w;
    const Plane X = plane(x), Y = plane(y);
    const double inv = 1.0 / double(g.kh * g.kw);
    per_channel(g.c, x.cols, g.kh * g.kw * P, [&](int64_t c, int64_t n) {
        const float* img = &X.at(c * hw, n);
        for (int64_t oy = 0; oy < oh; oy++) {
            const int64_t y0 = std::max<int64_t>(oy * g.sh - g.ph, 0), y1 = std::min(oy * g.sh - g.ph + g.kh, g.h);
            for (int64_t ox = 0; ox < ow; ox++) {
                const int64_t x0 = std::max<int64_t>(ox * g.sw - g.pw, 0), x1 = std::min(ox * g.sw - g.pw + g.kw, g.w);
                float s = 0.0f;
                for (int64_t iy = y0; iy < y1; iy++)
                    for (int64_t ix = x0; ix < x1; ix++) s += img[(iy * g.w + ix) * X.rs];
                Y.at(c * P + oy * ow + ox, n) = float(double(s) * inv);
            }
        }
    });
}

void avgpool_backward(const ConvGeom& g, const Matrix& dy, const Matrix& dx) {
    const int64_t oh = g.oh(), ow = g.ow(), P = oh * ow, hw = g.h * g.w;
    const Plane D = plane(dy), X = plane(dx);
    const float inv = float(1.0 / double(g.kh * g.kw));
    per_channel(g.c, dx.cols, g.kh * g.kw * P + hw, [&](int64_t c, int64_t n) {
        float* img = &X.at(c * hw, n);
        for (int64_t k = 0; k < hw; k++) img[k * X.rs] = 0.0f;
        for (int64_t oy = 0; oy < oh; oy++) {
            const int64_t y0 = std::max<int64_t>(oy * g.sh - g.ph, 0), y1 = std::min(oy * g.sh - g.ph + g.kh, g.h);
            for (int64_t ox = 0; ox < ow; ox++) {
                const int64_t x0 = std::max<int64_t>(ox * g.sw - g.pw, 0), x1 = std::min(ox * g.sw - g.pw + g.kw, g.w);
                const float v = D.at(c * P + oy * ow + ox, n) * inv;
                for (int64_t iy = y0; iy < y1; iy++)
                    for (int64_t ix = x0; ix < x1; ix++) img[(iy * g.w + ix) * X.rs] += v;
            }
        }
    });
}

void to_images(const Matrix& u, const Matrix& b, const Matrix& y) {
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

void from_images(const Matrix& y, const Matrix& u) {
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

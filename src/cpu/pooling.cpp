// Max and average pooling on the CPU and their backward steps (the math is
// in core/device.hpp, the layout in core/conv.hpp): the general loops over
// any window, stride and padding, and 2×2 windows of stride 2 without index
// arithmetic, eight at a time with AVX2 where the CPU has it. Threaded over
// (channel, sample) pairs, which own disjoint parts of the output.
#include <algorithm>
#include <limits>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "cpu/cpu_kernels.hpp"
#include "cpu/conv_walk.hpp"
#include "cpu/isa.hpp"

namespace vela::cpu {

using convwalk::Plane;
using convwalk::per_channel;
using convwalk::plane;
using convwalk::for_each_window;
using convwalk::Span;

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
// general loop, written without branches, the pixels in index order: v wins
// when nothing has won yet (index 0), when larger than the best so far, or
// when it is a number and the best so far is NaN.
#if defined(__x86_64__)
// Eight windows at a time with AVX2, where the loops' path has it (isa():
// v3 or v4, so VELA_CPU_ISA=base takes the SSE2 loops here too; the build's
// baseline is SSE2): the same rule on the same values, so the same results.
// Returns how many outputs it wrote (a multiple of 8); max2x2_row does the rest.
static bool avx2() { return isa() != Isa::base; }

// The winners of 8 windows: a0 a1 the top pixels' rows, b0 b1 the bottom
// ones' (each pair split into even and odd pixels by _mm256_shuffle_ps, which
// works within 128-bit halves), f the 1-based indices of the windows'
// top-left pixels in the order that split gives; w the image width. The
// first pixel always wins at first (nothing has won yet); after it, v wins
// when it is a number and not ≤ the best so far: larger, or the best so far
// is NaN (NLE_UQ is true when either is NaN).
__attribute__((target("avx2"))) static inline void max8_avx2(__m256 a0, __m256 a1, __m256 b0, __m256 b1, __m256 f,
                                                             int64_t w, __m256& bv, __m256& bi) {
    const __m256 one = _mm256_set1_ps(1.0f), fw = _mm256_set1_ps(float(w));
    const __m256 v[4] = {_mm256_shuffle_ps(a0, a1, _MM_SHUFFLE(2, 0, 2, 0)), _mm256_shuffle_ps(a0, a1, _MM_SHUFFLE(3, 1, 3, 1)),
                         _mm256_shuffle_ps(b0, b1, _MM_SHUFFLE(2, 0, 2, 0)), _mm256_shuffle_ps(b0, b1, _MM_SHUFFLE(3, 1, 3, 1))};
    const __m256 at[4] = {f, _mm256_add_ps(f, one), _mm256_add_ps(f, fw), _mm256_add_ps(_mm256_add_ps(f, fw), one)};
    bv = v[0], bi = at[0];
    for (int k = 1; k < 4; k++) {
        const __m256 take = _mm256_and_ps(_mm256_cmp_ps(v[k], bv, _CMP_NLE_UQ), _mm256_cmp_ps(v[k], v[k], _CMP_ORD_Q));
        bv = _mm256_blendv_ps(bv, v[k], take);
        bi = _mm256_blendv_ps(bi, at[k], take);
    }
}

// The backward of 8 windows: v their gradients, at their winners' indices, f
// their top-left pixels' indices (in window order), w the image width. Each
// pixel gets v when at names it, else 0; l0 h0 the top pixels interleaved
// (unpacklo/hi, within 128-bit halves), l1 h1 the bottom ones.
__attribute__((target("avx2"))) static inline void unpool8_avx2(__m256 v, __m256 at, __m256 f, int64_t w, __m256& l0,
                                                                __m256& h0, __m256& l1, __m256& h1) {
    const __m256 one = _mm256_set1_ps(1.0f), fb = _mm256_add_ps(f, _mm256_set1_ps(float(w)));
    const __m256 e0 = _mm256_and_ps(v, _mm256_cmp_ps(at, f, _CMP_EQ_OQ));
    const __m256 o0 = _mm256_and_ps(v, _mm256_cmp_ps(at, _mm256_add_ps(f, one), _CMP_EQ_OQ));
    const __m256 e1 = _mm256_and_ps(v, _mm256_cmp_ps(at, fb, _CMP_EQ_OQ));
    const __m256 o1 = _mm256_and_ps(v, _mm256_cmp_ps(at, _mm256_add_ps(fb, one), _CMP_EQ_OQ));
    l0 = _mm256_unpacklo_ps(e0, o0), h0 = _mm256_unpackhi_ps(e0, o0);
    l1 = _mm256_unpacklo_ps(e1, o1), h1 = _mm256_unpackhi_ps(e1, o1);
}

__attribute__((target("avx2"))) static int64_t max2x2_row_avx2(const float* r0, const float* r1, int64_t w,
                                                                  int64_t ow, float base, float* y, float* idx) {
    // _mm256_shuffle_ps works within 128-bit halves: its even/odd split of 16
    // pixels gives windows 0 1 4 5 | 2 3 6 7, so the indices are made in
    // that order and both results put back in window order by one permute.
    const __m256 step = _mm256_setr_ps(0.0f, 2.0f, 8.0f, 10.0f, 4.0f, 6.0f, 12.0f, 14.0f);
    int64_t ox = 0;
    for (; ox + 8 <= ow; ox += 8) {
        const __m256 a0 = _mm256_loadu_ps(r0 + 2 * ox), a1 = _mm256_loadu_ps(r0 + 2 * ox + 8);
        const __m256 b0 = _mm256_loadu_ps(r1 + 2 * ox), b1 = _mm256_loadu_ps(r1 + 2 * ox + 8);
        __m256 bv, bi;
        max8_avx2(a0, a1, b0, b1, _mm256_add_ps(_mm256_set1_ps(base + float(2 * ox)), step), w, bv, bi);
        _mm256_storeu_ps(y + ox, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(bv), 0xD8)));
        _mm256_storeu_ps(idx + ox, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(bi), 0xD8)));
    }
    return ox;
}

// The backward of eight windows at a time (see the SSE loop in maxpool_backward).
__attribute__((target("avx2"))) static int64_t unpool2x2_row_avx2(const float* dr, const float* ir, int64_t w,
                                                                    int64_t ow, float f0, float* r0, float* r1) {
    const __m256 step = _mm256_setr_ps(0.0f, 2.0f, 4.0f, 6.0f, 8.0f, 10.0f, 12.0f, 14.0f);
    int64_t ox = 0;
    for (; ox + 8 <= ow; ox += 8) {
        __m256 l0, h0, l1, h1;
        unpool8_avx2(_mm256_loadu_ps(dr + ox), _mm256_loadu_ps(ir + ox),
                     _mm256_add_ps(_mm256_set1_ps(f0 + float(2 * ox)), step), w, l0, h0, l1, h1);
        // permute2f128 puts the halves in order.
        _mm256_storeu_ps(r0 + 2 * ox, _mm256_permute2f128_ps(l0, h0, 0x20));
        _mm256_storeu_ps(r0 + 2 * ox + 8, _mm256_permute2f128_ps(l0, h0, 0x31));
        _mm256_storeu_ps(r1 + 2 * ox, _mm256_permute2f128_ps(l1, h1, 0x20));
        _mm256_storeu_ps(r1 + 2 * ox + 8, _mm256_permute2f128_ps(l1, h1, 0x31));
    }
    return ox;
}

// The top-left pixels' indices of two output rows of 4 windows (base: the
// first one's; the second row's start 2 image rows further).
__attribute__((target("avx2"))) static inline __m256 rows4_first(float base, int64_t w) {
    const float w2 = float(2 * w);
    return _mm256_add_ps(_mm256_set1_ps(base), _mm256_setr_ps(0.0f, 2.0f, 4.0f, 6.0f, w2, w2 + 2.0f, w2 + 4.0f, w2 + 6.0f));
}

// Rows of 4 windows (8 or 9 pixels: the second pool of examples/cnn.lua), two
// output rows per vector: the low half holds output row oy, the high half row
// oy + 1 (image rows 2oy + 2, 2oy + 3), so the 8 results are y's next 8 in
// order. img: image row 2oy; base: the 1-based index of its first pixel. The
// same rule as max2x2_row_avx2.
__attribute__((target("avx2"))) static void max2x2_rows4_avx2(const float* img, int64_t w, float base, float* y,
                                                                float* idx) {
    const __m256 a0 = _mm256_set_m128(_mm_loadu_ps(img + 2 * w), _mm_loadu_ps(img));
    const __m256 a1 = _mm256_set_m128(_mm_loadu_ps(img + 2 * w + 4), _mm_loadu_ps(img + 4));
    const __m256 b0 = _mm256_set_m128(_mm_loadu_ps(img + 3 * w), _mm_loadu_ps(img + w));
    const __m256 b1 = _mm256_set_m128(_mm_loadu_ps(img + 3 * w + 4), _mm_loadu_ps(img + w + 4));
    __m256 bv, bi;
    max8_avx2(a0, a1, b0, b1, rows4_first(base, w), w, bv, bi);
    _mm256_storeu_ps(y, bv);
    _mm256_storeu_ps(idx, bi);
}

// The backward of two such output rows (dr, ir: their 8 gradients and
// indices): image rows 2oy .. 2oy + 3 from img, their first 8 pixels.
__attribute__((target("avx2"))) static void unpool2x2_rows4_avx2(const float* dr, const float* ir, int64_t w, float f0,
                                                                   float* img) {
    __m256 l0, h0, l1, h1;
    unpool8_avx2(_mm256_loadu_ps(dr), _mm256_loadu_ps(ir), rows4_first(f0, w), w, l0, h0, l1, h1);
    // l0: pixels 0-3 of the top row of each output row (low half: row 2oy, high: 2oy + 2); h0: 4-7.
    _mm256_storeu_ps(img, _mm256_permute2f128_ps(l0, h0, 0x20));
    _mm256_storeu_ps(img + w, _mm256_permute2f128_ps(l1, h1, 0x20));
    _mm256_storeu_ps(img + 2 * w, _mm256_permute2f128_ps(l0, h0, 0x31));
    _mm256_storeu_ps(img + 3 * w, _mm256_permute2f128_ps(l1, h1, 0x31));
}
#endif

static inline void max2x2_row(const float* r0, const float* r1, int64_t w, int64_t ow, float base, float* y,
                              float* idx) {
    int64_t ox = 0;
#if defined(__x86_64__)
    if (avx2() && ow >= 8) ox = max2x2_row_avx2(r0, r1, w, ow, base, y, idx);
#endif
#if defined(__SSE2__)
    // Four windows at a time: their pixels split into even and odd columns.
    const __m128 step = _mm_setr_ps(0.0f, 2.0f, 4.0f, 6.0f), one = _mm_set1_ps(1.0f), fw = _mm_set1_ps(float(w));
    for (; ox + 4 <= ow; ox += 4) {
        const __m128 a0 = _mm_loadu_ps(r0 + 2 * ox), a1 = _mm_loadu_ps(r0 + 2 * ox + 4);
        const __m128 b0 = _mm_loadu_ps(r1 + 2 * ox), b1 = _mm_loadu_ps(r1 + 2 * ox + 4);
        const __m128 f = _mm_add_ps(_mm_set1_ps(base + float(2 * ox)), step);
        const __m128 v[4] = {_mm_shuffle_ps(a0, a1, _MM_SHUFFLE(2, 0, 2, 0)), _mm_shuffle_ps(a0, a1, _MM_SHUFFLE(3, 1, 3, 1)),
                             _mm_shuffle_ps(b0, b1, _MM_SHUFFLE(2, 0, 2, 0)), _mm_shuffle_ps(b0, b1, _MM_SHUFFLE(3, 1, 3, 1))};
        const __m128 at[4] = {f, _mm_add_ps(f, one), _mm_add_ps(f, fw), _mm_add_ps(_mm_add_ps(f, fw), one)};
        __m128 bv = v[0], bi = at[0];  // as in max2x2_row_avx2
        for (int k = 1; k < 4; k++) {
            const __m128 take = _mm_and_ps(_mm_cmpnle_ps(v[k], bv), _mm_cmpord_ps(v[k], v[k]));
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
            const bool take = v[k] > bv || bi == 0.0f || (bv != bv && v[k] == v[k]);
            bv = take ? v[k] : bv;
            bi = take ? at[k] : bi;
        }
        y[ox] = bv;
        idx[ox] = bi;
    }
}

void CpuDevice::maxpool(const ConvGeom& g, const Matrix& x, const Matrix& y, const Matrix& idx) {
    Timed t(this, Kernel::maxpool);
    const int64_t oh = g.oh(), ow = g.ow(), P = oh * ow, hw = g.h * g.w;
    const Plane X = plane(x), Y = plane(y), I = plane(idx);
    if (pool_2x2(g, X, Y, I)) {
        per_channel(g.c, x.cols, 4 * P, [&](int64_t c, int64_t n) {
            const float* img = &X.at(c * hw, n);
            float* yo = &Y.at(c * P, n);
            float* io = &I.at(c * P, n);
            int64_t oy = 0;
#if defined(__x86_64__)
            if (avx2() && ow == 4)
                for (; oy + 2 <= oh; oy += 2)
                    max2x2_rows4_avx2(img + 2 * oy * g.w, g.w, float(c * hw + 2 * oy * g.w + 1), yo + oy * ow, io + oy * ow);
#endif
            for (; oy < oh; oy++) {
                const float* r0 = img + 2 * oy * g.w;
                max2x2_row(r0, r0 + g.w, g.w, ow, float(c * hw + 2 * oy * g.w + 1), yo + oy * ow, io + oy * ow);
            }
        });
        return;
    }
    per_channel(g.c, x.cols, g.kh * g.kw * P, [&](int64_t c, int64_t n) {
        const float* img = &X.at(c * hw, n);
        for_each_window(g, [&](int64_t o, Span ys, Span xs) {
            // The largest value, the first on ties; NaN loses to any number,
            // and a window of only NaN gives NaN at its first pixel (so the
            // backward routes its gradient there), as on Vulkan.
            int64_t best = -1;
            float bv = -std::numeric_limits<float>::infinity();
            for (int64_t iy = ys.lo; iy < ys.hi; iy++)
                for (int64_t ix = xs.lo; ix < xs.hi; ix++) {
                    const float v = img[(iy * g.w + ix) * X.rs];
                    if (v > bv || best < 0 || (bv != bv && v == v)) bv = v, best = iy * g.w + ix;
                }
            Y.at(c * P + o, n) = bv;
            I.at(c * P + o, n) = best < 0 ? 0.0f : float(c * hw + best + 1);
        });
    });
}

// An index that is not a pixel of its own output's window is ignored (as on
// Vulkan, where each pixel gathers from the windows that hold it).
void CpuDevice::maxpool_backward(const ConvGeom& g, const Matrix& dy, const Matrix& idx, const Matrix& dx) {
    Timed t(this, Kernel::maxpool_backward);
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
            int64_t oy = 0;
#if defined(__x86_64__)
            if (avx2() && ow == 4)
                for (; oy + 2 <= oh; oy += 2) {
                    float* r0 = img + 2 * oy * g.w;
                    unpool2x2_rows4_avx2(d + oy * ow, ix + oy * ow, g.w, float(c * hw + 2 * oy * g.w + 1), r0);
                    if (g.w & 1)
                        for (int64_t r = 0; r < 4; r++) r0[r * g.w + g.w - 1] = 0.0f;
                }
#endif
            for (; oy < oh; oy++) {
                float* r0 = img + 2 * oy * g.w;
                float* r1 = r0 + g.w;
                const float* dr = d + oy * ow;
                const float* ir = ix + oy * ow;
                const float f0 = float(c * hw + 2 * oy * g.w + 1);
                int64_t ox = 0;
#if defined(__x86_64__)
                if (avx2() && ow >= 8) ox = unpool2x2_row_avx2(dr, ir, g.w, ow, f0, r0, r1);
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

void CpuDevice::avgpool(const ConvGeom& g, const Matrix& x, const Matrix& y) {
    Timed t(this, Kernel::avgpool);
    const int64_t oh = g.oh(), ow = g.ow(), P = oh * ow, hw = g.h * g.w;
    const Plane X = plane(x), Y = plane(y);
    const double inv = 1.0 / double(g.kh * g.kw);
    per_channel(g.c, x.cols, g.kh * g.kw * P, [&](int64_t c, int64_t n) {
        const float* img = &X.at(c * hw, n);
        for_each_window(g, [&](int64_t o, Span ys, Span xs) {
            float s = 0.0f;
            for (int64_t iy = ys.lo; iy < ys.hi; iy++)
                for (int64_t ix = xs.lo; ix < xs.hi; ix++) s += img[(iy * g.w + ix) * X.rs];
            Y.at(c * P + o, n) = float(double(s) * inv);
        });
    });
}

void CpuDevice::avgpool_backward(const ConvGeom& g, const Matrix& dy, const Matrix& dx) {
    Timed t(this, Kernel::avgpool_backward);
    const int64_t oh = g.oh(), ow = g.ow(), P = oh * ow, hw = g.h * g.w;
    const Plane D = plane(dy), X = plane(dx);
    const float inv = float(1.0 / double(g.kh * g.kw));
    per_channel(g.c, dx.cols, g.kh * g.kw * P + hw, [&](int64_t c, int64_t n) {
        float* img = &X.at(c * hw, n);
        for (int64_t k = 0; k < hw; k++) img[k * X.rs] = 0.0f;
        for_each_window(g, [&](int64_t o, Span ys, Span xs) {
            const float v = D.at(c * P + o, n) * inv;
            for (int64_t iy = ys.lo; iy < ys.hi; iy++)
                for (int64_t ix = xs.lo; ix < xs.hi; ix++) img[(iy * g.w + ix) * X.rs] += v;
        });
    });
}

}  // namespace vela::cpu

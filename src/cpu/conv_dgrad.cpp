// conv_dgrad on the CPU (core/kernels.def): the input gradient of a
// convolution, dx(c, iy, ix) ← Σ_o Σ_(ky, kx) w(o, c, ky, kx)·dz(o, iy − ky,
// ix − kx) (stride 1, no padding; the general form in the scalar loops), read
// from dz and w in place: no windows (im2col's C·kh·kw × P·n matrix), no
// product Wᵀ·du into them and no col2im, which nn.conv2d's backward ran before.
//
// Fast path (stride 1, no padding, dz and dx dense along their columns, AVX2
// + FMA): a dx row (c, iy) is the sum over (o, ky) of the dz rows oy = iy − ky
// times w(o, c, ky, kx), each shifted right by kx. A register tile holds, for
// 2 samples (the same weights), one run of up to 8 dz columns and kw ≤ 5 window
// columns, the kw partial rows before their shift (10 accumulators): each
// (o, ky) adds the 2 dz rows (one load each, masked for a short run) times kw
// broadcast weights, so no sum is spent on a position outside the image; then
// the partial rows are shifted by kx in registers (a lane permute) and added
// into the dx row. Wider windows take the window columns 5 at a time. The
// weights are repacked once per call, [c][o][ky][kx]. Every dx element is
// summed in one fixed order, (o, ky) within a group of window columns, then
// the groups' and runs' partial rows in order: the same bits on every thread
// count.
//
// On the v4 path (AVX-512, isa() == Isa::v4) a zmm holds the same run of 2
// samples, one per 8 lanes, and the tile covers 8 samples (4 zmm of dz and 5
// broadcast weights per (ky, o), 20 accumulators): one broadcast feeds 4 FMAs
// instead of 2. For one aligned load per zmm each group of 8 samples' dz is
// copied once per thread that visits it, [o][oy][run][sample][8 columns]
// (128 KB for the CNN's second conv; zeros past a short run or a missing
// sample), then read for every input channel. The shift is a masked lane
// permute per (sample, kx) into 16 lanes: every dx element gets the AVX2
// tile's products in the AVX2 tile's order, so the v4 and v3 paths give the
// same bits (tests/lua/test_conv_dgrad.lua checks it against a VELA_CPU_ISA=v3
// child). Measured on one Zen 5 thread (the CNN's second conv): 4.6 ms of
// cpu time a call against 8.9 for the AVX2 tile; a tile of 2 dx rows per zmm
// for 4 samples (rows iy and iy + 1, dz read in place, masked where one row
// has no dz row: 9% of its FMAs wasted here, half its loads split across
// cache lines) 5.0, as was this copy's tile for 4 samples; 10 samples no
// faster than 8. Anything else (strides, padding, views, no AVX2)
// takes the scalar loops at the end, which scatter each output into a plane
// per (sample, channel) in the order (o, ky, kx, oy, ox).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "cpu/conv_walk.hpp"
#include "cpu/cpu_kernels.hpp"
#include "cpu/isa.hpp"

namespace vela::cpu {

using convwalk::lanes;
using convwalk::Plane;
using convwalk::plane;

namespace {

constexpr int64_t kCols = 5;  // window columns per register tile

// What one tile reads: NS samples' dz columns, the weights of one input
// channel ([o][ky][kx], kh·kw per o), the geometry's sizes.
struct DgradArgs {
    const float* dz[2];
    const float* wc;
    int64_t out, P, ow, kh, kw;
};

// The tile for dx row iy of NS samples, dz columns [ox0, ox0 + 8) (a shorter
// run when Masked, m its lanes), window columns [kx0, kx0 + NK), NK ≤ 5; ky
// over [ky0, ky1) (the window rows that reach row iy), o inner. Adds its
// shifted partial rows into rb[s] at ox0 + kx0 (rb: the sample's dx row, 16
// floats of room past it).
template <int NS, bool Masked, int NK>
__attribute__((target("avx2,fma"))) void dgrad_tile(const DgradArgs& a, int64_t iy, int64_t ky0, int64_t ky1,
                                                    int64_t ox0, __m256i m, int64_t kx0, float* const* rb) {
    __m256 acc[NS][NK];
    _Pragma("GCC unroll 8") for (int s = 0; s < NS; s++)
        _Pragma("GCC unroll 8") for (int k = 0; k < NK; k++) acc[s][k] = _mm256_setzero_ps();
    const int64_t khw = a.kh * a.kw, out = a.out, P = a.P;
    const float* const dz0 = a.dz[0];
    const float* const dz1 = a.dz[1];
    for (int64_t ky = ky0; ky < ky1; ky++) {
        const int64_t at = ox0 + (iy - ky) * a.ow;
        const float* d0 = dz0 + at;
        const float* d1 = dz1 + at;
        const float* wk = a.wc + ky * a.kw + kx0;
        for (int64_t o = 0; o < out; o++, d0 += P, d1 += P, wk += khw) {
            __m256 dv[NS];
            dv[0] = Masked ? _mm256_maskload_ps(d0, m) : _mm256_loadu_ps(d0);
            if (NS > 1) dv[NS - 1] = Masked ? _mm256_maskload_ps(d1, m) : _mm256_loadu_ps(d1);
            _Pragma("GCC unroll 8") for (int k = 0; k < NK; k++) {
                const __m256 wv = _mm256_broadcast_ss(wk + k);
                _Pragma("GCC unroll 8") for (int s = 0; s < NS; s++) acc[s][k] = _mm256_fmadd_ps(wv, dv[s], acc[s][k]);
            }
        }
    }
    // Partial row k goes k lanes to the right: lanes i ≥ k of the first
    // vector, the k lanes it pushes out into the second.
    _Pragma("GCC unroll 8") for (int s = 0; s < NS; s++) {
        __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
        _Pragma("GCC unroll 8") for (int k = 0; k < NK; k++) {
            const __m256i idx = _mm256_setr_epi32((8 - k) & 7, (9 - k) & 7, (10 - k) & 7, (11 - k) & 7,
                                                  (12 - k) & 7, (13 - k) & 7, (14 - k) & 7, (15 - k) & 7);
            const __m256 keep = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                                                       _mm256_set1_epi32(k - 1)));
            const __m256 p = _mm256_permutevar8x32_ps(acc[s][k], idx);
            lo = _mm256_add_ps(lo, _mm256_and_ps(p, keep));
            hi = _mm256_add_ps(hi, _mm256_andnot_ps(keep, p));
        }
        float* r = rb[s] + ox0 + kx0;
        _mm256_storeu_ps(r, _mm256_add_ps(_mm256_loadu_ps(r), lo));
        _mm256_storeu_ps(r + 8, _mm256_add_ps(_mm256_loadu_ps(r + 8), hi));
    }
}

// One tile with nk window columns, NK = nk as a constant.
template <int NS, bool Masked>
__attribute__((target("avx2,fma"))) void dgrad_tile_n(const DgradArgs& a, int64_t iy, int64_t ky0, int64_t ky1,
                                                      int64_t ox0, __m256i m, int64_t kx0, int64_t nk,
                                                      float* const* rb) {
    switch (nk) {
        case 1: return dgrad_tile<NS, Masked, 1>(a, iy, ky0, ky1, ox0, m, kx0, rb);
        case 2: return dgrad_tile<NS, Masked, 2>(a, iy, ky0, ky1, ox0, m, kx0, rb);
        case 3: return dgrad_tile<NS, Masked, 3>(a, iy, ky0, ky1, ox0, m, kx0, rb);
        case 4: return dgrad_tile<NS, Masked, 4>(a, iy, ky0, ky1, ox0, m, kx0, rb);
        default: return dgrad_tile<NS, Masked, 5>(a, iy, ky0, ky1, ox0, m, kx0, rb);
    }
}

// dx rows of input channel c for NS samples (dx: their columns).
template <int NS>
__attribute__((target("avx2,fma"))) void dgrad_channel(const ConvGeom& g, const DgradArgs& a, int64_t c,
                                                      float* const* dx, float* rows) {
    const int64_t oh = g.oh(), ow = g.ow(), rl = g.w + 16;
    float* rb[2] = {rows, rows + rl};
    for (int64_t iy = 0; iy < g.h; iy++) {
        const int64_t ky0 = std::max<int64_t>(0, iy - oh + 1), ky1 = std::min(g.kh, iy + 1);
        for (int s = 0; s < NS; s++) std::fill_n(rb[s], rl, 0.0f);
        for (int64_t ox0 = 0; ox0 < ow; ox0 += 8) {
            const int64_t len = std::min<int64_t>(8, ow - ox0);
            const __m256i m = lanes(len);
            for (int64_t kx0 = 0; kx0 < g.kw; kx0 += kCols) {
                const int64_t nk = std::min(kCols, g.kw - kx0);
                if (len < 8) dgrad_tile_n<NS, true>(a, iy, ky0, ky1, ox0, m, kx0, nk, rb);
                else dgrad_tile_n<NS, false>(a, iy, ky0, ky1, ox0, m, kx0, nk, rb);
            }
        }
        for (int s = 0; s < NS; s++) std::copy_n(rb[s], g.w, dx[s] + (c * g.h + iy) * g.w);
    }
}

// The v4 (AVX-512) path: each zmm holds one run of up to 8 dz columns of 2
// samples (low and high 8 lanes), from a copy of dz per group of kGroup
// samples, [o][oy][run][sample][8] (zero past a short run or a missing
// sample), aligned, so that a zmm is one load. The tile is the AVX2 tile for
// 2·NP samples: NP zmm of dz per (ky, o), kw ≤ 5 broadcast weights, NP × NK
// accumulators.
// x86-64-v4's features by name: isa.hpp's VELA_V4 also asks for 512-bit
// vectors, a target string clang refuses (dropping the attribute), and these
// loops are intrinsics.
#define DGRAD_V4 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")))
constexpr int64_t kGroup = 8;  // samples per v4 group: 4 zmm per (ky, o), 20 accumulators

struct DgradArgsV4 {
    const float* pk;  // the group's dz copy
    const float* wc;  // input channel c's weights, [o][ky][kx]
    int64_t out, oh, runs, kh, kw;
};

template <int NP, int NK>
DGRAD_V4 void dgrad_tile_v4(const DgradArgsV4& a, int64_t iy, int64_t ky0, int64_t ky1, int64_t run, int64_t kx0,
                           float* const* rb) {
    __m512 acc[NP][NK];
    _Pragma("GCC unroll 8") for (int p = 0; p < NP; p++)
        _Pragma("GCC unroll 8") for (int k = 0; k < NK; k++) acc[p][k] = _mm512_setzero_ps();
    const int64_t khw = a.kh * a.kw, out = a.out, ostep = a.oh * a.runs * NP * 16;
    for (int64_t ky = ky0; ky < ky1; ky++) {
        const float* d = a.pk + ((iy - ky) * a.runs + run) * NP * 16;
        const float* wk = a.wc + ky * a.kw + kx0;
        for (int64_t o = 0; o < out; o++, wk += khw, d += ostep) {
            __m512 dv[NP];
            _Pragma("GCC unroll 8") for (int p = 0; p < NP; p++) dv[p] = _mm512_load_ps(d + 16 * p);
            _Pragma("GCC unroll 8") for (int k = 0; k < NK; k++) {
                const __m512 wv = _mm512_set1_ps(wk[k]);
                _Pragma("GCC unroll 8") for (int p = 0; p < NP; p++) acc[p][k] = _mm512_fmadd_ps(wv, dv[p], acc[p][k]);
            }
        }
    }
    // Each sample's partial row k goes k lanes to the right, into 16 lanes of
    // its dx row: lane j takes lane j − k of the sample's half where 0 ≤ j − k
    // < 8 and +0 elsewhere (the AVX2 tile's lo and hi vectors: the same sums).
    _Pragma("GCC unroll 8") for (int p = 0; p < NP; p++) {
        _Pragma("GCC unroll 2") for (int h = 0; h < 2; h++) {
            __m512 sum = _mm512_setzero_ps();
            _Pragma("GCC unroll 8") for (int k = 0; k < NK; k++) {
                const __m512i idx = _mm512_and_si512(
                    _mm512_add_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                     _mm512_set1_epi32(8 * h - k)),
                    _mm512_set1_epi32(15));
                sum = _mm512_add_ps(sum, _mm512_maskz_permutexvar_ps(__mmask16(0xffu << k), idx, acc[p][k]));
            }
            float* r = rb[2 * p + h] + run * 8 + kx0;
            _mm512_storeu_ps(r, _mm512_add_ps(_mm512_loadu_ps(r), sum));
        }
    }
}

template <int NP>
DGRAD_V4 void dgrad_tile_v4_n(const DgradArgsV4& a, int64_t iy, int64_t ky0, int64_t ky1, int64_t run, int64_t kx0,
                             int64_t nk, float* const* rb) {
    switch (nk) {
        case 1: return dgrad_tile_v4<NP, 1>(a, iy, ky0, ky1, run, kx0, rb);
        case 2: return dgrad_tile_v4<NP, 2>(a, iy, ky0, ky1, run, kx0, rb);
        case 3: return dgrad_tile_v4<NP, 3>(a, iy, ky0, ky1, run, kx0, rb);
        case 4: return dgrad_tile_v4<NP, 4>(a, iy, ky0, ky1, run, kx0, rb);
        default: return dgrad_tile_v4<NP, 5>(a, iy, ky0, ky1, run, kx0, rb);
    }
}

// dx rows of input channel c for the group's ns ≤ 2·NP samples (dx: their
// columns; rows: 2·NP row buffers of w + 16 floats).
template <int NP>
DGRAD_V4 void dgrad_channel_v4(const ConvGeom& g, const DgradArgsV4& a, int64_t c, int64_t ns, float* const* dx,
                              float* rows) {
    const int64_t oh = g.oh(), rl = g.w + 16;
    float* rb[2 * NP];
    for (int i = 0; i < 2 * NP; i++) rb[i] = rows + i * rl;
    for (int64_t iy = 0; iy < g.h; iy++) {
        const int64_t ky0 = std::max<int64_t>(0, iy - oh + 1), ky1 = std::min(g.kh, iy + 1);
        for (int i = 0; i < 2 * NP; i++) std::fill_n(rb[i], rl, 0.0f);
        for (int64_t run = 0; run < a.runs; run++)
            for (int64_t kx0 = 0; kx0 < g.kw; kx0 += kCols)
                dgrad_tile_v4_n<NP>(a, iy, ky0, ky1, run, kx0, std::min(kCols, g.kw - kx0), rb);
        for (int64_t s = 0; s < ns; s++) std::copy_n(rb[s], g.w, dx[s] + (c * g.h + iy) * g.w);
    }
}

// The group's dz copy for the v4 path (pk: out·oh·runs·2·np runs of 8 floats).
void dgrad_pack_v4(const Plane& D, int64_t P, int64_t out, int64_t oh, int64_t ow, int64_t n, int64_t ns, int64_t np,
                   float* pk) {
    const int64_t runs = (ow + 7) / 8;
    for (int64_t o = 0; o < out; o++)
        for (int64_t oy = 0; oy < oh; oy++)
            for (int64_t r = 0; r < runs; r++) {
                const int64_t len = std::min<int64_t>(8, ow - r * 8);
                for (int64_t s = 0; s < 2 * np; s++, pk += 8) {
                    if (s < ns) std::copy_n(&D.at(o * P + oy * ow + r * 8, n + s), len, pk);
                    std::fill(pk + (s < ns ? len : 0), pk + 8, 0.0f);
                }
            }
}

}  // namespace

void CpuDevice::conv_dgrad(const ConvGeom& g, const Matrix& dz, const Matrix& w, const Matrix& dx) {
    Timed t(this, Kernel::conv_dgrad);
    const int64_t out = w.rows, P = g.positions(), N = dx.cols, oh = g.oh(), ow = g.ow();
    const int64_t khw = g.kh * g.kw, hw = g.h * g.w;
    if (N == 0) return;
    const Plane D = plane(dz), W = plane(w), X = plane(dx);
    const bool fast =
        g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0 && D.rs == 1 && X.rs == 1 && isa() != Isa::base;
    if (fast) {
        // The weights of input channel c at wp + c·out·kh·kw, [o][ky][kx].
        // (r = c·kh·kw + k walked as (c, k): a division per weight cost ~0.3 ms
        // a call, as much as the tile's work for 8 samples.)
        std::vector<float> wp(size_t(g.c * out * khw));
        for (int64_t o = 0; o < out; o++)
            for (int64_t c = 0; c < g.c; c++)
                for (int64_t k = 0; k < khw; k++) wp[size_t((c * out + o) * khw + k)] = W.at(o, c * khw + k);
        if (isa() == Isa::v4) {
            const int64_t groups = (N + kGroup - 1) / kGroup, runs = (ow + 7) / 8;
            const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(1, kGroup * hw * out * khw / 16));
            parallel_for(groups * g.c, grain, [&](int64_t b0, int64_t e) {
                convwalk::Scratch rows(1, size_t(kGroup * (g.w + 16))), pkv(0, size_t(out * oh * runs * kGroup * 8));
                float* const pk = pkv.p;
                int64_t packed = -1;  // the group in pk
                for (int64_t q = b0; q < e; q++) {
                    const int64_t grp = q / g.c, n = grp * kGroup, c = q % g.c, ns = std::min(kGroup, N - n);
                    const int64_t np = (ns + 1) / 2;
                    if (grp != packed) {
                        dgrad_pack_v4(D, P, out, oh, ow, n, ns, np, pk);
                        packed = grp;
                    }
                    const DgradArgsV4 a{pk, &wp[size_t(c * out * khw)], out, oh, runs, g.kh, g.kw};
                    float* cols[kGroup];
                    for (int64_t s = 0; s < ns; s++) cols[s] = &X.at(0, n + s);
                    switch (np) {
                        case 1: dgrad_channel_v4<1>(g, a, c, ns, cols, rows.p); break;
                        case 2: dgrad_channel_v4<2>(g, a, c, ns, cols, rows.p); break;
                        case 3: dgrad_channel_v4<3>(g, a, c, ns, cols, rows.p); break;
                        default: dgrad_channel_v4<4>(g, a, c, ns, cols, rows.p); break;
                    }
                }
            });
            return;
        }
        const int64_t pairs = (N + 1) / 2;
        const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(1, 2 * hw * out * khw / 8));
        parallel_for(pairs * g.c, grain, [&](int64_t b0, int64_t e) {
            std::vector<float> rows(size_t(2 * (g.w + 16)));
            for (int64_t q = b0; q < e; q++) {
                const int64_t n = (q / g.c) * 2, c = q % g.c, ns = std::min<int64_t>(2, N - n);
                DgradArgs a{{&D.at(0, n), &D.at(0, n + ns - 1)}, &wp[size_t(c * out * khw)], out, P, ow, g.kh, g.kw};
                float* cols[2] = {&X.at(0, n), &X.at(0, n + ns - 1)};
                if (ns == 2) dgrad_channel<2>(g, a, c, cols, rows.data());
                else dgrad_channel<1>(g, a, c, cols, rows.data());
            }
        });
        return;
    }
    // Any geometry: per (sample, input channel), each output's dz scattered
    // over the pixels of its window, in the order (o, ky, kx, oy, ox).
    const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(1, out * P * khw));
    parallel_for(N * g.c, grain, [&](int64_t b0, int64_t e) {
        std::vector<float> acc(static_cast<size_t>(hw)), drow(static_cast<size_t>(ow));
        for (int64_t q = b0; q < e; q++) {
            const int64_t n = q / g.c, c = q % g.c;
            std::fill(acc.begin(), acc.end(), 0.0f);
            for (int64_t o = 0; o < out; o++)
                for (int64_t ky = 0; ky < g.kh; ky++)
                    for (int64_t kx = 0; kx < g.kw; kx++) {
                        const float wr = W.at(o, (c * g.kh + ky) * g.kw + kx);
                        for (int64_t oy = 0; oy < oh; oy++) {
                            const int64_t iy = oy * g.sh - g.ph + ky;
                            if (iy < 0 || iy >= g.h) continue;
                            float* a = &acc[size_t(iy * g.w)];
                            const float* d = &D.at(o * P + oy * ow, n);
                            for (int64_t ox = 0; ox < ow; ox++) drow[size_t(ox)] = d[ox * D.rs];
                            if (g.sw == 1 && g.pw == 0) {
                                float* s = a + kx;
                                for (int64_t ox = 0; ox < ow; ox++) s[ox] += wr * drow[size_t(ox)];
                                continue;
                            }
                            for (int64_t ox = 0; ox < ow; ox++) {
                                const int64_t ix = ox * g.sw - g.pw + kx;
                                if (ix >= 0 && ix < g.w) a[ix] += wr * drow[size_t(ox)];
                            }
                        }
                    }
            for (int64_t i = 0; i < hw; i++) X.at(c * hw + i, n) = acc[size_t(i)];
        }
    });
}

}  // namespace vela::cpu

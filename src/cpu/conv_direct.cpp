// The direct convolution on the CPU (core/kernels.def's conv and conv_wgrad):
// no im2col windows, no GEMM. nn.conv2d takes it for a one-channel input
// (the first layer of an image net: im2col's K = kh·kw is then too short for
// OpenBLAS to run near the FMA peak, 47 GFLOP per cpu-second at the first
// conv of scripts/bench/cnn.lua against 99) — docs/cpu.md, "The first conv" —
// and on AVX2 for the forward of any stride-1 unpadded conv (the second conv
// of examples/cnn.lua: no windows, no packing, no to_images).
//
// Fast paths (stride 1, no padding, every image and output column dense):
// on AVX2 + FMA (isa() v3), conv holds 4 output channels × 3 runs of 8 output
// positions (a 24-column row, or 3 rows of an 8-column output) in 12
// accumulators and adds each window offset (c, ky, kx) with one broadcast
// weight per channel, then the bias and relu in the same registers;
// conv_wgrad holds, for one input channel, 2 channels × 5 window columns,
// summing dz × the shifted image over the positions, and for several (kw ≤ 5,
// out a multiple of 16) 16 channels × 5 window columns, dz moved to
// channels-last (blocks of 16 channels, 64-byte aligned, by 8×8 transposes)
// so that each position adds 2 vectors of dz times kw broadcast pixels (kw a
// template constant).
// On AVX-512 (isa() v4; docs/cpu.md, "The direct conv on AVX-512"): conv's
// tile runs across output channels, 2 vectors of 16 channels × a run of ≤ 12
// positions of a row, a broadcast pixel per position and window offset
// (fwd_tile4; an 8-column row does not fill a vector of positions), and for
// rows of ≥ 16 columns (the first conv's 24) 8 channels × 3 vectors of 16
// positions in the plane's order, stored straight into the planes
// (fwd_postile); conv_wgrad's several-channel tile takes up to 4 blocks of 16
// channels per pass (wgrad_rows4), its one-channel tile 8 channels × 5 window
// columns, two channels' 8-lane runs side by side in each vector
// (wgrad_block8). Anything else takes the scalar loops below (any geometry).
// Each output is summed in a fixed order: the window offsets in im2col's row
// order for conv; for conv_wgrad fixed chunks of kChunk (kChunkMany) samples,
// each chunk's sum alone, then the chunks in order, so the result does not
// depend on the thread count. The v4 tiles keep the v3 tiles' order lane for
// lane: the same bits on both paths (tests/lua/test_conv_direct.lua).
#include <immintrin.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "cpu/conv_walk.hpp"
#include "cpu/cpu_kernels.hpp"
#include "cpu/isa.hpp"

namespace vela::cpu {

using convwalk::lanes;
using convwalk::Plane;
using convwalk::plane;
using convwalk::Aligned;
using convwalk::Scratch;

namespace {

constexpr int64_t kChunk = 8;        // samples per partial sum of conv_wgrad
constexpr int64_t kChunkMany = 16;   // the same with several input channels (packed)
constexpr int64_t kFwdBlock = 4;  // output channels per task of the fast conv

// conv's fast path takes any number of input channels; conv_wgrad's one.
bool fast_geometry(const ConvGeom& g, const Plane& X, const Plane& Y, bool one_channel = true) {
    return (g.c == 1 || !one_channel) && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0 && X.rs == 1 && Y.rs == 1 &&
           g.kh * g.kw <= 1024 && isa() != Isa::base;
}

// A run of up to 8 output positions of one output row: its first input
// pixel (oy·w + ox0, in the window's top-left corner), its first output
// position (oy·ow + ox0), and its length.
struct Seg {
    int64_t in, out, len;
};

// NV runs (one vector each) × 4 channels (wp: the block's weights, 4 per
// window offset, in im2col's row order (c·kh + ky)·kw + kx); out: channel j's
// plane at out + j·P. Every output is summed over the window offsets in that
// order whatever the tiling, then the bias, then relu. Masked: some run is
// shorter than 8.
template <int NV, bool Masked>
__attribute__((target("avx2,fma"))) inline void fwd_tile(const float* img, int64_t hw, int64_t w, int64_t c,
                                                         int64_t kh, int64_t kw, const float* wp, const Seg* sg,
                                                         int64_t nb, const float* bias, bool relu, float* out,
                                                         int64_t P) {
    __m256 acc[4][NV];
    _Pragma("GCC unroll 8") for (int j = 0; j < 4; j++)
        _Pragma("GCC unroll 8") for (int v = 0; v < NV; v++) acc[j][v] = _mm256_setzero_ps();
    __m256i m[NV];
    int64_t at[NV];
    _Pragma("GCC unroll 8") for (int v = 0; v < NV; v++) {
        at[v] = sg[v].in;
        if (Masked) m[v] = lanes(sg[v].len);
    }
    const float* wk = wp;
    for (int64_t ch = 0; ch < c; ch++, img += hw)
        for (int64_t ky = 0; ky < kh; ky++) {
            const float* row = img + ky * w;
            for (int64_t kx = 0; kx < kw; kx++, wk += 4) {
                __m256 xv[NV];
                _Pragma("GCC unroll 8") for (int v = 0; v < NV; v++)
                    xv[v] = Masked ? _mm256_maskload_ps(row + at[v] + kx, m[v]) : _mm256_loadu_ps(row + at[v] + kx);
                _Pragma("GCC unroll 8") for (int j = 0; j < 4; j++) {
                    const __m256 wv = _mm256_broadcast_ss(wk + j);
                    _Pragma("GCC unroll 8") for (int v = 0; v < NV; v++)
                        acc[j][v] = _mm256_fmadd_ps(wv, xv[v], acc[j][v]);
                }
            }
        }
    const __m256 zero = _mm256_setzero_ps();
    _Pragma("GCC unroll 8") for (int j = 0; j < 4; j++) {
        if (j >= nb) break;  // constant indices only, so the accumulators stay in registers
        const __m256 bv = _mm256_set1_ps(bias[j]);
        _Pragma("GCC unroll 8") for (int v = 0; v < NV; v++) {
            float* o = out + j * P + sg[v].out;
            __m256 r = _mm256_add_ps(acc[j][v], bv);
            if (relu) r = _mm256_max_ps(r, zero);
            if (Masked) _mm256_maskstore_ps(o, m[v], r);
            else _mm256_storeu_ps(o, r);
        }
    }
}

// The runs of a geometry: each output row cut into runs of 8 (the last one shorter).
std::vector<Seg> segments(const ConvGeom& g) {
    std::vector<Seg> s;
    const int64_t oh = g.oh(), ow = g.ow();
    for (int64_t oy = 0; oy < oh; oy++)
        for (int64_t ox0 = 0; ox0 < ow; ox0 += 8)
            s.push_back({oy * g.w + ox0, oy * ow + ox0, std::min<int64_t>(8, ow - ox0)});
    return s;
}

// All output positions of one sample for channels [o0, o0 + nb), 3 runs per
// tile (a 24-column row of the first conv of examples/cnn.lua; 3 rows of an
// 8-column output).
__attribute__((target("avx2,fma"))) void fwd_sample(const ConvGeom& g, const std::vector<Seg>& sg, const float* img,
                                                   const float* wp, int64_t nb, const float* bias, bool relu,
                                                   float* out) {
    const int64_t P = g.positions(), hw = g.h * g.w, S = int64_t(sg.size());
    for (int64_t i = 0; i < S; i += 3) {
        const int64_t nv = std::min<int64_t>(3, S - i);
        bool masked = false;
        for (int64_t v = i; v < i + nv; v++) masked = masked || sg[size_t(v)].len < 8;
        const Seg* s = &sg[size_t(i)];
#define VELA_FWD_TILE(NV, M) fwd_tile<NV, M>(img, hw, g.w, g.c, g.kh, g.kw, wp, s, nb, bias, relu, out, P)
        if (nv == 3) masked ? VELA_FWD_TILE(3, true) : VELA_FWD_TILE(3, false);
        else if (nv == 2) masked ? VELA_FWD_TILE(2, true) : VELA_FWD_TILE(2, false);
        else masked ? VELA_FWD_TILE(1, true) : VELA_FWD_TILE(1, false);
#undef VELA_FWD_TILE
    }
}

// The AVX-512 forward (isa() == v4): with 16 lanes an 8-column output row
// does not fill a vector, so this tile runs across output channels instead:
// NC vectors of 16 channels × a run of NP output positions of one row (NC·NP
// ≤ 24 accumulators). Each window offset r is NC aligned loads of the block's
// weights (wp: [r][16·NC], repacked once per call) and one broadcast pixel per
// position; each output is still summed over r in im2col's row order from 0,
// then the bias, then relu: the AVX2 tile's operations, lane for lane, so the
// same bits. The tile leaves through t ([position][channel]) into the planes.
constexpr int64_t kFwdBlock4 = 32;  // output channels per task of the AVX-512 forward
constexpr int64_t kRun4 = 12;       // the longest run of positions of its tile

template <int NC, int NP>
VELA_V4 void fwd_tile4(const float* img, int64_t hw, int64_t w, int64_t c, int64_t kh, int64_t kw, const float* wp,
                       const float* bias, bool relu, int64_t nb, float* out, int64_t P) {
    __m512 acc[NP][NC];
    _Pragma("GCC unroll 16") for (int p = 0; p < NP; p++)
        _Pragma("GCC unroll 4") for (int v = 0; v < NC; v++) acc[p][v] = _mm512_setzero_ps();
    const float* wk = wp;
    for (int64_t ch = 0; ch < c; ch++, img += hw)
        for (int64_t ky = 0; ky < kh; ky++) {
            const float* row = img + ky * w;
            for (int64_t kx = 0; kx < kw; kx++, wk += 16 * NC) {
                __m512 wv[NC];
                _Pragma("GCC unroll 4") for (int v = 0; v < NC; v++) wv[v] = _mm512_load_ps(wk + 16 * v);
                _Pragma("GCC unroll 16") for (int p = 0; p < NP; p++) {
                    const __m512 xv = _mm512_set1_ps(row[kx + p]);
                    _Pragma("GCC unroll 4") for (int v = 0; v < NC; v++)
                        acc[p][v] = _mm512_fmadd_ps(wv[v], xv, acc[p][v]);
                }
            }
        }
    alignas(64) float t[NP][16 * NC];
    const __m512 zero = _mm512_setzero_ps();
    _Pragma("GCC unroll 4") for (int v = 0; v < NC; v++) {
        const __m512 bv = _mm512_loadu_ps(bias + 16 * v);
        _Pragma("GCC unroll 16") for (int p = 0; p < NP; p++) {
            __m512 r = _mm512_add_ps(acc[p][v], bv);
            // (the masked form: GCC 12's _mm512_max_ps warns of its undefined pass-through)
            if (relu) r = _mm512_mask_max_ps(r, __mmask16(0xffff), r, zero);
            _mm512_store_ps(&t[p][16 * v], r);
        }
    }
    for (int64_t j = 0; j < nb; j++)
        _Pragma("GCC unroll 16") for (int p = 0; p < NP; p++) out[j * P + p] = t[p][j];
}

// One sample's output for a block of nb ≤ 16·NC channels: each output row in
// runs of equal length (at most kRun4: 24 columns are 2 runs of 12, 8 one).
template <int NC>
VELA_V4 void fwd_sample4(const ConvGeom& g, const float* img, const float* wp, int64_t nb, const float* bias,
                         bool relu, float* out) {
    const int64_t P = g.positions(), hw = g.h * g.w, oh = g.oh(), ow = g.ow();
    const int64_t runs = (ow + kRun4 - 1) / kRun4, len = (ow + runs - 1) / runs;
    for (int64_t oy = 0; oy < oh; oy++)
        for (int64_t ox = 0; ox < ow; ox += len) {
            const float* in = img + oy * g.w + ox;
            float* o = out + oy * ow + ox;
#define VELA_FWD_TILE4(NP) \
    case NP: fwd_tile4<NC, NP>(in, hw, g.w, g.c, g.kh, g.kw, wp, bias, relu, nb, o, P); break
            switch (std::min(len, ow - ox)) {
                VELA_FWD_TILE4(1); VELA_FWD_TILE4(2); VELA_FWD_TILE4(3); VELA_FWD_TILE4(4);
                VELA_FWD_TILE4(5); VELA_FWD_TILE4(6); VELA_FWD_TILE4(7); VELA_FWD_TILE4(8);
                VELA_FWD_TILE4(9); VELA_FWD_TILE4(10); VELA_FWD_TILE4(11); VELA_FWD_TILE4(12);
            }
#undef VELA_FWD_TILE4
        }
}

// The AVX-512 forward for rows of at least 16 output columns (the first conv
// of examples/cnn.lua: 24), where a run of channels would leave its tile
// through a transpose that costs as much as its 25 window offsets: vectors
// of 16 output positions in the plane's order (so each is one store into
// the plane), a vector that crosses into the next output row being two
// masked loads (the second gap = w − ow floats further on in the image). The
// tile is 8 channels (a broadcast weight each) × NV ≤ 3 such vectors; every
// output is summed over r in im2col's order from 0, then the bias, then relu:
// the AVX2 tile's operations, so the same bits.
constexpr int64_t kFwdPosBlock = 8;  // output channels per task of this tile

struct Vec16 {
    int64_t in, out;        // the first lane's input pixel (oy·w + ox) and output position
    __mmask16 first, next;  // the lanes in its first output row, and in the next
};

template <int NV>
VELA_V4 void fwd_postile(const float* img, int64_t hw, int64_t w, int64_t gap, int64_t c, int64_t kh, int64_t kw,
                         const float* wp, const Vec16* vs, int64_t nb, const float* bias, bool relu, float* out,
                         int64_t P) {
    __m512 acc[kFwdPosBlock][NV];
    _Pragma("GCC unroll 8") for (int j = 0; j < kFwdPosBlock; j++)
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) acc[j][v] = _mm512_setzero_ps();
    const float* wk = wp;
    for (int64_t ch = 0; ch < c; ch++, img += hw)
        for (int64_t ky = 0; ky < kh; ky++) {
            const float* row = img + ky * w;
            for (int64_t kx = 0; kx < kw; kx++, wk += kFwdPosBlock) {
                __m512 xv[NV];
                _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) {
                    const float* a = row + vs[v].in + kx;
                    xv[v] = _mm512_mask_loadu_ps(_mm512_maskz_loadu_ps(vs[v].first, a), vs[v].next, a + gap);
                }
                _Pragma("GCC unroll 8") for (int j = 0; j < kFwdPosBlock; j++) {
                    const __m512 wv = _mm512_set1_ps(wk[j]);
                    _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)
                        acc[j][v] = _mm512_fmadd_ps(wv, xv[v], acc[j][v]);
                }
            }
        }
    const __m512 zero = _mm512_setzero_ps();
    _Pragma("GCC unroll 8") for (int j = 0; j < kFwdPosBlock; j++) {
        if (j >= nb) break;  // constant indices only, so the accumulators stay in registers
        const __m512 bv = _mm512_set1_ps(bias[j]);
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) {
            __m512 r = _mm512_add_ps(acc[j][v], bv);
            if (relu) r = _mm512_mask_max_ps(r, __mmask16(0xffff), r, zero);
            _mm512_mask_storeu_ps(out + j * P + vs[v].out, __mmask16(vs[v].first | vs[v].next), r);
        }
    }
}

// The vectors of a geometry with ow ≥ 16 (so that a vector spans at most two rows).
std::vector<Vec16> vectors16(const ConvGeom& g) {
    std::vector<Vec16> vs;
    const int64_t P = g.positions(), ow = g.ow();
    for (int64_t p = 0; p < P; p += 16) {
        const int64_t oy = p / ow, ox = p % ow, n = std::min<int64_t>(16, P - p);
        const int64_t s = std::min(n, ow - ox);  // lanes in row oy
        const auto upto = [](int64_t k) { return __mmask16(k >= 16 ? 0xffff : (1u << k) - 1); };
        vs.push_back({oy * g.w + ox, p, upto(s), __mmask16(upto(n) & ~upto(s))});
    }
    return vs;
}

VELA_V4 void fwd_possample(const ConvGeom& g, const std::vector<Vec16>& vs, const float* img, const float* wp,
                           int64_t nb, const float* bias, bool relu, float* out) {
    const int64_t P = g.positions(), hw = g.h * g.w, V = int64_t(vs.size()), gap = g.w - g.ow();
    for (int64_t i = 0; i < V; i += 3) {
        const Vec16* v = &vs[size_t(i)];
#define VELA_FWD_POSTILE(NV) fwd_postile<NV>(img, hw, g.w, gap, g.c, g.kh, g.kw, wp, v, nb, bias, relu, out, P)
        switch (std::min<int64_t>(3, V - i)) {
            case 3: VELA_FWD_POSTILE(3); break;
            case 2: VELA_FWD_POSTILE(2); break;
            default: VELA_FWD_POSTILE(1); break;
        }
#undef VELA_FWD_POSTILE
    }
}

__attribute__((target("avx2,fma"))) inline float hsum(__m256 v) {
    alignas(32) float t[8];
    _mm256_store_ps(t, v);
    return ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
}

// One vector of 8 output positions: the two channels' dz (a0, a1) times the
// image under window columns kx0 .. kx0 + nk − 1 (x: the image row at kx0).
template <bool Masked>
__attribute__((target("avx2,fma"))) inline void wgrad_step(const float* d0, const float* d1, const float* x, __m256i m,
                                                          int64_t nk, bool with_db, __m256 (&acc)[2][5],
                                                          __m256 (&db)[2]) {
    const __m256 a0 = Masked ? _mm256_maskload_ps(d0, m) : _mm256_loadu_ps(d0);
    const __m256 a1 = Masked ? _mm256_maskload_ps(d1, m) : _mm256_loadu_ps(d1);
    if (with_db) db[0] = _mm256_add_ps(db[0], a0), db[1] = _mm256_add_ps(db[1], a1);
    _Pragma("GCC unroll 8") for (int k = 0; k < 5; k++) {
        if (k >= nk) break;
        const __m256 xv = Masked ? _mm256_maskload_ps(x + k, m) : _mm256_loadu_ps(x + k);
        acc[0][k] = _mm256_fmadd_ps(a0, xv, acc[0][k]);
        acc[1][k] = _mm256_fmadd_ps(a1, xv, acc[1][k]);
    }
}

// conv_wgrad's fast path for channels o0, o0 + 1 (nb of them) over samples
// [n0, n1): part(j, r) ← Σ dz(o0 + j, position) · window_r, dbp(j) ← Σ dz.
// Each block of window offsets (ky, kx0 .. kx0 + 4) keeps 2 × 5 accumulators;
// a sample's dz and image are read for all the blocks in turn (their sums
// kept in st between samples), so each sample's dz comes from memory once and
// then from L1, not once per window row from L2. Each accumulator sees the
// same products in the same order (samples, then positions) as with the
// blocks outermost: the same sums.
__attribute__((target("avx2,fma"))) void wgrad_block(const ConvGeom& g, const Plane& X, const Plane& D, int64_t o0,
                                                    int64_t nb, int64_t n0, int64_t n1, float* part, float* dbp) {
    const int64_t oh = g.oh(), ow = g.ow(), P = oh * ow, R = g.kh * g.kw;
    const int64_t kb = (g.kw + 4) / 5, blocks = g.kh * kb;
    std::vector<float> st(size_t(blocks * 80), 0.0f);  // block b's 2 × 5 accumulators at 80·b
    __m256 db[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    const __m256i all = lanes(8), tail = lanes(ow % 8);
    for (int64_t n = n0; n < n1; n++) {
        const float* img = &X.at(0, n);
        const float* d0 = &D.at(o0 * P, n);
        const float* d1 = nb > 1 ? d0 + P : d0;
        for (int64_t b = 0; b < blocks; b++) {
            const int64_t ky = b / kb, kx0 = (b % kb) * 5, nk = std::min<int64_t>(5, g.kw - kx0);
            float* s = &st[size_t(b * 80)];
            __m256 acc[2][5];
            _Pragma("GCC unroll 8") for (int j = 0; j < 2; j++)
                _Pragma("GCC unroll 8") for (int k = 0; k < 5; k++) acc[j][k] = _mm256_loadu_ps(s + 8 * (j * 5 + k));
            const bool with_db = b == 0;
            for (int64_t oy = 0; oy < oh; oy++) {
                const float* row = img + (oy + ky) * g.w + kx0;
                const float* e0 = d0 + oy * ow;
                const float* e1 = d1 + oy * ow;
                int64_t ox = 0;
                for (; ox + 8 <= ow; ox += 8) wgrad_step<false>(e0 + ox, e1 + ox, row + ox, all, nk, with_db, acc, db);
                if (ox < ow) wgrad_step<true>(e0 + ox, e1 + ox, row + ox, tail, nk, with_db, acc, db);
            }
            _Pragma("GCC unroll 8") for (int j = 0; j < 2; j++)
                _Pragma("GCC unroll 8") for (int k = 0; k < 5; k++) _mm256_storeu_ps(s + 8 * (j * 5 + k), acc[j][k]);
        }
    }
    for (int64_t b = 0; b < blocks; b++) {
        const int64_t ky = b / kb, kx0 = (b % kb) * 5, nk = std::min<int64_t>(5, g.kw - kx0);
        for (int64_t j = 0; j < nb; j++)
            for (int64_t k = 0; k < nk; k++) part[j * R + ky * g.kw + kx0 + k] = hsum(_mm256_loadu_ps(&st[size_t(b * 80 + 8 * (j * 5 + k))]));
    }
    for (int64_t j = 0; j < nb; j++) dbp[j] = hsum(db[j]);
}

// conv_wgrad's one-channel tile on AVX-512 with the AVX2 tile's sums
// (wgrad_block's): each vector holds two channels' 8-lane accumulators side
// by side, so every lane sums the same products in the same order as there
// (a row's runs of 8 columns, the rows, the samples of the chunk) and the
// halves are added by hsum's tree: the same bits. 8 channels × 5 window
// columns are 20 vectors; each run of 8 positions loads 4 pairs of dz runs
// (two 256-bit loads each) and the 5 image runs (each broadcast to both
// halves) for 20 FMAs. As wgrad_block, a sample's dz (8 planes, 18 KB at the
// first conv) is read for every block of window offsets in turn, the blocks'
// sums kept in st between samples.
template <bool Masked>
VELA_V4 inline void wgrad_step8(const float* const (&e)[8], int64_t ox, const float* x, __mmask8 m, int64_t nk,
                                bool with_db, __m512 (&acc)[4][5], __m512 (&db)[4]) {
    __m512 a[4];
    _Pragma("GCC unroll 4") for (int p = 0; p < 4; p++) {
        const __m256 lo = Masked ? _mm256_maskz_loadu_ps(m, e[2 * p] + ox) : _mm256_loadu_ps(e[2 * p] + ox);
        const __m256 hi = Masked ? _mm256_maskz_loadu_ps(m, e[2 * p + 1] + ox) : _mm256_loadu_ps(e[2 * p + 1] + ox);
        a[p] = _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
        if (with_db) db[p] = _mm512_add_ps(db[p], a[p]);
    }
    _Pragma("GCC unroll 5") for (int k = 0; k < 5; k++) {
        if (k >= nk) break;
        const __m256 xr = Masked ? _mm256_maskz_loadu_ps(m, x + k) : _mm256_loadu_ps(x + k);
        // both halves xr (as _mm512_broadcast_f32x8, whose GCC 12 header warns of an undefined pass-through)
        const __m512 xv = _mm512_insertf32x8(_mm512_castps256_ps512(xr), xr, 1);
        _Pragma("GCC unroll 4") for (int p = 0; p < 4; p++) acc[p][k] = _mm512_fmadd_ps(a[p], xv, acc[p][k]);
    }
}

// 8 lanes added as hsum adds them.
inline float hsum8(const float* t) { return ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7])); }

VELA_V4 void wgrad_block8(const ConvGeom& g, const Plane& X, const Plane& D, int64_t o0, int64_t nb, int64_t n0,
                          int64_t n1, float* part, float* dbp) {
    const int64_t oh = g.oh(), ow = g.ow(), P = oh * ow, R = g.kh * g.kw;
    const int64_t kb = (g.kw + 4) / 5, blocks = g.kh * kb;
    std::vector<float> st(size_t(blocks * 320), 0.0f);  // block b's 4 × 5 accumulators at 320·b
    __m512 db[4];
    _Pragma("GCC unroll 4") for (int p = 0; p < 4; p++) db[p] = _mm512_setzero_ps();
    const __mmask8 tail = __mmask8((1u << (ow % 8)) - 1);
    for (int64_t n = n0; n < n1; n++) {
        const float* img = &X.at(0, n);
        const float* d[8];
        _Pragma("GCC unroll 8") for (int j = 0; j < 8; j++) d[j] = &D.at((o0 + std::min<int64_t>(j, nb - 1)) * P, n);
        for (int64_t b = 0; b < blocks; b++) {
            const int64_t ky = b / kb, kx0 = (b % kb) * 5, nk = std::min<int64_t>(5, g.kw - kx0);
            float* s = &st[size_t(b * 320)];
            __m512 acc[4][5];
            _Pragma("GCC unroll 4") for (int p = 0; p < 4; p++)
                _Pragma("GCC unroll 5") for (int k = 0; k < 5; k++) acc[p][k] = _mm512_loadu_ps(s + 16 * (p * 5 + k));
            const bool with_db = b == 0;
            for (int64_t oy = 0; oy < oh; oy++) {
                const float* row = img + (oy + ky) * g.w + kx0;
                const float* e[8];
                _Pragma("GCC unroll 8") for (int j = 0; j < 8; j++) e[j] = d[j] + oy * ow;
                int64_t ox = 0;
                for (; ox + 8 <= ow; ox += 8) wgrad_step8<false>(e, ox, row + ox, tail, nk, with_db, acc, db);
                if (ox < ow) wgrad_step8<true>(e, ox, row + ox, tail, nk, with_db, acc, db);
            }
            _Pragma("GCC unroll 4") for (int p = 0; p < 4; p++)
                _Pragma("GCC unroll 5") for (int k = 0; k < 5; k++) _mm512_storeu_ps(s + 16 * (p * 5 + k), acc[p][k]);
        }
    }
    for (int64_t b = 0; b < blocks; b++) {
        const int64_t ky = b / kb, kx0 = (b % kb) * 5, nk = std::min<int64_t>(5, g.kw - kx0);
        for (int64_t j = 0; j < nb; j++)
            for (int64_t k = 0; k < nk; k++)
                part[j * R + ky * g.kw + kx0 + k] = hsum8(&st[size_t(b * 320 + 16 * ((j / 2) * 5 + k) + 8 * (j % 2))]);
    }
    alignas(64) float t[64];
    _Pragma("GCC unroll 4") for (int p = 0; p < 4; p++) _mm512_store_ps(t + 16 * p, db[p]);
    for (int64_t j = 0; j < nb; j++) dbp[j] = hsum8(t + 16 * (j / 2) + 8 * (j % 2));
}

// conv_wgrad's fast path for several input channels, over a chunk of m
// samples: dp the chunk's dz for output channels [o0, o0 + 16), moved to
// [sample][position][16 channels] (64-byte aligned, so each position's two
// vectors are one cache line, and the block is read in order), xp one input
// channel ch's m planes (h·w each, contiguous). For one window row ky, the KW
// ≤ 5 window columns × 2 vectors of 8 channels are 10 accumulators; each
// position adds its two dz vectors times the KW pixels under it (broadcast),
// so no horizontal sums: part(o, r) ← the chunk's sum, in the order of the
// samples and positions.
template <int KW>
__attribute__((target("avx2,fma"))) void wgrad_rows(const ConvGeom& g, const float* xp, const float* dp, int64_t m,
                                                   int64_t out, int64_t o0, int64_t ch, int64_t ky, float* part) {
    const int64_t oh = g.oh(), ow = g.ow(), R = g.patch(), hw = g.h * g.w, w = g.w;
    __m256 acc[KW][2];
    _Pragma("GCC unroll 8") for (int k = 0; k < KW; k++) acc[k][0] = acc[k][1] = _mm256_setzero_ps();
    const float* d = dp;
    for (int64_t n = 0; n < m; n++) {
        const float* img = xp + n * hw + ky * w;
        for (int64_t oy = 0; oy < oh; oy++, img += w)
            for (int64_t ox = 0; ox < ow; ox++, d += 16) {
                const __m256 a0 = _mm256_load_ps(d), a1 = _mm256_load_ps(d + 8);
                _Pragma("GCC unroll 8") for (int k = 0; k < KW; k++) {
                    const __m256 xv = _mm256_broadcast_ss(img + ox + k);
                    acc[k][0] = _mm256_fmadd_ps(xv, a0, acc[k][0]);
                    acc[k][1] = _mm256_fmadd_ps(xv, a1, acc[k][1]);
                }
            }
    }
    alignas(32) float t[16];
    _Pragma("GCC unroll 8") for (int k = 0; k < KW; k++) {
        _mm256_store_ps(t, acc[k][0]);
        _mm256_store_ps(t + 8, acc[k][1]);
        const int64_t r = (ch * g.kh + ky) * g.kw + k;
        for (int64_t j = 0; j < 16 && o0 + j < out; j++) part[(o0 + j) * R + r] = t[j];
    }
}

// wgrad_rows on AVX-512 (isa() == v4): NV ≤ 4 blocks of 16 channels at once,
// one vector each (dp: the first block; the others m·P·16 floats apart), so
// each position loads NV vectors of dz and KW broadcast pixels for KW·NV
// FMAs (20 at the second conv: 64 channels). Each lane sums the same
// products in the same order as wgrad_rows's (samples, then positions): the
// same bits.
template <int KW, int NV>
VELA_V4 void wgrad_rows4(const ConvGeom& g, const float* xp, const float* dp, int64_t m, int64_t out, int64_t o0,
                         int64_t ch, int64_t ky, float* part) {
    const int64_t oh = g.oh(), ow = g.ow(), P = oh * ow, R = g.patch(), hw = g.h * g.w, w = g.w;
    const int64_t bs = m * P * 16;  // one block of 16 channels
    __m512 acc[KW][NV];
    _Pragma("GCC unroll 8") for (int k = 0; k < KW; k++)
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) acc[k][v] = _mm512_setzero_ps();
    const float* d = dp;
    for (int64_t n = 0; n < m; n++) {
        const float* img = xp + n * hw + ky * w;
        for (int64_t oy = 0; oy < oh; oy++, img += w)
            for (int64_t ox = 0; ox < ow; ox++, d += 16) {
                __m512 a[NV];
                _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) a[v] = _mm512_load_ps(d + v * bs);
                _Pragma("GCC unroll 8") for (int k = 0; k < KW; k++) {
                    const __m512 xv = _mm512_set1_ps(img[ox + k]);
                    _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) acc[k][v] = _mm512_fmadd_ps(xv, a[v], acc[k][v]);
                }
            }
    }
    alignas(64) float t[16];
    _Pragma("GCC unroll 8") for (int k = 0; k < KW; k++)
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) {
            _mm512_store_ps(t, acc[k][v]);
            const int64_t r = (ch * g.kh + ky) * g.kw + k, ob = o0 + 16 * v;
            for (int64_t j = 0; j < 16 && ob + j < out; j++) part[(ob + j) * R + r] = t[j];
        }
}

template <int KW>
VELA_V4 void wgrad_rows4_for(int64_t nv, const ConvGeom& g, const float* xp, const float* dp, int64_t m, int64_t out,
                             int64_t o0, int64_t ch, int64_t ky, float* part) {
    switch (nv) {
        case 1: return wgrad_rows4<KW, 1>(g, xp, dp, m, out, o0, ch, ky, part);
        case 2: return wgrad_rows4<KW, 2>(g, xp, dp, m, out, o0, ch, ky, part);
        case 3: return wgrad_rows4<KW, 3>(g, xp, dp, m, out, o0, ch, ky, part);
        default: return wgrad_rows4<KW, 4>(g, xp, dp, m, out, o0, ch, ky, part);
    }
}

// 8 channels' dz planes of one sample (src, P floats each, P apart) moved to
// d[p·16 + j] (channel j of 8, position p), 8 positions at a time through an
// 8×8 transpose in registers; db[j] += the plane's sum, summed from 0 in
// position order (each lane one channel's running sum).
__attribute__((target("avx2,fma"))) void move_block(const float* src, int64_t P, float* d, float* db) {
    __m256 s = _mm256_setzero_ps();
    int64_t p = 0;
    for (; p + 8 <= P; p += 8) {
        __m256 r[8], u[8], v[8];
        _Pragma("GCC unroll 8") for (int j = 0; j < 8; j++) r[j] = _mm256_loadu_ps(src + j * P + p);
        _Pragma("GCC unroll 4") for (int j = 0; j < 8; j += 2) {
            u[j] = _mm256_unpacklo_ps(r[j], r[j + 1]);
            u[j + 1] = _mm256_unpackhi_ps(r[j], r[j + 1]);
        }
        _Pragma("GCC unroll 2") for (int j = 0; j < 8; j += 4) {
            v[j] = _mm256_shuffle_ps(u[j], u[j + 2], _MM_SHUFFLE(1, 0, 1, 0));
            v[j + 1] = _mm256_shuffle_ps(u[j], u[j + 2], _MM_SHUFFLE(3, 2, 3, 2));
            v[j + 2] = _mm256_shuffle_ps(u[j + 1], u[j + 3], _MM_SHUFFLE(1, 0, 1, 0));
            v[j + 3] = _mm256_shuffle_ps(u[j + 1], u[j + 3], _MM_SHUFFLE(3, 2, 3, 2));
        }
        // position i of the 8: v[i % 4] (rows 0–3) and v[4 + i % 4] (rows 4–7), lanes i / 4
        _Pragma("GCC unroll 8") for (int i = 0; i < 8; i++) {
            const __m256 t = i < 4 ? _mm256_permute2f128_ps(v[i], v[i + 4], 0x20)
                                   : _mm256_permute2f128_ps(v[i - 4], v[i], 0x31);
            _mm256_store_ps(d + (p + i) * 16, t);
            s = _mm256_add_ps(s, t);
        }
    }
    alignas(32) float t[8];
    _mm256_store_ps(t, s);
    for (int64_t j = 0; j < 8; j++) {
        float sj = t[j];
        for (int64_t q = p; q < P; q++) d[q * 16 + j] = src[j * P + q], sj += src[j * P + q];
        db[j] += sj;
    }
}

// Several input channels (kw ≤ 5, out a multiple of 16): per chunk of
// samples, dz moved to blocks of 16 channels, [block][sample][position][16],
// and each input channel's planes copied contiguous (in place the samples'
// planes lie 16–18 KB apart and share a few cache sets), then wgrad_rows;
// db from the moved dz.
void wgrad_chunk(const ConvGeom& g, const Plane& X, const Plane& D, int64_t out, int64_t n0, int64_t n1, float* part,
                 float* dbp) {
    const int64_t m = n1 - n0, P = g.positions(), hw = g.h * g.w;
    Scratch dbuf(0, size_t(m * P * out)), xbuf(1, size_t(m * hw));
    float* const dp = dbuf.p;
    float* const xp = xbuf.p;
    for (int64_t n = 0; n < m; n++)
        for (int64_t o = 0; o < out; o += 8)
            move_block(&D.at(o * P, n0 + n), P, dp + ((o / 16 * m + n) * P) * 16 + o % 16, dbp + o);
    for (int64_t ch = 0; ch < g.c; ch++) {
        for (int64_t n = 0; n < m; n++) std::copy_n(&X.at(ch * hw, n0 + n), hw, xp + n * hw);
        if (isa() == Isa::v4) {
            for (int64_t o0 = 0; o0 < out; o0 += 64) {
                const float* d = dp + o0 * m * P;
                const int64_t nv = std::min<int64_t>(4, (out - o0) / 16);
                for (int64_t ky = 0; ky < g.kh; ky++) {
#define VELA_WGRAD_ROWS4(KW) wgrad_rows4_for<KW>(nv, g, xp, d, m, out, o0, ch, ky, part)
                    switch (g.kw) {
                        case 1: VELA_WGRAD_ROWS4(1); break;
                        case 2: VELA_WGRAD_ROWS4(2); break;
                        case 3: VELA_WGRAD_ROWS4(3); break;
                        case 4: VELA_WGRAD_ROWS4(4); break;
                        default: VELA_WGRAD_ROWS4(5); break;
                    }
#undef VELA_WGRAD_ROWS4
                }
            }
            continue;
        }
        for (int64_t o0 = 0; o0 < out; o0 += 16) {
            const float* d = dp + o0 * m * P;
            for (int64_t ky = 0; ky < g.kh; ky++) {
#define VELA_WGRAD_ROWS(KW) wgrad_rows<KW>(g, xp, d, m, out, o0, ch, ky, part)
                switch (g.kw) {
                    case 1: VELA_WGRAD_ROWS(1); break;
                    case 2: VELA_WGRAD_ROWS(2); break;
                    case 3: VELA_WGRAD_ROWS(3); break;
                    case 4: VELA_WGRAD_ROWS(4); break;
                    default: VELA_WGRAD_ROWS(5); break;
                }
#undef VELA_WGRAD_ROWS
            }
        }
    }
}

}  // namespace

void CpuDevice::conv(const ConvGeom& g, const Matrix& x, const Matrix& w, const Matrix& b, Act act, const Matrix& y) {
    Timed t(this, Kernel::conv);
    const int64_t out = w.rows, R = g.patch(), P = g.positions(), N = x.cols, oh = g.oh(), ow = g.ow();
    const Plane X = plane(x), W = plane(w), Y = plane(y);
    std::vector<float> bias(size_t(out) + kFwdBlock4, 0.0f);  // zeros past out: a whole block's lanes
    if (b.buf) {
        const float* bp = fptr(b);
        for (int64_t o = 0; o < out; o++) bias[size_t(o)] = bp[o * b.inc()];
    }
    const bool fused_relu = act == Act::relu;
    const Unary after = act == Act::identity || fused_relu ? Unary::count_ : act_unary(act);
    auto finish = [&](int64_t o, int64_t n) {  // an activation other than relu, on one output plane
        if (after == Unary::count_) return;
        float* p = &Y.at(o * P, n);
        if (Y.rs == 1) return unary_run_at(isa(), after, p, p, P, nullptr);
        for (int64_t q = 0; q < P; q++) unary_run_at(isa(), after, p + q * Y.rs, p + q * Y.rs, 1, nullptr);
    };
    // Every (sample, block of `block` output channels) on the pool, each taking
    // P·R·block/lanes vector FMAs (for the grain): tile(n, k, o0, nb) writes
    // block k's nb planes of sample n, then the activation other than relu.
    auto each_block = [&](int64_t block, int64_t lanes, auto&& tile) {
        const int64_t blocks = (out + block - 1) / block;
        const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(1, P * R * block / lanes));
        parallel_for(N * blocks, grain, [&](int64_t b0, int64_t e) {
            for (int64_t q = b0; q < e; q++) {
                const int64_t n = q / blocks, k = q % blocks, o0 = k * block, nb = std::min(block, out - o0);
                tile(n, k, o0, nb);
                for (int64_t o = o0; o < o0 + nb; o++) finish(o, n);
            }
        });
    };
    // The weights by block of `block` channels, `block` per window offset, zeros past out.
    auto by_block = [&](int64_t block) {
        const int64_t blocks = (out + block - 1) / block;
        std::vector<float> wp(size_t(blocks * R * block), 0.0f);
        for (int64_t o = 0; o < out; o++)
            for (int64_t r = 0; r < R; r++) wp[size_t(((o / block) * R + r) * block + o % block)] = W.at(o, r);
        return wp;
    };
    if (fast_geometry(g, X, Y, false) && isa() == Isa::v4 && ow >= 16) {
        const std::vector<Vec16> vs = vectors16(g);
        const std::vector<float> wp = by_block(kFwdPosBlock);
        each_block(kFwdPosBlock, 16, [&](int64_t n, int64_t k, int64_t o0, int64_t nb) {
            fwd_possample(g, vs, &X.at(0, n), &wp[size_t(k * R * kFwdPosBlock)], nb, &bias[size_t(o0)], fused_relu,
                          &Y.at(o0 * P, n));
        });
        return;
    }
    if (fast_geometry(g, X, Y, false) && isa() == Isa::v4) {
        // The weights by block of 32 channels (16 in a last block of ≤ 16),
        // [r][channel of the block], zeros past out; blocks R·32 floats apart.
        const int64_t blocks = (out + kFwdBlock4 - 1) / kFwdBlock4;
        const auto width = [&](int64_t k) { return out - k * kFwdBlock4 <= 16 ? int64_t(16) : kFwdBlock4; };
        Aligned wp(size_t(blocks * R * kFwdBlock4));
        std::fill_n(wp.p, blocks * R * kFwdBlock4, 0.0f);
        for (int64_t o = 0; o < out; o++) {
            const int64_t k = o / kFwdBlock4, wd = width(k);
            for (int64_t r = 0; r < R; r++) wp.p[(k * R * kFwdBlock4) + r * wd + o % kFwdBlock4] = W.at(o, r);
        }
        each_block(kFwdBlock4, 16, [&](int64_t n, int64_t k, int64_t o0, int64_t nb) {
            const float* wk = wp.p + k * R * kFwdBlock4;
            if (width(k) == 16) fwd_sample4<1>(g, &X.at(0, n), wk, nb, &bias[size_t(o0)], fused_relu, &Y.at(o0 * P, n));
            else fwd_sample4<2>(g, &X.at(0, n), wk, nb, &bias[size_t(o0)], fused_relu, &Y.at(o0 * P, n));
        });
        return;
    }
    if (fast_geometry(g, X, Y, false)) {
        const std::vector<Seg> sg = segments(g);
        const std::vector<float> wp = by_block(kFwdBlock);
        each_block(kFwdBlock, 8, [&](int64_t n, int64_t k, int64_t o0, int64_t nb) {
            fwd_sample(g, sg, &X.at(0, n), &wp[size_t(k * R * kFwdBlock)], nb, &bias[size_t(o0)], fused_relu,
                       &Y.at(o0 * P, n));
        });
        return;
    }
    // Any geometry: each output plane summed over the window offsets in turn,
    // a row of output columns at a time (loops the compiler vectorises).
    const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(1, P * R));
    parallel_for(N * out, grain, [&](int64_t b0, int64_t e) {
        std::vector<float> acc(static_cast<size_t>(P));
        for (int64_t q = b0; q < e; q++) {
            const int64_t n = q / out, o = q % out;
            const float* img = &X.at(0, n);
            std::fill(acc.begin(), acc.end(), 0.0f);
            for (int64_t r = 0; r < R; r++) {
                const float wr = W.at(o, r);
                const int64_t c = r / (g.kh * g.kw), ky = r / g.kw % g.kh, kx = r % g.kw;
                for (int64_t oy = 0; oy < oh; oy++) {
                    const int64_t iy = oy * g.sh - g.ph + ky;
                    if (iy < 0 || iy >= g.h) continue;
                    const float* row = img + (c * g.h + iy) * g.w * X.rs;
                    float* a = &acc[size_t(oy * ow)];
                    if (g.sw == 1 && g.pw == 0 && X.rs == 1) {
                        const float* s = row + kx;
                        for (int64_t ox = 0; ox < ow; ox++) a[ox] += wr * s[ox];
                        continue;
                    }
                    for (int64_t ox = 0; ox < ow; ox++) {
                        const int64_t ix = ox * g.sw - g.pw + kx;
                        if (ix >= 0 && ix < g.w) a[ox] += wr * row[ix * X.rs];
                    }
                }
            }
            for (int64_t p = 0; p < P; p++) {
                float v = acc[size_t(p)] + bias[size_t(o)];
                if (fused_relu) v = std::max(v, 0.0f);
                Y.at(o * P + p, n) = v;
            }
            finish(o, n);
        }
    });
}

void CpuDevice::conv_wgrad(const ConvGeom& g, const Matrix& x, const Matrix& dz, const Matrix& dw, const Matrix& db) {
    Timed t(this, Kernel::conv_wgrad);
    const int64_t out = dw.rows, R = g.patch(), P = g.positions(), N = x.cols, oh = g.oh(), ow = g.ow();
    const Plane X = plane(x), D = plane(dz), DW = plane(dw);
    const bool many = g.c > 1 && g.kw <= 5 && out % 16 == 0 && fast_geometry(g, X, D, false);
    const int64_t chunk = many ? kChunkMany : kChunk;
    const int64_t chunks = std::max<int64_t>(1, (N + chunk - 1) / chunk);
    // part(q, o, r) and dbp(q, o): chunk q's own sums.
    std::vector<float> part(size_t(chunks * out * R), 0.0f), dbp(size_t(chunks * out), 0.0f);
    if (N > 0 && many) {
        parallel_for(chunks, 1, [&](int64_t b0, int64_t e) {
            for (int64_t c = b0; c < e; c++)
                wgrad_chunk(g, X, D, out, c * chunk, std::min(N, (c + 1) * chunk), &part[size_t(c * out * R)],
                            &dbp[size_t(c * out)]);
        });
    } else if (N > 0 && fast_geometry(g, X, D) && isa() == Isa::v4) {
        const int64_t octs = (out + 7) / 8;
        const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(1, kChunk * P * R));
        parallel_for(chunks * octs, grain, [&](int64_t b0, int64_t e) {
            for (int64_t q = b0; q < e; q++) {
                const int64_t c = q / octs, o0 = (q % octs) * 8, nb = std::min<int64_t>(8, out - o0);
                const int64_t n0 = c * kChunk, n1 = std::min(N, n0 + kChunk);
                wgrad_block8(g, X, D, o0, nb, n0, n1, &part[size_t((c * out + o0) * R)], &dbp[size_t(c * out + o0)]);
            }
        });
    } else if (N > 0 && fast_geometry(g, X, D)) {
        const int64_t pairs = (out + 1) / 2;
        const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(1, kChunk * P * R / 4));
        parallel_for(chunks * pairs, grain, [&](int64_t b0, int64_t e) {
            for (int64_t q = b0; q < e; q++) {
                const int64_t c = q / pairs, o0 = (q % pairs) * 2, nb = std::min<int64_t>(2, out - o0);
                const int64_t n0 = c * kChunk, n1 = std::min(N, n0 + kChunk);
                wgrad_block(g, X, D, o0, nb, n0, n1, &part[size_t((c * out + o0) * R)], &dbp[size_t(c * out + o0)]);
            }
        });
    } else if (N > 0) {
        const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(1, kChunk * P * R));
        parallel_for(chunks * out, grain, [&](int64_t b0, int64_t e) {
            for (int64_t q = b0; q < e; q++) {
                const int64_t c = q / out, o = q % out;
                const int64_t n0 = c * kChunk, n1 = std::min(N, n0 + kChunk);
                float* pr = &part[size_t((c * out + o) * R)];
                float sb = 0.0f;
                for (int64_t n = n0; n < n1; n++) {
                    const float* img = &X.at(0, n);
                    const float* d = &D.at(o * P, n);
                    for (int64_t p = 0; p < P; p++) sb += d[p * D.rs];
                    for (int64_t r = 0; r < R; r++) {
                        const int64_t ch = r / (g.kh * g.kw), ky = r / g.kw % g.kh, kx = r % g.kw;
                        float s = 0.0f;
                        for (int64_t oy = 0; oy < oh; oy++) {
                            const int64_t iy = oy * g.sh - g.ph + ky;
                            if (iy < 0 || iy >= g.h) continue;
                            const float* row = img + (ch * g.h + iy) * g.w * X.rs;
                            for (int64_t ox = 0; ox < ow; ox++) {
                                const int64_t ix = ox * g.sw - g.pw + kx;
                                if (ix >= 0 && ix < g.w) s += d[(oy * ow + ox) * D.rs] * row[ix * X.rs];
                            }
                        }
                        pr[r] += s;
                    }
                }
                dbp[size_t(c * out + o)] = sb;
            }
        });
    }
    // The chunks' sums in chunk order (from 0.0f, as one running sum), each
    // output channel's row on one thread, the row's columns side by side.
    parallel_for(out, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, chunks * R)), [&](int64_t b0, int64_t e) {
        std::vector<float> s(static_cast<size_t>(R));
        for (int64_t o = b0; o < e; o++) {
            std::fill(s.begin(), s.end(), 0.0f);
            for (int64_t c = 0; c < chunks; c++) {
                const float* pr = &part[size_t((c * out + o) * R)];
                for (int64_t r = 0; r < R; r++) s[size_t(r)] += pr[r];
            }
            for (int64_t r = 0; r < R; r++) DW.at(o, r) = s[size_t(r)];
            if (db.buf) {
                float sb = 0.0f;
                for (int64_t c = 0; c < chunks; c++) sb += dbp[size_t(c * out + o)];
                fptr(db)[o * db.inc()] = sb;
            }
        }
    });
}

}  // namespace vela::cpu

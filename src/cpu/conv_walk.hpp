// The walks the CPU's convolution and pooling kernels share (src/cpu/conv.cpp,
// src/cpu/pooling.cpp): a view as a 2-D plane, the loop over (channel, sample)
// pairs, and the walk over a pooling window's outputs with the image span
// under each.
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <memory>

#include "core/conv.hpp"
#include "cpu/cpu_kernels.hpp"

namespace vela::cpu::convwalk {

// A 2-D walk over a view: element (i, j) at p[i·rs + j·cs].
struct Plane {
    float* p;
    int64_t rs, cs;
    float& at(int64_t i, int64_t j) const { return p[i * rs + j * cs]; }
};
inline Plane plane(const Matrix& m) { return {fptr(m), m.row_step(), m.col_step()}; }

// A float buffer whose data starts on a 64-byte boundary (not zeroed: every
// float is written before it is read).
struct Aligned {
    std::unique_ptr<float[]> v;
    float* p = nullptr;
    Aligned() = default;
    explicit Aligned(size_t n) : v(new float[n + 16]) {
        const auto a = reinterpret_cast<uintptr_t>(v.get());
        p = v.get() + ((64 - a % 64) % 64) / sizeof(float);
    }
};

// n floats, 64-byte aligned, not zeroed, for the direct convolution's copies
// (conv_wgrad's moved dz and planes, conv_dgrad's dz per group and dx rows).
// Up to kScratchKeep floats they are this thread's buffer `slot` (0 or 1),
// kept from call to call and grown when short: a fresh buffer per piece
// (256 KB at the second conv's conv_wgrad) came from mmap each time and had
// its pages faulted in again, ~8% of the call. Larger ones are the object's
// own, freed with it, so that a large layer's buffers are not held for the
// process's life. Two objects alive at once on a thread take different slots.
constexpr size_t kScratchKeep = size_t(1) << 20;  // 4 MB a slot

class Scratch {
  public:
    Scratch(int slot, size_t n) {
        if (n > kScratchKeep) {
            own_ = Aligned(n);
            p = own_.p;
            return;
        }
        thread_local Aligned buf[2];
        thread_local size_t size[2] = {0, 0};
        if (size[slot] < n) buf[slot] = Aligned(n), size[slot] = n;
        p = buf[slot].p;
    }
    float* p;

  private:
    Aligned own_;
};

// Lane masks for the first `left` lanes of 8 (all when left ≥ 8): the direct
// convolution's masked runs (conv_direct.cpp, conv_dgrad.cpp).
__attribute__((target("avx2,fma"))) inline __m256i lanes(int64_t left) {
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(int(std::min<int64_t>(left, 8))), idx);
}

// Runs f(c, n) for every (channel, sample) pair, in parallel, each pair
// carrying `work` elements (for the grain).
template <class F>
void per_channel(int64_t channels, int64_t samples, int64_t work, F&& f) {
    const int64_t grain = work >= kGrain ? 1 : kGrain / std::max<int64_t>(work, 1);
    parallel_for(channels * samples, grain, [&](int64_t b, int64_t e) {
        for (int64_t t = b; t < e; t++) f(t % channels, t / channels);
    });
}

// The image rows (or columns) [lo, hi) under the pooling window at output
// position o along one axis: start o·stride − pad, clipped to the image
// (padding holds nothing to pool).
struct Span {
    int64_t lo, hi;
};
inline Span window_span(int64_t o, int64_t stride, int64_t pad, int64_t k, int64_t size) {
    const int64_t start = o * stride - pad;
    return {std::max<int64_t>(start, 0), std::min(start + k, size)};
}

// Runs f(o, ys, xs) for every output position o = oy·ow + ox of one pooled
// plane, with the image rows ys and columns xs under its window.
template <class F>
void for_each_window(const ConvGeom& g, F&& f) {
    const int64_t oh = g.oh(), ow = g.ow();
    for (int64_t oy = 0; oy < oh; oy++) {
        const Span ys = window_span(oy, g.sh, g.ph, g.kh, g.h);
        for (int64_t ox = 0; ox < ow; ox++) f(oy * ow + ox, ys, window_span(ox, g.sw, g.pw, g.kw, g.w));
    }
}

}  // namespace vela::cpu::convwalk

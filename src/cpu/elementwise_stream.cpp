// Non-temporal stores for the large outputs of the elementwise loops (isa.hpp).
// A store to a line not in cache first reads it (the read for ownership): a
// 16M-float add moves 16 bytes per element instead of 12, and the line then
// displaces others on its way back. Streaming stores skip both; measured on the
// 2-vCPU EPYC (AVX2), a 16M-float add went from 13-15 to 24-26 GB per
// cpu-second in a plain C++ loop (docs/results.md, "Elementwise beside NumPy and
// PyTorch"). Only for outputs larger than the caches would keep anyway: a
// smaller result is usually read again soon, and streaming it would evict it.
#include <immintrin.h>

#include <atomic>
#include <cstdint>

#include "cpu/isa.hpp"

namespace vela::cpu {

namespace {

std::atomic<int64_t> g_stream_min{int64_t(8) << 20};  // floats: 32 MiB of output

// d ← s, with streaming stores from the first d aligned to a full vector; the
// head and tail (at most a vector each) as plain stores. s is any float pointer.
__attribute__((target("avx512f"))) void copy_v4(const float* s, float* d, int64_t n) {
    int64_t i = 0;
    for (; i < n && (reinterpret_cast<uintptr_t>(d + i) & 63); i++) d[i] = s[i];
    for (; i + 16 <= n; i += 16) _mm512_stream_ps(d + i, _mm512_loadu_ps(s + i));
    for (; i < n; i++) d[i] = s[i];
}

__attribute__((target("avx2"))) void copy_v3(const float* s, float* d, int64_t n) {
    int64_t i = 0;
    for (; i < n && (reinterpret_cast<uintptr_t>(d + i) & 31); i++) d[i] = s[i];
    for (; i + 8 <= n; i += 8) _mm256_stream_ps(d + i, _mm256_loadu_ps(s + i));
    for (; i < n; i++) d[i] = s[i];
}

void copy_base(const float* s, float* d, int64_t n) {
    int64_t i = 0;
    for (; i < n && (reinterpret_cast<uintptr_t>(d + i) & 15); i++) d[i] = s[i];
    for (; i + 4 <= n; i += 4) _mm_stream_ps(d + i, _mm_loadu_ps(s + i));
    for (; i < n; i++) d[i] = s[i];
}

}  // namespace

int64_t stream_min() { return g_stream_min.load(std::memory_order_relaxed); }

int64_t set_stream_min(int64_t floats) { return g_stream_min.exchange(floats); }

void stream_copy(Isa isa, const float* src, float* dst, int64_t n) {
    switch (isa) {
        case Isa::v4: return copy_v4(src, dst, n);
        case Isa::v3: return copy_v3(src, dst, n);
        case Isa::base: break;
    }
    copy_base(src, dst, n);
}

void stream_fence() { _mm_sfence(); }

}  // namespace vela::cpu

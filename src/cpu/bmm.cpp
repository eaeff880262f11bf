// The strided batched product on the CPU (core/ops_bmm.cpp checks it): one
// OpenBLAS sgemm per block through mm_plain (CpuDevice::mm untimed). Blocks of at least the pool's
// split size (mm_plain's rule, blas.cpp) run one after another, each cut across
// the threads as mm cuts it; smaller blocks are handed out to the threads in
// runs of about that many flops, each block whole on one thread (so mm never
// nests the pool).
#include <algorithm>

#include "cpu/cpu_kernels.hpp"
#include "cpu/pool.hpp"

namespace vela::cpu {

void CpuDevice::bmm(float alpha, const Matrix& a, int64_t sa, const Matrix& b, int64_t sb, float beta, const Matrix& c,
         int64_t sc, int64_t count) {
    Timed t(this, Kernel::bmm);
    constexpr double kSplitFlops = 5e5;  // blas.cpp's: below it a product is not cut
    auto block = [&](int64_t i) {
        Matrix ai = a, bi = b, ci = c;
        ai.offset += i * sa, bi.offset += i * sb, ci.offset += i * sc;
        mm_plain(alpha, ai, bi, beta, ci);
    };
    const double flops = std::max(1.0, 2.0 * double(c.rows) * double(c.cols) * double(a.cols));
    if (flops >= kSplitFlops) {
        for (int64_t i = 0; i < count; i++) block(i);
        return;
    }
    parallel_for(count, std::max<int64_t>(1, int64_t(kSplitFlops / flops)), [&](int64_t b0, int64_t e) {
        for (int64_t i = b0; i < e; i++) block(i);
    });
}

}  // namespace vela::cpu

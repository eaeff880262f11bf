// rand and randn on the CPU device: Philox values by logical index (see
// core/philox.hpp), threaded over runs of the view.
#include "core/philox.hpp"
#include "cpu/cpu_kernels.hpp"

namespace vela::cpu {

void CpuDevice::random(Dist dist, uint64_t seed, const Matrix& x) {
    Timed t(this, dist == Dist::normal ? "randn" : "rand");
    if (x.empty()) return;
    auto fill = dist == Dist::normal ? philox::fill_normal : philox::fill_uniform;
    float* xb = fbase(x);
    constexpr int64_t grain = 4096;  // a Philox draw costs tens of ns: threads pay off early
    if (x.is_vector() || x.contiguous()) {
        const int64_t inc = x.is_vector() ? x.inc() : 1;
        parallel_for(x.size(), grain, [&](int64_t b, int64_t e) {
            fill(seed, uint64_t(b), e - b, xb + x.offset + b * inc, inc);
        });
        return;
    }
    const int64_t rows = x.rows;
    parallel_for(x.cols, rows >= grain ? 1 : grain / rows, [&](int64_t jb, int64_t je) {
        for (int64_t j = jb; j < je; j++) fill(seed, uint64_t(j * rows), rows, xb + x.index(0, j), x.row_step());
    });
}

}  // namespace vela::cpu

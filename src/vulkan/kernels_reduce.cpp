// Reductions that return a number to the host: dot, nrm2, asum, sum, imax
// (shaders/reduce.comp). One pass writes a partial result per workgroup to a
// host-visible scratch buffer; the host waits for it (a reduction is a point
// where the host needs a value) and adds the partials in double precision.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "vulkan/device.hpp"

namespace vela::vk {

namespace {

struct ReducePush {
    View x, y;
    uint64_t partials = 0;
    uint32_t n = 0;
};

// Workgroups: up to 256, more where the grid-strided loop would otherwise run
// over kReduceIterations times per invocation (drivers may end a loop after
// 65,535 iterations); 4096 covers 2^32 elements at a workgroup of 64.
constexpr uint32_t kMaxGroups = 4096;
constexpr uint64_t kReduceIterations = 16384;

}  // namespace

// Returns the number of workgroups; their partials are in `out` (floats, then indices for imax).
static uint32_t record_reduce(VulkanDevice& dev, uint32_t op, const Matrix& x, const Matrix* y, const Matrix& out) {
    ReducePush p;
    p.x = dev.view(x);
    if (y) p.y = dev.view(*y);
    p.partials = VulkanDevice::buffer(out).alloc.address;
    p.n = uint32_t(x.size());
    uint32_t wg = dev.wg();
    uint64_t needed = (uint64_t(p.n) + wg - 1) / wg;
    uint64_t bounded = (needed + kReduceIterations - 1) / kReduceIterations;
    uint32_t groups = uint32_t(std::min<uint64_t>(std::max<uint64_t>(std::min<uint64_t>(needed, 256), bounded), kMaxGroups));
    const bool vec4 = dense16(x, p.x) && (!y || dense16(*y, p.y));
    const OpSpec spec{.wg = wg, .op = op, .vec4 = vec4};
    static const char* labels[] = {"dot", "nrm2", "asum", "sum", "imax"};
    dev.dispatch(Dispatch{.shader = "reduce", .push = &p, .push_size = sizeof p, .groups = {groups, 1, 1},
                          .spec = spec, .reads = {&x, y}, .writes = {&out}, .label = labels[op]});
    return groups;
}

double VulkanDevice::reduce(Reduce op, const Matrix& x, const Matrix* y) {
    if (x.empty()) return 0;
    Matrix out = scratch(2 * kMaxGroups);
    uint32_t groups = record_reduce(*this, uint32_t(op), x, op == Reduce::dot ? y : nullptr, out);
    stream_.before_host_read(buffer(out));
    stream_.report_checks();  // a bad index that finished kernels found (vulkan/stream.hpp)
    stream_.count_transfer(false, uint64_t(groups) * sizeof(float));  // the partials read: trace and stats count it
    const float* part = reinterpret_cast<const float*>(buffer(out).alloc.mapped);
    double s = 0;
    for (uint32_t g = 0; g < groups; ++g) s += part[g];
    if (op == Reduce::nrm2 && (std::isinf(s) || s < 1e-30)) {
        // The float32 squares overflowed (|x| above 1.8e19 gave inf where the cpu's
        // BLAS gives the norm; found by tests/fuzz) or underflowed: the norm of
        // x / max|x|, times max|x|, as BLAS scales. max|x| of the scaled copy is 1,
        // so its sum of squares is in [1, n] and this path is not taken again.
        int64_t k = imax(x);
        float big = 0;
        download(x.view(k % std::max<int64_t>(x.rows, 1), k / std::max<int64_t>(x.rows, 1), 1, 1), &big);
        big = std::fabs(big);
        if (big == 0 || !std::isfinite(big)) return big;
        Matrix t;
        t.buf = alloc(DType::f32, size_t(x.size()));
        t.rows = x.rows;
        t.cols = x.cols;
        t.ld = std::max<int64_t>(x.rows, 1);
        copy(x, t);
        // By a power of two (exact), in two steps where 1/max|x| is beyond float32 (a denormal max|x|).
        double f = std::ldexp(1.0, -std::ilogb(big));
        if (f > 0x1p100) {
            scal(0x1p100f, t);
            f /= 0x1p100;
        }
        scal(float(f), t);
        double r = reduce(Reduce::nrm2, t, nullptr) / std::ldexp(1.0, -std::ilogb(big));
        t.buf->release();
        return r;
    }
    return op == Reduce::nrm2 ? std::sqrt(s) : s;
}

int64_t VulkanDevice::imax(const Matrix& x) {
    if (x.empty()) return 0;
    Matrix out = scratch(2 * kMaxGroups);
    uint32_t groups = record_reduce(*this, uint32_t(Reduce::count_), x, nullptr, out);  // REDUCE_IMAX
    stream_.before_host_read(buffer(out));
    stream_.report_checks();
    stream_.count_transfer(false, uint64_t(groups) * (sizeof(float) + sizeof(uint32_t)));  // values and indices read
    const float* val = reinterpret_cast<const float*>(buffer(out).alloc.mapped);
    const uint32_t* idx = reinterpret_cast<const uint32_t*>(val + groups);
    // Partials come from disjoint strided shares: take the largest, the lowest index on ties.
    uint32_t best = 0;
    for (uint32_t g = 1; g < groups; ++g)
        if (val[g] > val[best] || (val[g] == val[best] && idx[g] < idx[best])) best = g;
    return idx[best] == 0xffffffffu ? 0 : int64_t(idx[best]);
}

}  // namespace vela::vk

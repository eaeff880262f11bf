// Per-column kernels: softmax and its fused cross-entropy form
// (shaders/softmax.comp), argmax and argmin (argmax.comp). One invocation per column
// for columns of up to kColumnRows rows; longer columns in bounded passes
// (colstats.comp, then colapply.comp), since drivers may end a shader loop
// after 65,535 iterations (lavapipe does, silently).
#include <algorithm>
#include <cstddef>

#include "core/index_check.hpp"
#include "vulkan/device.hpp"

namespace vela::vk {

namespace {

struct SoftmaxPush {
    View x, y, labels;
    uint64_t loss = 0;
    uint32_t loss_step = 0;
    uint32_t rows = 0, cols = 0;
    float scale = 1;
    uint64_t status = 0;  // xent: the call's status word (written by the stream, see Dispatch::check)
};
static_assert(sizeof(SoftmaxPush) == 104);

struct ArgmaxPush {
    View x, idx;
    uint32_t rows = 0, cols = 0;
};

// Layouts of shaders/colstats.comp and colapply.comp.
struct ColStatsPush {
    View x;
    uint64_t in_part = 0, out_part = 0;
    uint32_t rows = 0, cols = 0, chunk = 0, out_chunks = 0;
};
static_assert(sizeof(ColStatsPush) == 56);

struct ColApplyPush {
    View x, y, labels;
    uint64_t part = 0, loss = 0;
    uint32_t loss_step = 0;
    uint32_t rows = 0, cols = 0;
    float scale = 1;
    uint64_t status = 0;  // xent: the call's status word (written by the stream, see Dispatch::check)
};
static_assert(sizeof(ColApplyPush) == 112);

// The one-invocation-per-column shaders loop over a column up to four times:
// up to kColumnRows rows keeps that at 16,384 iterations. colstats.comp
// loops over kChunk values per invocation.
constexpr uint64_t kColumnRows = 4096;
constexpr uint64_t kChunk = 4096;


// The specialization constants of the shaders, in constant_id order.
struct SoftmaxSpec {
    uint32_t wg, xent, labels_u8;  // softmax.comp: XENT 1 adds the cross-entropy
};
struct ArgmaxSpec {
    uint32_t wg, negate;  // argmax.comp: NEGATE 1 is argmin
};
struct ColStatsSpec {
    uint32_t wg, op, level0;  // colstats.comp: op vk::ColStats (modes.def), LEVEL0 1 reads x, 0 the partials
};
struct ColApplySpec {
    uint32_t wg, op, u8;  // colapply.comp: op vk::ColApply (modes.def); U8: the labels (xent) or idx (argmax) are uint8
};

}  // namespace

// Records the colstats levels of x for op and returns the matrix holding one
// pair per column (2·cols floats): freed when the work that uses it is done.
static Matrix column_stats(VulkanDevice& dev, ColStats op, const Matrix& x) {
    const uint32_t wg = dev.wg();
    const uint64_t cols = uint64_t(x.cols);
    uint64_t rows = uint64_t(x.rows);
    Matrix in;
    bool level0 = true;
    for (;;) {
        uint64_t chunks = (rows + kChunk - 1) / kChunk;
        Matrix out;
        out.buf = dev.alloc(DType::f32, size_t(2 * cols * chunks));
        out.rows = int64_t(2 * cols * chunks);
        out.cols = 1;
        out.ld = out.rows;
        ColStatsPush p;
        if (level0) p.x = dev.view(x);
        if (!level0) p.in_part = dev.view(in).addr;
        p.out_part = dev.view(out).addr;
        p.rows = uint32_t(rows);
        p.cols = uint32_t(cols);
        p.chunk = uint32_t(kChunk);
        p.out_chunks = uint32_t(chunks);
        const ColStatsSpec spec{.wg = wg, .op = uint32_t(op), .level0 = level0};
        Dispatch d{.shader = "colstats", .push = &p, .push_size = sizeof p, .spec = spec,
                   .reads = {level0 ? &x : &in}, .writes = {&out},
                   .label = op == ColStats::softmax ? "softmax" : op == ColStats::argmax ? "argmax" : "argmin"};
        dev.grid(cols * chunks, wg, d.groups);
        dev.dispatch(d);
        if (chunks == 1) return out;
        in = out;
        rows = chunks;
        level0 = false;
    }
}

void VulkanDevice::softmax(const Matrix& x, const Matrix& y) {
    if (y.empty()) return;
    if (uint64_t(x.rows) > kColumnRows) {
        Matrix part = column_stats(*this, ColStats::softmax, x);
        ColApplyPush p;
        p.x = view(x);
        p.y = view(y);
        p.part = view(part).addr;
        p.rows = uint32_t(x.rows);
        p.cols = uint32_t(x.cols);
        const ColApplySpec spec{.wg = wg(), .op = uint32_t(ColApply::softmax), .u8 = 0};
        Dispatch d{.shader = "colapply", .push = &p, .push_size = sizeof p, .spec = spec,
                   .reads = {&x, &part}, .writes = {&y}, .label = "softmax"};
        grid(uint64_t(x.rows) * uint64_t(x.cols), wg(), d.groups);
        dispatch(d);
        return;
    }
    const uint32_t cwg = small_wg();
    SoftmaxPush p;
    p.x = view(x);
    p.y = view(y);
    p.rows = uint32_t(x.rows);
    p.cols = uint32_t(x.cols);
    const SoftmaxSpec spec{.wg = cwg, .xent = 0, .labels_u8 = 0};
    Dispatch d{.shader = "softmax", .push = &p, .push_size = sizeof p, .spec = spec,
               .reads = {&x}, .writes = {&y}, .label = "softmax"};
    grid(p.cols, cwg, d.groups);
    dispatch(d);
}

void VulkanDevice::softmax_xent(const Matrix& z, const Matrix& labels, const Matrix& loss, float scale,
                                const Matrix& dz) {
    if (dz.empty()) return;
    bool with_loss = loss.buf != nullptr && !loss.empty();
    // The labels' contract, checked by the kernel (core/index_check.hpp).
    const IndexCheck check{"softmax_xent", "labels", "a class index", uint64_t(z.rows)};
    if (uint64_t(z.rows) > kColumnRows) {
        Matrix part = column_stats(*this, ColStats::softmax, z);
        ColApplyPush p;
        p.x = view(z);
        p.y = view(dz);
        p.labels = view(labels);
        p.labels.rstep = uint32_t(labels.inc());
        p.part = view(part).addr;
        if (with_loss) {
            p.loss = view(loss).addr;
            p.loss_step = uint32_t(loss.inc());
        }
        p.rows = uint32_t(z.rows);
        p.cols = uint32_t(z.cols);
        p.scale = scale;
        const ColApplySpec spec{.wg = wg(), .op = uint32_t(ColApply::xent), .u8 = labels.dtype() == DType::u8};
        Dispatch d{.shader = "colapply", .push = &p, .push_size = sizeof p, .spec = spec,
                   .reads = {&z, &labels, &part}, .writes = {&dz, with_loss ? &loss : nullptr},
                   .label = "softmax_xent", .check = &check, .check_at = offsetof(ColApplyPush, status)};
        grid(uint64_t(z.rows) * uint64_t(z.cols), wg(), d.groups);
        dispatch(d);
        return;
    }
    const uint32_t cwg = small_wg();
    SoftmaxPush p;
    p.x = view(z);
    p.y = view(dz);
    p.labels = view(labels);
    p.labels.rstep = uint32_t(labels.inc());
    if (with_loss) {
        p.loss = view(loss).addr;
        p.loss_step = uint32_t(loss.inc());
    }
    p.rows = uint32_t(z.rows);
    p.cols = uint32_t(z.cols);
    p.scale = scale;
    const SoftmaxSpec spec{.wg = cwg, .xent = 1, .labels_u8 = labels.dtype() == DType::u8};
    Dispatch d{.shader = "softmax", .push = &p, .push_size = sizeof p, .spec = spec, .reads = {&z, &labels},
               .writes = {&dz, with_loss ? &loss : nullptr}, .label = "softmax_xent", .check = &check,
               .check_at = offsetof(SoftmaxPush, status)};
    grid(p.cols, cwg, d.groups);
    dispatch(d);
}

void VulkanDevice::arg_extreme(const Matrix& x, const Matrix& idx, Extreme e) {
    if (x.cols == 0) return;
    const bool lo = e == Extreme::smallest;
    const char* label = lo ? "argmin" : "argmax";
    if (uint64_t(x.rows) > kColumnRows) {
        Matrix part = column_stats(*this, lo ? ColStats::argmin : ColStats::argmax, x);
        ColApplyPush p;
        p.y = view(idx);
        p.y.rstep = uint32_t(idx.inc());
        p.part = view(part).addr;
        p.rows = uint32_t(x.rows);
        p.cols = uint32_t(x.cols);
        const ColApplySpec spec{.wg = wg(), .op = uint32_t(ColApply::argmax), .u8 = idx.dtype() == DType::u8};
        Dispatch d{.shader = "colapply", .push = &p, .push_size = sizeof p, .spec = spec,
                   .reads = {&part}, .writes = {&idx}, .label = label};
        grid(uint64_t(x.cols), wg(), d.groups);
        dispatch(d);
        return;
    }
    const uint32_t cwg = small_wg();
    ArgmaxPush p;
    p.x = view(x);
    p.idx = view(idx);
    p.idx.rstep = uint32_t(idx.inc());
    p.rows = uint32_t(x.rows);
    p.cols = uint32_t(x.cols);
    const ArgmaxSpec spec{.wg = cwg, .negate = lo};
    Dispatch d{.shader = "argmax", .push = &p, .push_size = sizeof p, .spec = spec,
               .reads = {&x}, .writes = {&idx}, .label = label};
    grid(p.cols, cwg, d.groups);
    dispatch(d);
}

}  // namespace vela::vk

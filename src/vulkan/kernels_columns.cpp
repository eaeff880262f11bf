// Per-column kernels: softmax and its fused cross-entropy form
// (shaders/softmax.comp), argmax (argmax.comp). One invocation per column.
#include <algorithm>

#include "vulkan/device.hpp"

namespace vela::vk {

namespace {

struct SoftmaxPush {
    View x, y, labels;
    uint64_t loss = 0;
    uint32_t loss_step = 0;
    uint32_t rows = 0, cols = 0;
    float scale = 1;
};

struct ArgmaxPush {
    View x, idx;
    uint32_t rows = 0, cols = 0;
};

}  // namespace

// One invocation per column: a small workgroup, so a batch of 64 columns fills one.
static uint32_t column_wg(const VulkanDevice& dev) { return std::min<uint32_t>(64, dev.wg()); }

void VulkanDevice::softmax(const Matrix& x, const Matrix& y) {
    if (y.empty()) return;
    const uint32_t cwg = column_wg(*this);
    SoftmaxPush p;
    p.x = view(x);
    p.y = view(y);
    p.rows = uint32_t(x.rows);
    p.cols = uint32_t(x.cols);
    uint32_t spec[3] = {cwg, 0, 0};
    Dispatch d{.shader = "softmax", .push = &p, .push_size = sizeof p, .spec = spec, .spec_count = 3,
               .reads = {&x}, .writes = {&y}, .label = "softmax"};
    grid(p.cols, cwg, d.groups);
    dispatch(d);
}

void VulkanDevice::softmax_xent(const Matrix& z, const Matrix& labels, const Matrix& loss, float scale,
                                const Matrix& dz) {
    if (dz.empty()) return;
    const uint32_t cwg = column_wg(*this);
    SoftmaxPush p;
    p.x = view(z);
    p.y = view(dz);
    p.labels = view(labels);
    p.labels.rstep = uint32_t(labels.inc());
    bool with_loss = loss.buf != nullptr && !loss.empty();
    if (with_loss) {
        p.loss = view(loss).addr;
        p.loss_step = uint32_t(loss.inc());
    }
    p.rows = uint32_t(z.rows);
    p.cols = uint32_t(z.cols);
    p.scale = scale;
    uint32_t spec[3] = {cwg, 1, labels.dtype() == DType::u8};
    auto go = [&](std::initializer_list<const Matrix*> writes) {
        Dispatch d{.shader = "softmax", .push = &p, .push_size = sizeof p, .spec = spec, .spec_count = 3,
                   .reads = {&z, &labels}, .writes = writes, .label = "softmax_xent"};
        grid(p.cols, cwg, d.groups);
        dispatch(d);
    };
    with_loss ? go({&dz, &loss}) : go({&dz});
}

void VulkanDevice::argmax(const Matrix& x, const Matrix& idx) {
    if (x.cols == 0) return;
    const uint32_t cwg = column_wg(*this);
    ArgmaxPush p;
    p.x = view(x);
    p.idx = view(idx);
    p.idx.rstep = uint32_t(idx.inc());
    p.rows = uint32_t(x.rows);
    p.cols = uint32_t(x.cols);
    uint32_t spec[1] = {cwg};
    Dispatch d{.shader = "argmax", .push = &p, .push_size = sizeof p, .spec = spec, .spec_count = 1,
               .reads = {&x}, .writes = {&idx}, .label = "argmax"};
    grid(p.cols, cwg, d.groups);
    dispatch(d);
}

}  // namespace vela::vk

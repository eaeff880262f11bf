// Level-1 kernels: fill, scal, copy, swap, axpby, all one shader
// (shaders/level1.comp) with the operation as a specialization constant.
#include "vulkan/device.hpp"

namespace vela::vk {

namespace {

enum Level1Op : uint32_t { op_fill = 0, op_scal = 1, op_copy = 2, op_swap = 3, op_axpby = 4 };

void record_level1(VulkanDevice& dev, Level1Op op, const char* label, const Matrix* x, const Matrix& y, float alpha,
                   float beta) {
    if (y.empty()) return;
    ElementPush p;
    if (x) p.x = dev.view(*x);
    p.y = dev.view(y);
    p.n = uint32_t(y.size());
    p.a = alpha;
    p.b = beta;
    // Dense, 16-byte aligned float operands take the four-elements-per-invocation path.
    auto dense16 = [&](const Matrix* m, const View& v) {
        return !m || (m->dtype() == DType::f32 && m->contiguous() && v.addr % 16 == 0);
    };
    bool vec4 = (op == op_fill || op == op_scal || op == op_axpby) && dense16(&y, p.y) &&
                dense16(op == op_axpby ? x : nullptr, p.x);
    bool u8 = (x && x->dtype() == DType::u8) || y.dtype() == DType::u8;
    uint32_t spec[5] = {dev.wg(), op, x && x->dtype() == DType::u8, y.dtype() == DType::u8, vec4};
    // Float kernels may run as a step of a batch (shaders/batch.comp); uint8 copies only on their own.
    uint32_t code = u8 ? 0 : step::level1 | op | (vec4 ? step::vec4 : 0);
    uint64_t invocations = vec4 ? (uint64_t(p.n) + 3) / 4 : p.n;
    // The operand lists live until the end of each full expression that calls go().
    auto go = [&](std::initializer_list<const Matrix*> reads, std::initializer_list<const Matrix*> writes) {
        Dispatch d{.shader = "level1", .push = &p, .push_size = sizeof p, .spec = spec, .spec_count = 5,
                   .reads = reads, .writes = writes, .label = label, .step = code};
        dev.grid(invocations, dev.wg(), d.groups);
        dev.dispatch(d);
    };
    switch (op) {
    case op_fill: go({}, {&y}); break;
    case op_scal: go({&y}, {&y}); break;
    case op_copy: go({x}, {&y}); break;
    case op_swap: go({x, &y}, {x, &y}); break;
    case op_axpby: beta == 0 ? go({x}, {&y}) : go({x, &y}, {&y}); break;
    }
}

}  // namespace

void VulkanDevice::axpby(float alpha, const Matrix& x, float beta, const Matrix& y) {
    record_level1(*this, op_axpby, "axpby", &x, y, alpha, beta);
}
void VulkanDevice::scal(float alpha, const Matrix& x) { record_level1(*this, op_scal, "scal", nullptr, x, alpha, 0); }
void VulkanDevice::copy(const Matrix& x, const Matrix& y) { record_level1(*this, op_copy, "copy", &x, y, 0, 0); }
void VulkanDevice::swap(const Matrix& x, const Matrix& y) { record_level1(*this, op_swap, "swap", &x, y, 0, 0); }
void VulkanDevice::fill(const Matrix& x, float v) { record_level1(*this, op_fill, "fill", nullptr, x, v, 0); }

}  // namespace vela::vk

// Level-1 kernels: fill, scal, copy, swap, axpby, all one shader
// (shaders/level1.comp) with the operation as a specialization constant.
#include "vulkan/device.hpp"

namespace vela::vk {

namespace {

// shaders/level1.comp's specialization constants.
struct Level1Spec {
    uint32_t wg, op;
    uint32_t x_u8, y_u8;  // copy: x or y is uint8
    uint32_t vec4;        // fill, scal, axpby on dense 16-byte aligned views: four elements per invocation
};

void record_level1(VulkanDevice& dev, Level1 op, const char* label, const Matrix* x, const Matrix& y, float alpha,
                   float beta) {
    if (y.empty()) return;
    ElementPush p;
    if (x) p.x = dev.view(*x);
    p.y = dev.view(y);
    p.n = uint32_t(y.size());
    p.a = alpha;
    p.b = beta;
    // Dense, 16-byte aligned float operands take the four-elements-per-invocation path.
    auto f32_dense16 = [](const Matrix* m, const View& v) {
        return !m || (m->dtype() == DType::f32 && dense16(*m, v));
    };
    bool vec4 = (op == Level1::fill || op == Level1::scal || op == Level1::axpby) && f32_dense16(&y, p.y) &&
                f32_dense16(op == Level1::axpby ? x : nullptr, p.x);
    bool u8 = (x && x->dtype() == DType::u8) || y.dtype() == DType::u8;
    const Level1Spec spec{.wg = dev.wg(), .op = uint32_t(op), .x_u8 = x && x->dtype() == DType::u8,
                          .y_u8 = y.dtype() == DType::u8, .vec4 = vec4};
    // Float kernels may run as a step of a batch (shaders/batch.comp); uint8 copies only on their own.
    uint32_t code = u8 ? 0 : step::level1 | uint32_t(op) | (vec4 ? step::vec4 : 0);
    uint64_t invocations = vec4 ? (uint64_t(p.n) + 3) / 4 : p.n;
    auto go = [&](Operands reads, Operands writes) {
        Dispatch d{.shader = "level1", .push = &p, .push_size = sizeof p, .spec = spec, .reads = reads,
                   .writes = writes, .label = label, .step = code};
        dev.grid(invocations, dev.wg(), d.groups);
        dev.dispatch(d);
    };
    switch (op) {
    case Level1::fill: go({}, {&y}); break;
    case Level1::scal: go({&y}, {&y}); break;
    case Level1::copy: go({x}, {&y}); break;
    case Level1::swap: go({x, &y}, {x, &y}); break;
    case Level1::axpby: beta == 0 ? go({x}, {&y}) : go({x, &y}, {&y}); break;
    case Level1::count_: break;
    }
}

}  // namespace

void VulkanDevice::axpby(float alpha, const Matrix& x, float beta, const Matrix& y) {
    record_level1(*this, Level1::axpby, "axpby", &x, y, alpha, beta);
}
void VulkanDevice::scal(float alpha, const Matrix& x) { record_level1(*this, Level1::scal, "scal", nullptr, x, alpha, 0); }
void VulkanDevice::copy(const Matrix& x, const Matrix& y) { record_level1(*this, Level1::copy, "copy", &x, y, 0, 0); }
void VulkanDevice::swap(const Matrix& x, const Matrix& y) { record_level1(*this, Level1::swap, "swap", &x, y, 0, 0); }
void VulkanDevice::fill(const Matrix& x, float v) { record_level1(*this, Level1::fill, "fill", nullptr, x, v, 0); }

}  // namespace vela::vk

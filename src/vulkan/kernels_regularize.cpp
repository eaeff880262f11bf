// Regularization and augmentation on Vulkan: dropout (shaders/dropout.comp),
// batch normalization (bn_reduce.comp in bounded levels, bn_finish.comp,
// bn_apply.comp) and random_shift (random_shift.comp). The equations are in
// core/device.hpp; dropout and random_shift are bit-identical to the CPU
// device for a seed.
#include <algorithm>

#include "vulkan/device.hpp"

namespace vela::vk {

namespace {

// A vector operand as three words: address (low, high) and the step between elements.
struct Vec {
    uint32_t lo = 0, hi = 0, inc = 0;
};
static_assert(sizeof(Vec) == 12);

struct DropoutPush {
    View x, mask, y;
    uint32_t n = 0, seed_lo = 0, seed_hi = 0, step_lo = 0, step_hi = 0;
    float p = 0, scale = 1;
};
static_assert(sizeof(DropoutPush) <= 128);  // the push-constant size every device has

struct ShiftPush {
    View x, y;
    uint32_t n = 0, rows = 0, height = 0, width = 0, shift = 0, seed_lo = 0, seed_hi = 0, step_lo = 0, step_hi = 0;
};
static_assert(sizeof(ShiftPush) <= 128);  // the push-constant size every device has

struct ReducePush {
    View a, b;
    uint64_t in_part = 0, out_part = 0;
    Vec mean;
    uint32_t group = 0, total = 0, feats = 0, chunk = 0, out_chunks = 0;
};
static_assert(sizeof(ReducePush) <= 128);  // the push-constant size every device has

struct FinishPush {
    uint64_t part = 0, coef = 0;
    Vec out1, out2, var, gamma, mean, beta;
    uint32_t feats = 0;
    float count = 1, eps = 0;
};
static_assert(sizeof(FinishPush) <= 128);  // the push-constant size every device has

struct ApplyPush {
    View a, b, y;
    uint64_t coef = 0;
    uint32_t n = 0, rows = 0, group = 0, feats = 0;
};
static_assert(sizeof(ApplyPush) <= 128);  // the push-constant size every device has

// Values (or partials) summed per invocation in bn_reduce.comp: the loop
// stays far below the 65,535 iterations a driver may allow.
constexpr uint64_t kChunk = 4096;

constexpr uint32_t kMean = uint32_t(Bn::mean), kVar = uint32_t(Bn::var), kGrad = uint32_t(Bn::grad),
                   kForward = uint32_t(Bn::forward);  // bn_reduce.comp, bn_finish.comp: src/vulkan/modes.def

Vec vec(const VulkanDevice& dev, const Matrix& v) {
    uint64_t a = dev.view(v).addr;
    return {uint32_t(a), uint32_t(a >> 32), uint32_t(v.inc())};
}

Matrix scratch_floats(VulkanDevice& dev, uint64_t n) {
    Matrix m;
    m.buf = dev.alloc(DType::f32, size_t(n));
    m.rows = int64_t(n);
    m.cols = 1;
    m.ld = m.rows;
    return m;
}

// Records bn_reduce's levels for `mode` and returns feats pairs (s1, s2).
Matrix bn_reduce(VulkanDevice& dev, uint32_t mode, const Matrix& a, const Matrix* b, const Matrix* mean, int64_t group,
              const char* label) {
    const uint32_t wg = std::min<uint32_t>(64, dev.wg());
    const uint64_t feats = uint64_t(a.rows / group);
    uint64_t total = uint64_t(group) * uint64_t(a.cols);
    Matrix in;
    bool level0 = true;
    for (;;) {
        uint64_t chunks = (total + kChunk - 1) / kChunk;
        Matrix out = scratch_floats(dev, 2 * feats * chunks);
        ReducePush p;
        if (level0) {
            p.a = dev.view(a);
            if (b) p.b = dev.view(*b);
            if (mean) p.mean = vec(dev, *mean);
        } else {
            p.in_part = dev.view(in).addr;
        }
        p.out_part = dev.view(out).addr;
        p.group = uint32_t(group);
        p.total = uint32_t(total);
        p.feats = uint32_t(feats);
        p.chunk = uint32_t(kChunk);
        p.out_chunks = uint32_t(chunks);
        const struct {
            uint32_t wg, mode, level0;
        } spec{.wg = wg, .mode = mode, .level0 = level0};  // bn_reduce.comp: WG, MODE, LEVEL0
        const Matrix* m0 = mean ? mean : &a;
        const Matrix* b0 = b ? b : &a;
        Dispatch d{.shader = "bn_reduce", .push = &p, .push_size = sizeof p, .spec = spec,
                   .reads = {level0 ? &a : &in, level0 ? b0 : &in, level0 ? m0 : &in}, .writes = {&out},
                   .label = label};
        dev.grid(feats * chunks, wg, d.groups);
        dev.dispatch(d);
        if (chunks == 1) return out;
        in = out;
        total = chunks;
        level0 = false;
    }
}

}  // namespace

void VulkanDevice::dropout(uint64_t seed, uint64_t step, float p, float scale, const Matrix& x, const Matrix& mask,
                           const Matrix& y) {
    if (x.empty()) return;
    DropoutPush q;
    q.x = view(x);
    q.mask = view(mask);
    q.y = view(y);
    q.n = uint32_t(x.size());
    q.seed_lo = uint32_t(seed), q.seed_hi = uint32_t(seed >> 32);
    q.step_lo = uint32_t(step), q.step_hi = uint32_t(step >> 32);
    q.p = p;
    q.scale = scale;
    const WgSpec spec{.wg = wg()};
    Dispatch d{.shader = "dropout", .push = &q, .push_size = sizeof q, .spec = spec,
               .reads = {&x}, .writes = {&mask, &y}, .label = "dropout"};
    grid((uint64_t(q.n) + 3) / 4, wg(), d.groups);  // one invocation per draw of four elements
    dispatch(d);
}

void VulkanDevice::random_shift(uint64_t seed, uint64_t step, int64_t shift, int64_t height, int64_t width,
                                const Matrix& x, const Matrix& y) {
    if (x.empty()) return;
    ShiftPush q;
    q.x = view(x);
    q.y = view(y);
    // One invocation per run of up to kShiftSpan pixels of an image row (random_shift.comp's SPAN).
    constexpr uint64_t kShiftSpan = 1024;
    const uint64_t runs = (uint64_t(width) + kShiftSpan - 1) / kShiftSpan;
    q.n = uint32_t(uint64_t(y.cols) * uint64_t(y.rows / width) * runs);
    q.rows = uint32_t(y.rows);
    q.height = uint32_t(height), q.width = uint32_t(width), q.shift = uint32_t(shift);
    q.seed_lo = uint32_t(seed), q.seed_hi = uint32_t(seed >> 32);
    q.step_lo = uint32_t(step), q.step_hi = uint32_t(step >> 32);
    const WgSpec spec{.wg = wg()};
    Dispatch d{.shader = "random_shift", .push = &q, .push_size = sizeof q, .spec = spec,
               .reads = {&x}, .writes = {&y}, .label = "random_shift"};
    grid(q.n, wg(), d.groups);
    dispatch(d);
}

void VulkanDevice::batchnorm_stats(const Matrix& x, int64_t group, const Matrix& mean, const Matrix& var) {
    const uint32_t fwg = std::min<uint32_t>(64, wg());
    const uint64_t feats = uint64_t(x.rows / group);
    const float count = float(double(group) * double(x.cols));
    for (uint32_t mode : {kMean, kVar}) {
        Matrix part = bn_reduce(*this, mode, x, nullptr, mode == kVar ? &mean : nullptr, group, "batchnorm_stats");
        FinishPush p;
        p.part = view(part).addr;
        p.out1 = vec(*this, mode == kMean ? mean : var);
        p.feats = uint32_t(feats);
        p.count = count;
        const ModeSpec spec{.wg = fwg, .mode = mode};
        Dispatch d{.shader = "bn_finish", .push = &p, .push_size = sizeof p, .spec = spec,
                   .reads = {&part}, .writes = {mode == kMean ? &mean : &var}, .label = "batchnorm_stats"};
        grid(feats, fwg, d.groups);
        dispatch(d);
    }
}

void VulkanDevice::batchnorm(const Matrix& x, const Matrix& mean, const Matrix& var, const Matrix& gamma,
                             const Matrix& beta, float eps, int64_t group, const Matrix& y) {
    const uint32_t fwg = std::min<uint32_t>(64, wg());
    const uint64_t feats = uint64_t(x.rows / group);
    if (feats == 0) return;
    Matrix coef = scratch_floats(*this, 4 * feats);
    FinishPush f;
    f.coef = view(coef).addr;
    f.var = vec(*this, var), f.gamma = vec(*this, gamma), f.mean = vec(*this, mean), f.beta = vec(*this, beta);
    f.feats = uint32_t(feats);
    f.eps = eps;
    const ModeSpec fspec{.wg = fwg, .mode = kForward};
    Dispatch fd{.shader = "bn_finish", .push = &f, .push_size = sizeof f, .spec = fspec,
                .reads = {&var, &gamma, &mean, &beta}, .writes = {&coef}, .label = "batchnorm"};
    grid(feats, fwg, fd.groups);
    dispatch(fd);
    if (y.empty()) return;
    ApplyPush p;
    p.a = view(x);
    p.y = view(y);
    p.coef = view(coef).addr;
    p.n = uint32_t(y.size());
    p.rows = uint32_t(y.rows);
    p.group = uint32_t(group);
    p.feats = uint32_t(feats);
    const ModeSpec spec{.wg = wg(), .mode = uint32_t(BnApply::forward)};
    Dispatch d{.shader = "bn_apply", .push = &p, .push_size = sizeof p, .spec = spec,
               .reads = {&x, &coef}, .writes = {&y}, .label = "batchnorm"};
    grid(p.n, wg(), d.groups);
    dispatch(d);
}

void VulkanDevice::batchnorm_backward(const Matrix& dy, const Matrix& x, const Matrix& mean, const Matrix& var,
                                      const Matrix& gamma, float eps, int64_t group, const Matrix& dgamma,
                                      const Matrix& dbeta, const Matrix& dx) {
    const uint32_t fwg = std::min<uint32_t>(64, wg());
    const uint64_t feats = uint64_t(x.rows / group);
    if (feats == 0) return;
    const bool with_dx = dx.buf != nullptr && !dx.empty();
    Matrix part = bn_reduce(*this, kGrad, dy, &x, &mean, group, "batchnorm_backward");
    Matrix coef = scratch_floats(*this, with_dx ? 4 * feats : 1);
    FinishPush f;
    f.part = view(part).addr;
    if (with_dx) f.coef = view(coef).addr;
    f.out1 = vec(*this, dbeta), f.out2 = vec(*this, dgamma);
    f.var = vec(*this, var), f.gamma = vec(*this, gamma), f.mean = vec(*this, mean);
    f.feats = uint32_t(feats);
    f.count = float(double(group) * double(x.cols));
    f.eps = eps;
    const ModeSpec fspec{.wg = fwg, .mode = kGrad};
    Dispatch fd{.shader = "bn_finish", .push = &f, .push_size = sizeof f, .spec = fspec,
                .reads = {&part, &var, &gamma, &mean}, .writes = {&dbeta, &dgamma, &coef},
                .label = "batchnorm_backward"};
    grid(feats, fwg, fd.groups);
    dispatch(fd);
    if (!with_dx) return;
    ApplyPush p;
    p.a = view(dy);
    p.b = view(x);
    p.y = view(dx);
    p.coef = view(coef).addr;
    p.n = uint32_t(dx.size());
    p.rows = uint32_t(dx.rows);
    p.group = uint32_t(group);
    p.feats = uint32_t(feats);
    const ModeSpec spec{.wg = wg(), .mode = uint32_t(BnApply::backward)};
    Dispatch d{.shader = "bn_apply", .push = &p, .push_size = sizeof p, .spec = spec,
               .reads = {&dy, &x, &coef}, .writes = {&dx}, .label = "batchnorm_backward"};
    grid(p.n, wg(), d.groups);
    dispatch(d);
}

}  // namespace vela::vk

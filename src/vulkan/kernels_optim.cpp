// The fused optimizer updates (shaders/optim.comp): one dispatch per
// parameter, one invocation per element, or per four where every operand is
// dense and 16-byte aligned (a parameter of a network always is). The math is
// src/core/ops_optim.cpp's.
#include <bit>

#include "vulkan/device.hpp"
#include "vulkan/texel.hpp"

namespace vela::vk {

namespace {

// Mirrors the push block of shaders/optim.comp: five operands, each a View
// whose padding word carries one scalar, and a sixth scalar after n.
struct OptimPush {
    View w, g, s1, s2, s3;
    uint32_t n = 0;
    float q5 = 0;
};
static_assert(sizeof(OptimPush) == 128);

View with_scalar(View v, float q) {
    v.pad = std::bit_cast<uint32_t>(q);
    return v;
}

}  // namespace

void VulkanDevice::optim_step(Optim kind, const Matrix& w, const Matrix& g, const Matrix& s1, const Matrix& s2,
                              const Matrix& s3, const float* q) {
    OptimPush p;
    p.w = with_scalar(view(w), q[0]);
    p.g = with_scalar(view(g), q[1]);
    p.s1 = with_scalar(view(s1), q[2]);
    p.s2 = with_scalar(view(s2), q[3]);
    p.s3 = with_scalar(view(s3), q[4]);
    p.q5 = q[5];
    p.n = uint32_t(w.size());
    if (p.n == 0) return;
    // (Every operand is float32: core/ops_optim.cpp checks it.)
    const bool vec4 = dense16(w, p.w) && dense16(g, p.g) && dense16(s1, p.s1) && dense16(s2, p.s2) && dense16(s3, p.s3);
    const OpSpec spec{.wg = wg(), .op = uint32_t(kind), .vec4 = vec4};  // optim.comp: WG, KIND, VEC4
    Dispatch d{.shader = "optim", .push = &p, .push_size = sizeof p, .spec = spec, .reads = {&w, &g, &s1, &s2, &s3},
               .writes = {&w, &s1, &s2, &s3}, .label = optim_name(kind)};
    // sgd through the texel views (optim_tex.comp; lavapipe's MLP epoch spent
    // 30% of its device time in sgd_step through buffer addresses, docs/results.md):
    // the same operations, each operand's first word its float index in its block.
    if (kind == Optim::sgd && vec4 && texel_kernels(caps()) && texel_dense4(w) &&
        texel_dense4(g) && texel_dense4(s1)) {
        p.w.addr = texel_index(w), p.g.addr = texel_index(g), p.s1.addr = texel_index(s1);
        d.shader = "optim_tex";
        auto &bw = buffer(w).alloc, &bg = buffer(g).alloc, &bv = buffer(s1).alloc;
        d.texels[0] = bg.texel1, d.texels[1] = bg.texel4;
        d.texels[4] = bw.texel_store, d.texels[5] = bw.texel_store4;
        d.texels[6] = bv.texel_store, d.texels[7] = bv.texel_store4;
        count_texel_kernel();
    }
    grid(vec4 ? (uint64_t(p.n) + 3) / 4 : p.n, wg(), d.groups);
    dispatch(d);
}

// g ← α·a·b, then the update: two dispatches in order (the cpu device fuses them).
void VulkanDevice::mm_optim(float alpha, const Matrix& a, const Matrix& b, const Matrix& g, Optim kind, const Matrix& w,
                            const Matrix& s1, const Matrix& s2, const Matrix& s3, const float* q) {
    mm(alpha, a, b, 0.0f, g);
    optim_step(kind, w, g, s1, s2, s3, q);
}

}  // namespace vela::vk

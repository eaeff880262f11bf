// The fused optimizer updates (shaders/optim.comp): one dispatch per
// parameter, one invocation per element, or per four where every operand is
// dense and 16-byte aligned (a parameter of a network always is). The math is
// src/core/ops_optim.cpp's.
#include "vulkan/device.hpp"

namespace vela::vk {

namespace {

// Mirrors the push block of shaders/optim.comp.
struct OptimPush {
    View w, g, s1, s2;
    uint32_t n = 0;
    float a = 0, b = 0, c = 0, d = 0;
};
static_assert(sizeof(OptimPush) == 120);

}  // namespace

void VulkanDevice::optim_step(Optim kind, const Matrix& w, const Matrix& g, const Matrix& s1, const Matrix& s2,
                              const float* q) {
    OptimPush p;
    p.w = view(w);
    p.g = view(g);
    p.s1 = view(s1);
    p.s2 = view(s2);
    p.n = uint32_t(w.size());
    p.a = q[0], p.b = q[1], p.c = q[2], p.d = q[3];
    if (p.n == 0) return;
    // (Every operand is float32: core/ops_optim.cpp checks it.)
    const bool vec4 = dense16(w, p.w) && dense16(g, p.g) && dense16(s1, p.s1) && dense16(s2, p.s2);
    const OpSpec spec{.wg = wg(), .op = uint32_t(kind), .vec4 = vec4};  // optim.comp: WG, KIND, VEC4
    const bool adam = kind == Optim::adam;
    const char* label = adam ? "adam_step" : "sgd_step";
    Dispatch d{.shader = "optim", .push = &p, .push_size = sizeof p, .spec = spec, .reads = {&w, &g, &s1, &s2},
               .writes = {&w, &s1, &s2}, .label = label};
    grid(vec4 ? (uint64_t(p.n) + 3) / 4 : p.n, wg(), d.groups);
    dispatch(d);
}

}  // namespace vela::vk

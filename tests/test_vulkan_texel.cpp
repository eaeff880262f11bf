// Kernels through texel views (src/vulkan/texel.hpp) against float64, with
// the texel kernels on and off: on a device with texel views (lavapipe) the
// texel shader runs where the operands allow it and the buffer shader where
// they do not (an operand one float past a texel's start); on a device
// without (SwiftShader) nothing runs on it and the present kernels are what
// is tested. Every test ends by checking that the validation layer (on under
// scripts/test.sh) reported nothing.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "core/ops.hpp"
#include "vulkan/texel.hpp"
#include "vulkan_common.hpp"

using namespace vela;
using namespace vela::test;

namespace {

struct TexelSwitch {
    explicit TexelSwitch(bool on) { vk::set_texel_kernels(on); }
    ~TexelSwitch() { vk::set_texel_kernels(true); }
};

bool texel_device() { return static_cast<vk::VulkanDevice&>(gpu()).caps().texel_views; }

// w, v ← sgd_step on n elements, the velocity `skew` floats into its block.
void check_sgd(int64_t n, int64_t skew, bool nesterov) {
    INFO("sgd_step n " << n << " velocity at +" << skew << (nesterov ? " nesterov" : ""));
    const float lr = 0.05f, mu = 0.9f, wd = 1e-3f;
    Mat w = rnd(n, 1, -2, 2, 1), g = rnd(n, 1, -1, 1, 2), vb = rnd(n + skew, 1, -0.5f, 0.5f, 3);
    Matrix v = vb.m.view(skew, 0, n, 1);
    sgd_step(w.m, g.m, v, lr, mu, wd, nesterov);
    std::vector<double> ww(static_cast<size_t>(n)), vw(static_cast<size_t>(n));
    for (size_t k = 0; k < size_t(n); ++k) {
        double w0 = w.h[k], v0 = vb.h[k + size_t(skew)];
        double gg = double(g.h[k]) + double(wd) * w0;
        double vv = double(mu) * v0 + gg;
        vw[k] = vv;
        ww[k] = w0 - double(lr) * (nesterov ? gg + double(mu) * vv : vv);
    }
    // A few float roundings of values below 4 in magnitude.
    auto bad = [](const std::vector<float>& got, const std::vector<double>& want) {
        size_t n = 0;
        for (size_t k = 0; k < want.size(); ++k) n += !(std::fabs(got[k] - want[k]) <= 1e-6 * (1 + std::fabs(want[k])));
        return n;
    };
    CHECK(bad(to_host(w.m), ww) == 0);
    CHECK(bad(to_host(v), vw) == 0);
    CHECK(to_host(g.m) == g.h);
}

}  // namespace

TEST_CASE("vulkan texel kernels: sgd_step against float64, texels on and off", "[vulkan][texel]") {
    NoValidationMessages guard;
    const bool on = GENERATE(true, false);
    TexelSwitch sw(on);
    uint64_t before = vk::texel_kernel_count();
    for (int64_t n : {851, 4, 3, 20001})  // a tail of 3; one texel; the tail alone; 79 workgroups of 64
        for (bool nesterov : {false, true}) check_sgd(n, 0, nesterov);
    if (on && texel_device()) CHECK(vk::texel_kernel_count() == before + 8);
    else CHECK(vk::texel_kernel_count() == before);
    before = vk::texel_kernel_count();
    check_sgd(851, 1, false);  // not on a texel's start: the buffer shader
    CHECK(vk::texel_kernel_count() == before);
}

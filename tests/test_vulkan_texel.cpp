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
#include "vulkan/kernels_blas.hpp"
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

// `calls` texel dispatches since `before` where the switch is on and the
// device has texel views, none otherwise.
void check_texel_dispatches(bool on, uint64_t before, uint64_t calls) {
    CHECK(vk::texel_kernel_count() == before + (on && texel_device() ? calls : 0));
}

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
    check_texel_dispatches(on, before, 8);
    before = vk::texel_kernel_count();
    check_sgd(851, 1, false);  // not on a texel's start: the buffer shader
    CHECK(vk::texel_kernel_count() == before);
}

// delta ← da ∘ act′(x) for relu (from a) and tanh (from a: 1 − a²), n with a
// tail of 1-3 and without.
TEST_CASE("vulkan texel kernels: act_backward against float64, texels on and off", "[vulkan][texel]") {
    NoValidationMessages guard;
    const bool on = GENERATE(true, false);
    TexelSwitch sw(on);
    const uint64_t before = vk::texel_kernel_count();
    for (int64_t n : {1030, 4096, 2}) {
        Mat da = rnd(n, 1, -1, 1, 4), x = rnd(n, 1, -1, 1, 5);
        for (Act act : {Act::relu, Act::tanh}) {
            INFO("act_backward n " << n << (act == Act::relu ? " relu" : " tanh"));
            Matrix delta = zeros(gpu(), n, 1);
            act_backward(act, da.m, x.m, delta);
            std::vector<float> got = to_host(delta);
            size_t bad = 0;
            for (size_t k = 0; k < size_t(n); ++k) {
                double a = x.h[k], want = double(da.h[k]) * (act == Act::relu ? (a > 0 ? 1.0 : 0.0) : 1.0 - a * a);
                bad += !(std::fabs(got[k] - want) <= 1e-6);
            }
            CHECK(bad == 0);
        }
    }
    check_texel_dispatches(on, before, 6);
}

// dst ← scale · src(:, idx) from a uint8 and a float src (rows a multiple of 4:
// the four-row path), and from a uint8 src one byte into its block (the
// buffer shader).
TEST_CASE("vulkan texel kernels: gather_cols against the host, texels on and off", "[vulkan][texel]") {
    NoValidationMessages guard;
    const bool on = GENERATE(true, false);
    TexelSwitch sw(on);
    const int64_t m = 12, cols = 9, n = 7;
    std::vector<uint8_t> sb(size_t((m + 4) * cols));
    std::vector<float> sf(size_t(m * cols));
    for (size_t e = 0; e < sb.size(); ++e) sb[e] = uint8_t((e * 53 + 7) % 256);
    for (size_t e = 0; e < sf.size(); ++e) sf[e] = float(e) * 0.25f - 3.0f;
    std::vector<float> ih = {9, 1, 4, 4, 2, 7, 3};
    Matrix idx = from_host(gpu(), n, 1, ih.data());
    Matrix u8 = from_host_u8(gpu(), m, cols, sb.data()), f = from_host(gpu(), m, cols, sf.data());
    Matrix u8b = from_host_u8(gpu(), m + 4, cols, sb.data());
    uint64_t before = vk::texel_kernel_count();
    for (int kind = 0; kind < 3; ++kind) {
        INFO((kind == 0 ? "uint8" : kind == 1 ? "float" : "uint8 at +1") << " src");
        Matrix dst = zeros(gpu(), m, n);
        if (kind == 2) {
            before = vk::texel_kernel_count();
            // rows 2..13 of a 16×9 src: one byte past a word, gather_cols.comp's one-element path
            gather_cols(u8b.view(1, 0, m, cols), idx, dst, 0.5f);
            CHECK(vk::texel_kernel_count() == before);
        } else {
            gather_cols(kind == 0 ? u8 : f, idx, dst, 0.5f);
        }
        std::vector<float> got = to_host(dst);
        size_t bad = 0;
        for (int64_t j = 0; j < n; ++j)
            for (int64_t i = 0; i < m; ++i) {
                const int64_t c = int64_t(ih[size_t(j)]) - 1;
                size_t e = size_t(i + c * m), e2 = size_t(i + 1 + c * (m + 4));
                double want = 0.5 * (kind == 0 ? double(sb[e]) : kind == 1 ? double(sf[e]) : double(sb[e2]));
                bad += got[size_t(i + j * m)] != want;  // one exact product
            }
        CHECK(bad == 0);
        if (kind == 1) check_texel_dispatches(on, before, 2);
    }
}

// y ← α·op(a)·x + β·y, one invocation per row, op(a) = a and aᵀ, x a row of
// a matrix (a step of 3), β = 0 and not. One invocation per row is lavapipe's
// choice for both layouts; a GPU reduces a row of aᵀ in a workgroup instead,
// without texels (an H200 ran 2 of the 4 calls on mv_tex), so the row variant
// is forced: every call can take the texel shader on every device with texel views.
TEST_CASE("vulkan texel kernels: mv against float64, texels on and off", "[vulkan][texel]") {
    NoValidationMessages guard;
    const bool on = GENERATE(true, false);
    TexelSwitch sw(on);
    struct RowVariant {
        RowVariant() { vk::force_gemm_variant(vk::GemmVariant::regblock); }
        ~RowVariant() { vk::force_gemm_variant(vk::GemmVariant::automatic); }
    } rows;
    const uint64_t before = vk::texel_kernel_count();
    const int64_t m = 37, n = 130;
    for (bool trans : {false, true}) {
        for (float beta : {0.0f, 0.5f}) {
            INFO("mv " << (trans ? "aᵀ" : "a") << " beta " << beta);
            Mat a = trans ? rnd(n, m, -1, 1, 6) : rnd(m, n, -1, 1, 6), xs = rnd(3, n, -1, 1, 7), y = rnd(m, 1, -1, 1, 8);
            Matrix op = trans ? a.m.t() : a.m, x = xs.m.view(1, 0, 1, n).t();
            mv(0.75f, op, x, beta, y.m);
            std::vector<float> got = to_host(y.m);
            size_t bad = 0;
            for (int64_t i = 0; i < m; ++i) {
                double s = 0, scale = 0;
                for (int64_t j = 0; j < n; ++j) {
                    double t = double(a.h[size_t(trans ? j + i * n : i + j * m)]) * xs.h[size_t(1 + 3 * j)];
                    s += t, scale += std::fabs(t);
                }
                double want = 0.75 * s + beta * y.h[size_t(i)];
                bad += !(std::fabs(got[size_t(i)] - want) <= 1e-6 * (scale + 1));
            }
            CHECK(bad == 0);
        }
    }
    check_texel_dispatches(on, before, 4);
}

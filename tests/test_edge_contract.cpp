// The edge-input contract of docs/lua-api.md ("Edge inputs"), on every usable
// device, against values written out by hand: NaN and ±Inf through each
// activation and derivative (the unary kernels and dense's fused epilogue),
// scal(0, x) with NaN and Inf in x, and log of a denormal.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

#include "core/device.hpp"
#include "core/ops.hpp"
#include "core/registry.hpp"
#include "every_device.hpp"

using namespace vela;
using vela::test::on_every_device;

namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

// got equals want element by element: NaN where NaN, otherwise within rel.
void check_same(const std::vector<float>& got, const std::vector<float>& want, double rel = 1e-6) {
    REQUIRE(got.size() == want.size());
    for (size_t k = 0; k < want.size(); ++k) {
        INFO("element " << k + 1 << ": got " << got[k] << ", want " << want[k]);
        if (std::isnan(want[k]))
            CHECK(std::isnan(got[k]));
        else if (std::isinf(want[k]))
            CHECK(got[k] == want[k]);
        else
            CHECK(std::fabs(double(got[k]) - double(want[k])) <= rel * std::fabs(double(want[k])) + 1e-30);
    }
}

// NaN, +Inf, −Inf, then ordinary values: 0, 2, −2.
const std::vector<float> kIn = {kNaN, kInf, -kInf, 0.0f, 2.0f, -2.0f};

}  // namespace

TEST_CASE("kernels: edge inputs, NaN and Inf through activations and derivatives", "[kernels][edge]") {
    struct Case {
        Unary op;
        std::vector<float> want;
    };
    const double t2 = std::tanh(2.0), s2 = 1.0 / (1.0 + std::exp(-2.0));
    const std::vector<Case> cases = {
        {Unary::relu, {kNaN, kInf, 0, 0, 2, 0}},
        {Unary::sigmoid, {kNaN, 1, 0, 0.5f, float(s2), float(1 - s2)}},
        {Unary::tanh, {kNaN, 1, -1, 0, float(t2), float(-t2)}},
        {Unary::relu_prime, {0, 1, 0, 0, 1, 0}},                       // from z: 1 where z > 0, else 0
        {Unary::sigmoid_prime, {kNaN, -kInf, -kInf, 0, -2, -6}},       // from a: a·(1 − a)
        {Unary::tanh_prime, {kNaN, -kInf, -kInf, 1, -3, -3}},          // from a: 1 − a²
    };
    on_every_device([&](Device& d) {
        for (const Case& c : cases) {
            INFO(unary_name(c.op));
            Matrix x = from_host(d, int64_t(kIn.size()), 1, kIn.data());
            Matrix y = empty(d, int64_t(kIn.size()), 1);
            unary(c.op, x, y);
            check_same(to_host(y), c.want);
            unary(c.op, x, x);  // in place, and (small) through the batched path
            check_same(to_host(x), c.want);
        }
        // dense's fused activations: w = 1×1 identity, bias 0, x the edge values.
        const float one = 1.0f, zero = 0.0f;
        Matrix w = from_host(d, 1, 1, &one), b = from_host(d, 1, 1, &zero);
        Matrix x = from_host(d, 1, int64_t(kIn.size()), kIn.data());
        Matrix y = empty(d, 1, int64_t(kIn.size()));
        for (const Case& c : cases) {
            Act act = c.op == Unary::relu ? Act::relu : c.op == Unary::sigmoid ? Act::sigmoid
                    : c.op == Unary::tanh ? Act::tanh : Act::count_;
            if (act == Act::count_) continue;
            INFO("dense with " << unary_name(c.op));
            dense(w, x, b, act, y);
            check_same(to_host(y), c.want, 1e-5);
        }
    });
}

TEST_CASE("kernels: edge inputs, scal(0, x) follows IEEE: 0·NaN and 0·Inf are NaN", "[kernels][edge]") {
    // As reference BLAS's x ← αx (and OpenBLAS since 0.3.27): NaN and Inf are
    // not hidden by a zero scale. (mm, mv and axpby with β = 0 do not read
    // the output: that is the rule for β, not for scal's α.)
    on_every_device([](Device& d) {
        for (int64_t n : {int64_t(6), int64_t(4099)}) {  // small (batched) and large, vec4 and tails
            INFO(n << " elements");
            std::vector<float> v(static_cast<size_t>(n), 3.0f);
            for (size_t k = 0; k < kIn.size(); ++k) v[k] = kIn[k];
            Matrix x = from_host(d, n, 1, v.data());
            scal(0.0f, x);
            std::vector<float> want(v.size(), 0.0f);
            want[0] = want[1] = want[2] = kNaN;  // 0·NaN, 0·Inf, 0·−Inf
            check_same(to_host(x), want);
            // A strided view: row 1 (NaN) is not touched, row 0 (5) becomes 0.
            std::vector<float> h(size_t(2 * n));
            for (int64_t k = 0; k < n; ++k) h[size_t(2 * k)] = 5.0f, h[size_t(2 * k + 1)] = kNaN;
            Matrix m = from_host(d, 2, n, h.data());
            scal(0.0f, row(m, 0));
            std::vector<float> got = to_host(m), w2(size_t(2 * n), kNaN);
            for (int64_t k = 0; k < n; ++k) w2[size_t(2 * k)] = 0.0f;
            check_same(got, w2);
        }
    });
}

TEST_CASE("kernels: edge inputs, log of denormals, zero and negatives", "[kernels][edge]") {
    // 1e-40 and the smallest denormal 2^−149: logs −92.1034037 and −103.2789299.
    float tiny;
    const uint32_t bits = 1;
    std::memcpy(&tiny, &bits, 4);
    const std::vector<float> in = {1e-40f, tiny, 1.0e-38f, 0.0f, -1.0f, kInf, kNaN, 1.0f};
    const std::vector<float> want = {float(std::log(double(1e-40f))), float(-149 * std::log(2.0)),
                                     float(std::log(double(1.0e-38f))), -kInf, kNaN, kInf, kNaN, 0.0f};
    on_every_device([&](Device& d) {
        // The contract: exact where the device keeps denormals in arithmetic;
        // where it flushes them to zero (the Vulkan specification allows it,
        // SwiftShader does), a denormal is 0 to every kernel and its log −Inf.
        // Which one this device is, is seen, not assumed: 1·1e-40.
        Matrix probe = from_host(d, 1, 1, &in[0]);
        scal(1.0f, probe);
        bool flushes = to_host(probe)[0] == 0.0f;
        INFO(d.name() << (flushes ? " flushes denormals" : " keeps denormals"));
        std::vector<float> w = want;
        if (flushes) w[0] = w[1] = w[2] = -kInf;  // 1e-38 is below 2^−126 too
        Matrix x = from_host(d, int64_t(in.size()), 1, in.data());
        Matrix y = empty(d, int64_t(in.size()), 1);
        unary(Unary::log, x, y);
        check_same(to_host(y), w, 1e-6);
        if (d.name() == "cpu") CHECK_FALSE(flushes);  // the host keeps them
    });
}

// The cpu's own gelu and gelu′ (src/cpu/vmath.hpp: the tanh form in double, not
// opmath's float pairs) in every branch of that code, against float64 at the op
// table's 2-ulp bound, with the exact results at ±14, ±inf and NaN; and the
// fused backward's stride-1 loops (one per ISA) against its strided loop, bit
// for bit, for every activation.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "core/ops.hpp"
#include "cpu/cpu_device.hpp"
#include "kernel_reference.hpp"

using namespace vela;

namespace {

// Distance in float32 ulps between got and the float64 value want.
double ulps(float got, double want) {
    float w = float(want);
    double spacing = double(std::nextafter(std::fabs(w), INFINITY)) - double(std::fabs(w));
    return std::fabs(double(got) - want) / spacing;
}

// n evenly spaced floats from lo to hi.
void grid(std::vector<float>& v, double lo, double hi, int n) {
    for (int k = 0; k <= n; k++) v.push_back(float(lo + (hi - lo) * k / n));
}

std::vector<float> run(Unary op, const std::vector<float>& in) {
    Device& d = cpu_device();
    Matrix x = from_host(d, int64_t(in.size()), 1, in.data());
    Matrix y = empty(d, int64_t(in.size()), 1);
    unary(op, x, y);
    return to_host(y);
}

}  // namespace

TEST_CASE("cpu: gelu and gelu' within 2 ulp of float64 in each branch of the double path", "[cpu]") {
    // The regions of vmath.hpp's code: 2u ≥ 0 (σ = 1/(1 + E)), 2u < 0 (σ = E/(1 + E)),
    // tiny |x|, gelu′'s Taylor window about z0 (|z − z0| < 1/64) and just outside it,
    // the tails up to the ±14 clamp where e^−|2u| spans its whole range.
    struct Region {
        const char* name;
        std::vector<float> in;
    };
    std::vector<Region> regions(6);
    regions[0].name = "2u >= 0";
    grid(regions[0].in, 0.0, 14.0, 20000);
    regions[1].name = "2u < 0, down to where gelu leaves the normal floats";
    grid(regions[1].in, -13.0, -1e-6, 20000);
    regions[2].name = "tiny |x|";
    for (double m = 1e-37; m < 1e-3; m *= 1.37) regions[2].in.push_back(float(m)), regions[2].in.push_back(float(-m));
    regions[3].name = "gelu' Taylor window";
    grid(regions[3].in, -0.7524614 - 1.0 / 64, -0.7524614 + 1.0 / 64, 20000);
    for (float x = -0.7524614f - 0x1p-14f; x < -0.7524614f + 0x1p-14f; x = std::nextafter(x, 0.0f))
        regions[3].in.push_back(x);
    regions[4].name = "just outside the Taylor window";
    grid(regions[4].in, -0.7524614 - 0.05, -0.7524614 - 1.0 / 64, 5000);
    grid(regions[4].in, -0.7524614 + 1.0 / 64, -0.7524614 + 0.05, 5000);
    regions[5].name = "next to the clamp at +-14";
    for (float e : {14.0f, -14.0f, 10.0f, -10.0f})
        for (int k = -50; k <= 50; k++) regions[5].in.push_back(e + float(k) * 0x1p-19f);
    for (Unary op : {Unary::gelu, Unary::gelu_prime}) {
        const ref::UnaryRef r = ref::unary(op);
        for (const Region& reg : regions) {
            INFO(unary_name(op) << ", " << reg.name);
            const std::vector<float> got = run(op, reg.in);
            size_t checked = 0, bad = 0;
            for (size_t k = 0; k < reg.in.size(); k++) {
                const double want = r.f(reg.in[k]);
                if (!(std::fabs(want) >= double(std::numeric_limits<float>::min()))) continue;  // not a normal float
                checked++;
                const double u = ulps(got[k], want);
                if (u > 2.0 && ++bad <= 5) {
                    INFO("x = " << reg.in[k] << ": got " << got[k] << ", float64 " << want << ", " << u << " ulp");
                    CHECK(u <= 2.0);
                }
            }
            CHECK(bad == 0);
            CHECK(checked > reg.in.size() / 2);
        }
    }
    // Beyond the clamp and the special values, by hand: gelu is x or −0, gelu′ 1 or −0.
    const float inf = INFINITY;
    const std::vector<float> in = {14.5f, 100.0f, 1e30f, inf, -14.5f, -100.0f, -1e30f, -inf, NAN, 0.0f, -0.0f};
    const std::vector<float> g = run(Unary::gelu, in), gp = run(Unary::gelu_prime, in);
    const std::vector<float> want_g = {14.5f, 100.0f, 1e30f, inf, -0.0f, -0.0f, -0.0f, -0.0f, NAN, 0.0f, -0.0f};
    const std::vector<float> want_gp = {1, 1, 1, 1, -0.0f, -0.0f, -0.0f, -0.0f, NAN, 0.5f, 0.5f};
    for (size_t k = 0; k < in.size(); k++) {
        INFO("x = " << in[k]);
        for (auto [got, want] : {std::pair{g[k], want_g[k]}, std::pair{gp[k], want_gp[k]}}) {
            if (std::isnan(want)) {
                CHECK(std::isnan(got));
            } else {
                CHECK(got == want);
                CHECK(std::signbit(got) == std::signbit(want));
            }
        }
    }
}

TEST_CASE("cpu: every fused backward's stride-1 loop and strided loop agree bit for bit", "[cpu]") {
    Device& d = cpu_device();
    std::vector<float> x = {0.0f, -0.0f, 1e-30f, -1e-30f, 0.625f, -0.625f, -0.7524614f, 14.0f, -14.0f,
                            87.0f, -87.0f, 1e30f, -1e30f, INFINITY, -INFINITY, NAN};
    for (int k = 0; k <= 400; k++) x.push_back(-20.0f + 0.1f * float(k) + 0.0137f);
    const int64_t n = int64_t(x.size());  // odd: the vector loops have a tail
    std::vector<float> da(x.size());
    for (size_t k = 0; k < da.size(); k++) da[k] = float(int(k % 11) - 5) * 0.37f;
    // The same values as row 1 of 3×n matrices: views whose elements are 3 floats apart.
    std::vector<float> wx(size_t(3 * n), 0.5f), wda(size_t(3 * n), 0.5f);
    for (int64_t j = 0; j < n; j++) wx[size_t(1 + 3 * j)] = x[size_t(j)], wda[size_t(1 + 3 * j)] = da[size_t(j)];
    Matrix mx = from_host(d, n, 1, x.data()), mda = from_host(d, n, 1, da.data());
    Matrix sx = view(from_host(d, 3, n, wx.data()), 1, 0, 1, n);
    Matrix sda = view(from_host(d, 3, n, wda.data()), 1, 0, 1, n);
    for (uint8_t i = 0; i < uint8_t(Act::count_); i++) {
        const Act act = Act(i);
        INFO(act_backward_name(act));
        Matrix out = empty(d, n, 1);
        Matrix out_strided = view(empty(d, 3, n), 1, 0, 1, n);
        act_backward(act, mda, mx, out);
        act_backward(act, sda, sx, out_strided);
        const std::vector<float> a = to_host(out), b = to_host(out_strided);
        REQUIRE(a.size() == b.size());
        CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
    }
}

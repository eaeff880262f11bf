// The instruction-set paths of the cpu's elementwise loops (src/cpu/isa.hpp):
// every path this CPU runs (x86-64-v4 where it has AVX-512, x86-64-v3 with
// AVX2 + FMA, the baseline always), called directly whatever path the process
// took, against the op table's float64 references (vela::unary_ref,
// binary_ref: no kernel code) within each op's ulp bound; and VELA_CPU_ISA's
// choice and refusals. tests/lua/test_cpu_isa.lua runs the binary under each.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/opmath.hpp"
#include "core/ops.hpp"
#include "cpu/cpu_device.hpp"
#include "cpu/cpu_kernels.hpp"
#include "cpu/isa.hpp"
#include "kernel_reference.hpp"

using namespace vela;
using namespace vela::cpu;

namespace {

// |got − want| in ulps of float32 at `scale` (≥ |want|: where a formula's terms
// cancel, the sum of their magnitudes, kernel_reference.hpp's error scale).
double ulps_at(float got, double want, double scale) {
    if (std::isnan(want)) return std::isnan(got) ? 0 : INFINITY;
    if (std::isinf(want)) return double(got) == want ? 0 : INFINITY;
    const float s = float(std::fmax(std::fabs(want), scale));
    const double spacing = double(std::nextafter(s, INFINITY)) - double(s);
    return std::fabs(double(got) - want) / spacing;
}

// The bound of each op in ulps of its error scale, over every path: one
// rounding (or none) 0.5; two or more roundings, by their count; opmath's float
// transcendentals 3 (worst seen: exp 0.92, tanh 1.21, sigmoid 2.05, log 0.56);
// elu, gelu, softplus and their derivatives 2 (the op table's contract; worst
// seen 0.74).
double bound(Unary op) {
    switch (op) {
        case Unary::relu: case Unary::relu_prime: case Unary::leaky_relu_prime: case Unary::elu_prime:
        case Unary::abs: case Unary::sqr: case Unary::sqrt: case Unary::inv:
            return 0.5;
        case Unary::leaky_relu: return 1.0;  // 0.01f is 0.01 within 0.34 ulp, then one rounding
        case Unary::tanh_prime: return 1.5;  // 1 − a·a
        case Unary::sigmoid_prime: return 2.0;  // a·(1 − a)
        case Unary::linear_frac: return 3.0;  // two products, two sums, a quotient
        case Unary::exp: case Unary::log: case Unary::tanh: case Unary::sigmoid: return 3.0;
        default: return 2.0;
    }
}

// The op's range (kernel_reference.hpp), densely, then every float of both
// signs in steps of an odd number of ulps: all exponents, about 2·10⁵ inputs.
std::vector<float> inputs(Unary op) {
    const ref::UnaryRef r = ref::unary(op);
    std::vector<float> v = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-30f, -1e-30f, 0.625f, -0.625f, 88.0f, -88.0f};
    for (int k = 0; k <= 20000; k++) v.push_back(r.lo + (r.hi - r.lo) * float(k) / 20000.0f + 1.37e-5f);
    for (uint32_t bits = 0; bits < 0x7F800000u; bits += 20011) {
        float f;
        std::memcpy(&f, &bits, sizeof f);
        v.push_back(f), v.push_back(-f);
    }
    return v;
}

std::vector<Isa> paths() {
    std::vector<Isa> p;
    for (int k = 0; k < kIsaCount; k++)
        if (isa_supported(Isa(k))) p.push_back(Isa(k));
    return p;
}

}  // namespace

TEST_CASE("cpu isa: every path this CPU runs holds each op within its ulp bound of float64", "[cpu][isa]") {
    REQUIRE(isa_supported(Isa::base));
    for (Isa path : paths()) {
        for (uint8_t i = 0; i < uint8_t(Unary::count_); i++) {
            const Unary op = Unary(i);
            INFO(isa_describe(path) << " " << unary_name(op));
            const std::vector<float> in = inputs(op);
            std::vector<float> got(in.size()), base(in.size());
            unary_run_at(path, op, in.data(), got.data(), int64_t(in.size()), ref::kUnaryParams);
            unary_run_at(Isa::base, op, in.data(), base.data(), int64_t(in.size()), ref::kUnaryParams);
            const ref::UnaryRef r = ref::unary(op);
            double worst = 0;
            size_t checked = 0, bad = 0;
            for (size_t k = 0; k < in.size(); k++) {
                const double want = r.f(in[k]);
                // Where the result is a normal float (subnormal results have absolute, not relative, accuracy),
                // and not at ±inf where the reference is an indeterminate form (gelu: −inf·0; tests/test_edge_contract.cpp
                // holds the infinities); linear_frac's float32 a·x overflows beyond 1e37 (the formula, not the path).
                if (!(std::fabs(want) >= double(std::numeric_limits<float>::min())) && !std::isnan(want)) continue;
                if (std::isinf(in[k]) && std::isnan(want)) continue;
                if (op == Unary::linear_frac && std::fabs(in[k]) > 1e37f) continue;
                const double u = ulps_at(got[k], want, r.scale ? r.scale(in[k]) : 0.0);
                checked++;
                worst = std::max(worst, u);
                if (u > bound(op) && ++bad <= 5) {
                    INFO("x = " << in[k] << ": got " << got[k] << ", float64 " << want << ", " << u << " ulp");
                    CHECK(u <= bound(op));
                }
            }
            CHECK(bad == 0);
            CHECK(checked > in.size() / 8);
            // -ffp-contract=off: every path rounds as the baseline, so a result never depends on the CPU.
            CHECK(std::memcmp(got.data(), base.data(), got.size() * sizeof(float)) == 0);
            WARN(isa_describe(path) << " " << unary_name(op) << ": worst " << worst << " ulp (bound " << bound(op)
                                    << ") over " << checked << " inputs");
        }
    }
}

// src/cpu/vmath.hpp's exp and sigmoid drop steps of opmath's that a CPU does
// not need; the shaders compute opmath's. Every path gives opmath's bits.
TEST_CASE("cpu isa: the cpu's exp and sigmoid are opmath's, bit for bit, on every path", "[cpu][isa]") {
    for (Unary op : {Unary::exp, Unary::sigmoid}) {
        const std::vector<float> in = inputs(op);
        std::vector<float> want(in.size());
        for (size_t k = 0; k < in.size(); k++)
            want[k] = op == Unary::exp ? opmath::exp_f(in[k]) : opmath::sigmoid_f(in[k]);
        for (Isa path : paths()) {
            INFO(isa_describe(path) << " " << unary_name(op));
            std::vector<float> got(in.size());
            unary_run_at(path, op, in.data(), got.data(), int64_t(in.size()), nullptr);
            size_t bad = 0;
            for (size_t k = 0; k < in.size(); k++) {
                const bool same = std::isnan(want[k]) ? std::isnan(got[k])
                                                       : std::memcmp(&got[k], &want[k], sizeof(float)) == 0;
                if (!same && ++bad <= 5) {
                    INFO("x = " << in[k] << ": got " << got[k] << ", opmath " << want[k]);
                    CHECK(same);
                }
            }
            CHECK(bad == 0);
        }
    }
}

TEST_CASE("cpu isa: softmax gives the same bits on every path, within 3 ulp of float64", "[cpu][isa]") {
    // Columns of lengths around each path's vector widths and tails, values
    // spread over [−40, 40) (so some e^(x − max) are tiny) and a column with ties.
    for (int64_t n : {1, 3, 16, 17, 33, 512, 1001}) {
        std::vector<float> x(size_t(n), 0.0f);
        for (int64_t i = 0; i < n; i++) x[size_t(i)] = float(-40.0 + 80.0 * double((i * 7919) % 1009) / 1009.0);
        if (n == 33) x[5] = x[20] = 39.0f;
        // float64 of e^(x − m) / Σ, with x − m rounded to float as the kernel's
        // formula has it (its rounding alone moves e^(x − m) by up to 40 ulp here)
        float m = -INFINITY;
        double s = 0;
        for (float v : x) m = std::fmax(m, v);
        for (float v : x) s += std::exp(double(v - m));
        std::vector<float> base(x.size());
        softmax_col_at(Isa::base, x.data(), base.data(), n);
        for (Isa path : paths()) {
            INFO(isa_describe(path) << ", n = " << n);
            std::vector<float> got(x.size());
            softmax_col_at(path, x.data(), got.data(), n);
            CHECK(std::memcmp(got.data(), base.data(), x.size() * sizeof(float)) == 0);
            double worst = 0;
            for (size_t i = 0; i < x.size(); i++) {
                const double want = std::exp(double(x[i] - m)) / s;
                if (want >= 0x1p-126) worst = std::fmax(worst, ulps_at(got[i], want, want));
            }
            CHECK(worst <= 3.0);
        }
    }
    // A NaN past the first 16 rows (in the max's lanes): NaN in every row, on every path.
    std::vector<float> x(100, 1.0f), got(100);
    x[57] = NAN;
    for (Isa path : paths()) {
        softmax_col_at(path, x.data(), got.data(), 100);
        for (float v : got) CHECK(std::isnan(v));
    }
}

TEST_CASE("cpu isa: every path's binary ops and fused backward against float64", "[cpu][isa]") {
    std::vector<float> a, b;
    for (int k = 0; k < 4001; k++) {
        const float u = -50.0f + 0.025f * float(k) + 3.1e-4f;
        a.push_back(u), b.push_back(std::ldexp(1.0f + 0.37f * float(k % 7), (k % 41) - 20) * (k % 3 ? 1.0f : -1.0f));
    }
    for (float s : {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 2.0f, 3.0f}) a.push_back(s), b.push_back(s);
    const int64_t n = int64_t(a.size());
    for (Isa path : paths()) {
        for (uint8_t i = 0; i < uint8_t(Binary::count_); i++) {
            const Binary op = Binary(i);
            INFO(isa_describe(path) << " " << binary_name(op));
            std::vector<float> got(a.size());
            binary_run_at(path, op, a.data(), b.data(), got.data(), n);
            const double lim = op == Binary::pow ? 3.0 : 0.5;  // the rest correctly rounded
            size_t bad = 0;
            for (size_t k = 0; k < a.size(); k++) {
                const double want = ref::binary(op, a[k], b[k]);
                if (std::fabs(want) < double(std::numeric_limits<float>::min()) && want != 0) continue;
                if (std::fabs(want) > double(std::numeric_limits<float>::max()) && !std::isinf(want)) continue;
                // pow: e^(b·ln|a|) or repeated products, relative error about |b·ln a|·2⁻²⁴ (lua-api.md).
                const double scale =
                    op == Binary::pow ? std::fabs(want) * (1 + std::fabs(double(b[k]) * std::log(std::fabs(a[k])))) : 0.0;
                const double u = ulps_at(got[k], want, std::isfinite(scale) ? scale : 0.0);
                if (u > lim && ++bad <= 5) {
                    INFO(a[k] << ", " << b[k] << ": got " << got[k] << ", float64 " << want << ", " << u << " ulp");
                    CHECK(u <= lim);
                }
            }
            CHECK(bad == 0);
        }
        // δ = da · act′: the derivative's bound plus the product's rounding.
        for (uint8_t i = 1; i < uint8_t(Act::count_); i++) {
            const Act act = Act(i);
            INFO(isa_describe(path) << " " << act_name(act) << "_backward");
            const Unary prime = act_prime(act);
            const ref::UnaryRef r = ref::unary(prime);
            std::vector<float> x, da;
            for (int k = 0; k <= 3000; k++) {
                x.push_back(r.lo + (r.hi - r.lo) * float(k) / 3000.0f + 1.1e-5f);
                da.push_back(0.5f + 0.001f * float(k));
            }
            std::vector<float> got(x.size());
            act_backward_run_at(path, act, da.data(), x.data(), got.data(), int64_t(x.size()));
            size_t bad = 0;
            for (size_t k = 0; k < x.size(); k++) {
                const double want = double(da[k]) * r.f(x[k]);
                if (std::fabs(want) < double(std::numeric_limits<float>::min())) continue;
                const double u = ulps_at(got[k], want, r.scale ? double(da[k]) * r.scale(x[k]) : 0.0);
                if (u > bound(prime) + 1.0 && ++bad <= 5) {
                    INFO("x = " << x[k] << ", da = " << da[k] << ": got " << got[k] << ", float64 " << want);
                    CHECK(u <= bound(prime) + 1.0);
                }
            }
            CHECK(bad == 0);
        }
    }
}

TEST_CASE("cpu isa: VELA_CPU_ISA chooses a path the CPU has and refuses one it lacks", "[cpu][isa]") {
    // Unset: the widest the CPU has.
    CHECK(choose_isa(nullptr, true, true).isa == Isa::v4);
    CHECK(choose_isa("", true, false).isa == Isa::v3);
    CHECK(choose_isa(nullptr, false, false).isa == Isa::base);
    CHECK(choose_isa(nullptr, true, false).how == "detected");
    // Set: that path, said.
    IsaChoice c = choose_isa("base", true, true);
    CHECK(c.isa == Isa::base);
    CHECK(c.how == "VELA_CPU_ISA=base");
    CHECK(c.error.empty());
    CHECK(choose_isa("v3", true, true).isa == Isa::v3);
    CHECK(choose_isa("v4", true, true).isa == Isa::v4);
    // Refused: what it asked, what the CPU lacks, what it has.
    CHECK(choose_isa("v4", true, false).error ==
          "VELA_CPU_ISA=v4 asks for the x86-64-v4 (AVX-512 + FMA, 16 lanes) loops but this CPU lacks AVX-512 "
          "(F, DQ, BW, VL) (it runs v3, base)");
    CHECK(choose_isa("v3", false, false).error ==
          "VELA_CPU_ISA=v3 asks for the x86-64-v3 (AVX2 + FMA, 8 lanes) loops but this CPU lacks AVX2, FMA or BMI2 "
          "(it runs base)");
    CHECK(choose_isa("avx2", true, false).error ==
          "VELA_CPU_ISA is 'avx2' but must be base, v3 or v4 (this CPU runs v3, base; unset it to take the best)");
    // This process: the variable's path or the detected one, and one this CPU supports.
    CHECK(isa_supported(isa()));
    CHECK(isa() == isa_choice().isa);
}

// Large results go through a block in L1 and streaming stores (isa.hpp,
// stream_min); at a threshold of 1 every dense call takes that path here. It
// must give the plain loops' bits: an odd length (a tail shorter than a vector
// and than a block), a view starting one float in (unaligned streaming
// destination), in place, and more than one block per pool task.
TEST_CASE("cpu isa: the streaming-store path gives the plain loops' bits", "[cpu][isa]") {
    Device& d = cpu_device();
    const int64_t n = 3 * 32768 + 13;  // three pool tasks on 2+ threads
    std::vector<float> xs(size_t(n + 1)), bs(size_t(n + 1));
    for (int64_t k = 0; k <= n; k++) {
        xs[size_t(k)] = -6.0f + 12.0f * float(k) / float(n) + 1e-4f;
        bs[size_t(k)] = 0.5f + float(k % 97) * 0.01f;
    }
    const Matrix xfull = from_host(d, n + 1, 1, xs.data()), bfull = from_host(d, n + 1, 1, bs.data());
    const Matrix x = view(xfull, 1, 0, n, 1), b = view(bfull, 1, 0, n, 1);  // one float in: unaligned
    auto run = [&](int64_t threshold, auto fn) {
        const int64_t before = set_stream_min(threshold);
        Matrix yfull = from_host(d, n + 1, 1, xs.data());
        fn(view(yfull, 1, 0, n, 1));
        set_stream_min(before);
        return to_host(yfull);
    };
    auto same = [&](auto fn) {
        std::vector<float> plain = run(int64_t(1) << 60, fn), streamed = run(1, fn);
        CHECK(std::memcmp(plain.data(), streamed.data(), plain.size() * sizeof(float)) == 0);
    };
    for (Unary op : {Unary::relu, Unary::sqr, Unary::inv, Unary::linear_frac}) {  // the memory-bound ones stream
        INFO(unary_name(op));
        same([&](const Matrix& y) { unary(op, x, y, ref::kUnaryParams); });
        same([&](const Matrix& y) { unary(op, y, y, ref::kUnaryParams); });  // in place
    }
    same([&](const Matrix& y) { binary(Binary::add, x, b, y); });
    same([&](const Matrix& y) { binary(Binary::div, y, b, y); });  // in place
    same([&](const Matrix& y) { act_backward(Act::tanh, b, x, y); });
    // and against the reference, so that "the same" is not "the same wrong"
    std::vector<float> got = run(1, [&](const Matrix& y) { binary(Binary::add, x, b, y); });
    for (int64_t k = 1; k <= n; k += 1013)
        CHECK(got[size_t(k)] == float(double(xs[size_t(k)]) + double(bs[size_t(k)])));
    CHECK(stream_min() == int64_t(8) << 20);
}

// add, sub, mul, div and relu write a large result straight out with
// streaming stores (elementwise.cpp, bin_direct and unary_direct): on every
// path the CPU has, from every alignment of the output and of the inputs, in
// place too, and at lengths that leave no whole vector, they give the plain
// loops' bits.
TEST_CASE("cpu isa: the direct streaming loops of add, sub, mul, div and relu give the plain loops' bits",
          "[cpu][isa]") {
    const int64_t len = 300;
    std::vector<float> a(size_t(len + 64)), b(size_t(len + 64));
    for (size_t k = 0; k < a.size(); k++) {
        a[k] = -7.0f + 0.0371f * float(k) + 1e-5f;
        b[k] = (k % 5 ? 1.0f : -1.0f) * std::ldexp(1.0f + 0.11f * float(k % 9), int(k % 13) - 6);
    }
    a[7] = NAN, b[9] = INFINITY, b[11] = 0.0f;
    for (Isa path : paths()) {
        for (Binary op : {Binary::add, Binary::sub, Binary::mul, Binary::div}) {
            INFO(isa_describe(path) << " " << binary_name(op));
            for (int64_t off = 0; off < 17; off++) {
                for (int64_t n : {int64_t(0), int64_t(1), int64_t(5), int64_t(15), int64_t(16), int64_t(33), len}) {
                    INFO("output offset " << off << ", " << n << " floats");
                    alignas(64) float plain[len + 64], direct[len + 64];
                    const float *pa = a.data() + (off * 3) % 17, *pb = b.data() + (off * 5) % 13;
                    std::fill(plain, plain + len + 64, -1.0f), std::fill(direct, direct + len + 64, -1.0f);
                    binary_run_at(path, op, pa, pb, plain + off, n);
                    REQUIRE(binary_stream_run_at(path, op, pa, pb, direct + off, n));
                    CHECK(std::memcmp(plain, direct, sizeof(plain)) == 0);
                    // in place: c = a
                    std::copy(pa, pa + n, direct + off);
                    binary_stream_run_at(path, op, direct + off, pb, direct + off, n);
                    CHECK(std::memcmp(plain, direct, sizeof(plain)) == 0);
                }
            }
        }
        CHECK_FALSE(binary_stream_run_at(path, Binary::pow, a.data(), b.data(), a.data(), 1));  // none: nothing written
        CHECK(a[0] == -7.0f + 1e-5f);
        // relu: what it clears (negatives, −0, −inf, tiny negatives) and keeps (NaN of either sign, +0, +inf)
        std::vector<float> x(a);
        const float edges[] = {-0.0f, 0.0f, -INFINITY, INFINITY, NAN, -NAN, -1e-45f, 1e-45f, -3.0f, 2.5f};
        for (size_t k = 0; k < x.size(); k += 7) x[k] = edges[(k / 7) % 10];
        for (int64_t off = 0; off < 17; off++) {
            for (int64_t n : {int64_t(0), int64_t(1), int64_t(5), int64_t(15), int64_t(16), int64_t(33), len}) {
                INFO(isa_describe(path) << " relu, output offset " << off << ", " << n << " floats");
                alignas(64) float plain[len + 64], direct[len + 64];
                const float* px = x.data() + (off * 3) % 17;
                std::fill(plain, plain + len + 64, -1.0f), std::fill(direct, direct + len + 64, -1.0f);
                unary_run_at(path, Unary::relu, px, plain + off, n, nullptr);
                REQUIRE(unary_stream_run_at(path, Unary::relu, px, direct + off, n));
                CHECK(std::memcmp(plain, direct, sizeof(plain)) == 0);
                for (int64_t k = 0; k < n; k++) {  // and against the rule itself
                    const float v = px[k], want = v != v ? v : (v > 0.0f ? v : 0.0f);
                    CHECK(std::memcmp(&direct[off + k], &want, 4) == 0);
                }
            }
        }
        CHECK_FALSE(unary_stream_run_at(path, Unary::tanh, a.data(), a.data(), 1));
    }
}

// The cpu's buffers from 4 MiB on start at a 2 MiB boundary (cpu_device.cpp,
// map_pages: what transparent huge pages need), whole and usable; below that
// the 64-byte alignment of the small ones.
TEST_CASE("cpu: large buffers start at a 2 MiB boundary", "[cpu][isa]") {
    Device& d = cpu_device();
    for (int64_t n : {int64_t(1) << 20, (int64_t(1) << 22) + 7, int64_t(3) << 21}) {
        INFO(n << " floats");
        const Matrix m = empty(d, n, 1);
        const auto at = reinterpret_cast<uintptr_t>(cpu::base(m));
        CHECK(at % (n * 4 >= (int64_t(4) << 20) ? (uintptr_t(2) << 20) : 64) == 0);
        fill(m, 2.5f);
        const std::vector<float> h = to_host(m);
        CHECK((h.front() == 2.5f && h.back() == 2.5f && h[size_t(n / 2)] == 2.5f));
    }
}

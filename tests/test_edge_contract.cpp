// The edge-input contract of docs/lua-api.md ("Edge inputs"), on every usable
// device, against values written out by hand: NaN and ±Inf through each
// activation and derivative (the unary kernels and dense's fused epilogue),
// scal(0, x) with NaN and Inf in x, log of a denormal, and labels and column
// indices that are not integers in range (core/index_check.hpp).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/device.hpp"
#include "core/error.hpp"
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

namespace {

// The error the contract promises, caught from `f`; "" when f does not throw.
std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const vela::Error& e) {
        return e.what();
    }
    return "";
}

// softmax_xent's loss and dz for column j in float64, with 1-based label c.
void xent_ref(const std::vector<float>& z, int64_t k, int64_t j, int64_t c, double scale, double& loss,
              std::vector<double>& dz) {
    double m = -INFINITY, s = 0;
    for (int64_t i = 0; i < k; ++i) m = std::max(m, double(z[size_t(j * k + i)]));
    for (int64_t i = 0; i < k; ++i) s += std::exp(double(z[size_t(j * k + i)]) - m);
    loss = -(double(z[size_t(j * k + c - 1)]) - m - std::log(s));
    dz.assign(size_t(k), 0);
    for (int64_t i = 0; i < k; ++i)
        dz[size_t(i)] = (std::exp(double(z[size_t(j * k + i)]) - m) / s - (i == c - 1 ? 1 : 0)) * scale;
}

// Runs `call` (which uses bad indices) and checks the contract: on cpu it
// throws `want` at once and leaves `out` as it was; on a Vulkan device it
// queues without a host wait, the next read throws `want` inside "an earlier
// call on <device> failed", and a second read succeeds. Returns out's values
// after the call (the caller checks the good columns and the NaN ones).
std::vector<float> expect_index_error(Device& d, const std::function<void()>& call, const Matrix& out,
                                      const std::string& want) {
    INFO("expected: " << want);
    std::vector<float> before = to_host(out);
    d.sync();
    const uint64_t waits = d.stats().host_waits;
    std::string at_call = error_of(call);
    if (d.name() == "cpu") {
        CHECK(at_call == want);
        CHECK(to_host(out) == before);  // nothing written
        return before;
    }
    CHECK(at_call.empty());
    CHECK(d.stats().host_waits == waits);  // the check added no wait
    std::vector<float> got;
    std::string at_read = error_of([&] { got = to_host(out); });
    CHECK(at_read.find("an earlier call on " + d.name() + " failed: " + want + ";") == 0);
    CHECK(at_read.find("NaN") != std::string::npos);
    CHECK(error_of([&] { got = to_host(out); }).empty());  // reported once; the device goes on
    CHECK(error_of([&] { d.sync(); }).empty());
    return got;
}

bool is_nan(float v) { return v != v; }

}  // namespace

TEST_CASE("kernels: edge inputs, labels that are not class indices are an error naming the first position",
          "[kernels][edge]") {
    const float bad_values[] = {2.5f, kNaN, 0.0f, -1.0f, 4.0f, kInf, -kInf, 1e30f, 1.0000001f};
    on_every_device([&](Device& d) {
        for (int64_t k : {int64_t(3), int64_t(5000)}) {  // one invocation per column, and the long-column passes
            for (float bad : bad_values) {
                const float badv = bad == 4.0f ? float(k + 1) : bad;  // one past the last class
                INFO(k << " classes, bad label " << badv);
                const int64_t n = 300;  // several workgroups of columns
                std::vector<float> zh(static_cast<size_t>(k * n)), lab(static_cast<size_t>(n));
                for (size_t e = 0; e < zh.size(); ++e) zh[e] = float((e * 37) % 11) * 0.25f - 1.0f;
                for (int64_t j = 0; j < n; ++j) lab[size_t(j)] = float(1 + (j * 7) % k);
                lab[250] = badv, lab[123] = badv;  // the first bad position is 124
                Matrix z = from_host(d, k, n, zh.data()), labels = from_host(d, 1, n, lab.data());
                Matrix dz = zeros(d, k, n), loss = zeros(d, 1, n);
                std::vector<float> got = expect_index_error(
                    d, [&] { softmax_xent(z, labels, loss, 0.5f, dz); }, dz,
                    "softmax_xent: labels at position 124 is not a class index (an integer in 1.." +
                        std::to_string(k) + ")");
                if (d.name() == "cpu") continue;
                std::vector<float> lossv = to_host(loss);
                for (int64_t j : {int64_t(0), int64_t(122), int64_t(123), int64_t(250), int64_t(299)}) {
                    INFO("column " << j + 1);
                    if (j == 123 || j == 250) {
                        CHECK(is_nan(lossv[size_t(j)]));
                        for (int64_t i = 0; i < k; i += std::max<int64_t>(1, k / 7)) CHECK(is_nan(got[size_t(j * k + i)]));
                        continue;
                    }
                    double lr;
                    std::vector<double> dr;
                    xent_ref(zh, k, j, int64_t(lab[size_t(j)]), 0.5, lr, dr);
                    CHECK(std::fabs(lossv[size_t(j)] - lr) <= 1e-5 * std::max(1.0, std::fabs(lr)));
                    for (int64_t i = 0; i < k; i += std::max<int64_t>(1, k / 7))
                        CHECK(std::fabs(got[size_t(j * k + i)] - dr[size_t(i)]) <= 1e-6);
                }
            }
        }
        // uint8 labels: 0 and k + 1 are bad; without the optional loss.
        const uint8_t l8[] = {1, 2, 3, 0, 4};
        std::vector<float> zh(15, 0.5f);
        Matrix z = from_host(d, 3, 5, zh.data()), labels = from_host_u8(d, 1, 5, l8), dz = zeros(d, 3, 5);
        expect_index_error(d, [&] { softmax_xent(z, labels, Matrix{}, 1.0f, dz); }, dz,
                           "softmax_xent: labels at position 4 is not a class index (an integer in 1..3)");
    });
}

TEST_CASE("kernels: edge inputs, column indices out of range are an error naming the first position",
          "[kernels][edge]") {
    const float bad_values[] = {1.5f, kNaN, 0.0f, -2.0f, 7.0f, kInf, 4294967296.0f};
    on_every_device([&](Device& d) {
        for (bool u8 : {false, true}) {
            const int64_t m = 4, cols = 6, n = 700;
            std::vector<float> sh(size_t(m * cols));
            std::vector<uint8_t> sb(sh.size());
            for (size_t e = 0; e < sh.size(); ++e) sh[e] = float(e + 1), sb[e] = uint8_t(e + 1);
            Matrix src = u8 ? from_host_u8(d, m, cols, sb.data()) : from_host(d, m, cols, sh.data());
            for (float bad : bad_values) {
                INFO((u8 ? "uint8" : "float") << " src, bad index " << bad);
                std::vector<float> ih(static_cast<size_t>(n));
                for (int64_t j = 0; j < n; ++j) ih[size_t(j)] = float(1 + (j * 5) % cols);
                ih[650] = bad, ih[401] = bad, ih[699] = bad;  // the first bad position is 402
                Matrix idx = from_host(d, 1, n, ih.data()), dst = zeros(d, m, n);
                std::vector<float> got = expect_index_error(
                    d, [&] { gather_cols(src, idx, dst, 2.0f); }, dst,
                    "gather_cols: idx at position 402 is not a column index of src (an integer in 1..6)");
                if (d.name() == "cpu") continue;
                for (int64_t j = 0; j < n; ++j) {
                    bool bad_col = j == 401 || j == 650 || j == 699;
                    for (int64_t i = 0; i < m; ++i) {
                        float v = got[size_t(j * m + i)];
                        if (bad_col)
                            CHECK(is_nan(v));
                        else
                            CHECK(v == 2.0f * float((int64_t(ih[size_t(j)]) - 1) * m + i + 1));
                    }
                }
            }
        }
    });
}

TEST_CASE("kernels: edge inputs, a bad index among many queued calls is reported once, first call first",
          "[kernels][edge]") {
    on_every_device([&](Device& d) {
        // 300 gathers and copies between two reads (600 kernels: three command
        // buffers on Vulkan, fewer than its ring holds, so no wait for a free
        // one); calls 150 and 250 have bad indices at positions 2 and 1.
        const float sh[] = {1, 2, 3, 4};
        Matrix src = from_host(d, 2, 2, sh);
        const float good[] = {2, 1}, bad150[] = {1, 3}, bad250[] = {0, 1};
        Matrix ig = from_host(d, 1, 2, good), ib1 = from_host(d, 1, 2, bad150), ib2 = from_host(d, 1, 2, bad250);
        Matrix dst = zeros(d, 2, 2), acc = zeros(d, 2, 2);
        d.sync();
        const uint64_t waits = d.stats().host_waits;
        std::string first;
        for (int call = 1; call <= 300; ++call) {
            std::string e = error_of([&] { gather_cols(src, call == 150 ? ib1 : call == 250 ? ib2 : ig, dst, 1.0f); });
            if (first.empty()) first = e;
            axpby(1.0f, dst, 0.0f, acc);
        }
        const std::string want = "gather_cols: idx at position 2 is not a column index of src (an integer in 1..2)";
        if (d.name() == "cpu") {
            CHECK(first == want);
        } else {
            CHECK(first.empty());
            CHECK(d.stats().host_waits == waits);  // no wait for 300 checked calls
            std::string e = error_of([&] { d.sync(); });
            CHECK(e.find("an earlier call on " + d.name() + " failed: " + want + ";") == 0);
            CHECK(e.find("; 1 later call found bad labels or indices too") != std::string::npos);
            CHECK(error_of([&] { d.sync(); }).empty());
        }
        // the device goes on: the last gather was a good one
        std::vector<float> got = to_host(acc);
        CHECK(got == std::vector<float>({3, 4, 1, 2}));
    });
}

// ---------------------------------------------------------------------------
// The rows of docs/edge-contract.md added for issue 24 (items 2, 3, 5).
// ---------------------------------------------------------------------------

namespace {

// k rows per column; column values given for the first rows, the rest `fill`.
Matrix column_of(Device& d, int64_t k, const std::vector<float>& head, float fill) {
    std::vector<float> v(size_t(k), fill);
    for (size_t i = 0; i < head.size(); i++) v[i] = head[i];
    return from_host(d, k, 1, v.data());
}

}  // namespace

TEST_CASE("kernels: edge inputs, argmax and argmin: NaN loses to any number, −Inf and +Inf included",
          "[kernels][edge]") {
    // Before: both Vulkan drivers gave row 1 for [NaN, −Inf] (the search
    // started at −Inf and −Inf is not larger); the cpu gave row 2.
    struct Case {
        std::vector<float> head;
        float fill;
        float want_max, want_min;  // 1-based rows
    };
    const std::vector<Case> cases = {
        {{kNaN, -kInf}, kNaN, 2, 2},
        {{kNaN, kInf}, kNaN, 2, 2},
        {{kNaN, -kInf, -kInf}, kNaN, 2, 2},
        {{kNaN, kNaN, 3, kNaN, 5}, kNaN, 5, 3},
        {{kNaN}, kNaN, 1, 1},  // only NaN: row 1
        {{-kInf, kNaN, -kInf}, -kInf, 1, 1},
    };
    on_every_device([&](Device& d) {
        for (int64_t k : {int64_t(3), int64_t(5), int64_t(5000)}) {  // one invocation per column, and the long-column passes
            for (const Case& c : cases) {
                if (int64_t(c.head.size()) > k) continue;
                INFO(k << " rows, case " << (&c - cases.data()) + 1);
                Matrix x = column_of(d, k, c.head, c.fill), idx = zeros(d, 1, 1);
                argmax(x, idx);
                CHECK(to_host(idx)[0] == c.want_max);
                argmin(x, idx);
                CHECK(to_host(idx)[0] == c.want_min);
            }
        }
    });
}

TEST_CASE("kernels: edge inputs, softmax of a column with NaN or +Inf is NaN in every row", "[kernels][edge]") {
    // Before: SwiftShader gave [NaN; 0] for [NaN; 0] and [+Inf; 0].
    on_every_device([&](Device& d) {
        for (int64_t k : {int64_t(2), int64_t(5000)}) {
            const std::vector<std::vector<float>> poisoned = {{kNaN, 0}, {kInf, 0}, {0, kInf}, {-kInf, kNaN}, {kInf, kInf}};
            for (const auto& head : poisoned) {
                INFO(k << " rows, column starting " << head[0] << ", " << head[1]);
                Matrix x = column_of(d, k, head, -1.0f), y = empty(d, k, 1);
                softmax(x, y);
                std::vector<float> got = to_host(y);
                size_t numbers = 0;
                for (float v : got) numbers += v == v;
                CHECK(numbers == 0);
                // The fused loss: NaN loss and gradient for such a column, with a good label.
                const float label = 2.0f;
                Matrix lab = from_host(d, 1, 1, &label), loss = zeros(d, 1, 1), dz = empty(d, k, 1);
                softmax_xent(x, lab, loss, 1.0f, dz);
                CHECK(std::isnan(to_host(loss)[0]));
                got = to_host(dz);
                numbers = 0;
                for (float v : got) numbers += v == v;
                CHECK(numbers == 0);
            }
            // −Inf alone is a number: exp(−Inf) = 0.
            Matrix x = column_of(d, k, {-kInf, 0}, -kInf), y = empty(d, k, 1);
            softmax(x, y);
            std::vector<float> got = to_host(y);
            CHECK(got[0] == 0.0f);
            CHECK(got[1] == 1.0f);
        }
    });
}

TEST_CASE("kernels: edge inputs, relu of −0 and negative subnormals is +0", "[kernels][edge]") {
    // Before: SwiftShader returned the negative subnormal itself (its x < 0
    // is false for a flushed −1e−40).
    float neg_tiny, pos_tiny;
    const uint32_t nb = 0x80000001u, pb = 0x00000001u;
    std::memcpy(&neg_tiny, &nb, 4);
    std::memcpy(&pos_tiny, &pb, 4);
    const std::vector<float> in = {-0.0f, -1e-40f, neg_tiny, -1e-38f, pos_tiny, 1e-40f, -kNaN};
    on_every_device([&](Device& d) {
        Matrix x = from_host(d, int64_t(in.size()), 1, in.data()), y = empty(d, int64_t(in.size()), 1);
        for (bool fused : {false, true}) {
            INFO((fused ? "dense's relu" : "relu"));
            if (fused) {
                const float one = 1.0f, zero = 0.0f;
                Matrix w = from_host(d, 1, 1, &one), b = from_host(d, 1, 1, &zero);
                Matrix xr = from_host(d, 1, int64_t(in.size()), in.data()), yr = empty(d, 1, int64_t(in.size()));
                dense(w, xr, b, Act::relu, yr);
                y = from_host(d, int64_t(in.size()), 1, to_host(yr).data());
            } else {
                unary(Unary::relu, x, y);
            }
            std::vector<float> got = to_host(y);
            for (size_t k = 0; k < 4; k++) {
                uint32_t bits;
                std::memcpy(&bits, &got[k], 4);
                INFO("input " << k + 1 << ": bits of the result " << std::hex << bits);
                CHECK(bits == 0u);  // +0, not −0 and not the input
            }
            // A positive subnormal passes (or is flushed to 0 where the device flushes); NaN stays NaN.
            CHECK((got[4] == pos_tiny || got[4] == 0.0f));
            CHECK((got[5] == 1e-40f || got[5] == 0.0f));
            CHECK(std::isnan(got[6]));
        }
    });
}

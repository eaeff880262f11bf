// The GEMM family on vulkan:0 (lavapipe where no GPU exists) against a
// float64 reference computed here on the host: every transpose of a and b,
// α and β in {0, 1, −1.5}, odd sizes, sizes 0 and 1, views with ld > rows
// and an offset, a transposed c, β = 0 over a c full of NaN, dense with each
// activation, mv with both layouts, rk, and grids over the device's
// workgroup-count limit. Both mm variants run on the same device
// (force_gemm_variant), so the shared-memory one is tested even without a
// GPU. Each case also expects no validation message (VELA_VALIDATE=1).
// The [.bench] case prints GFLOP/s and is not run by CTest.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include <sys/resource.h>

#include "core/error.hpp"
#include "core/opref.hpp"
#include "core/ops.hpp"
#include "core/registry.hpp"
#include "vulkan/backend.hpp"
#include "vulkan/device.hpp"
#include "vulkan/kernels_blas.hpp"

using namespace vela;

namespace {

// vulkan:0, or nullptr (and a warning) where no usable Vulkan device exists.
Device* vulkan0() {
    for (const DeviceInfo& d : list_devices())
        if (d.id == "vulkan:0") return d.usable ? &get_device("vulkan:0") : nullptr;
    return nullptr;
}

#define REQUIRE_VULKAN(dev)                                        \
    Device* dev = vulkan0();                                       \
    if (!dev) {                                                    \
        WARN("no usable Vulkan device: GEMM tests not run");       \
        return;                                                    \
    }                                                              \
    const uint64_t validation_before = vk::validation_message_count(); \
    struct ValidationCheck {                                       \
        uint64_t before;                                           \
        ~ValidationCheck() { CHECK(vk::validation_message_count() == before); } \
    } validation_check{validation_before}

// Restores automatic variant choice however the case ends.
struct Variant {
    explicit Variant(vk::GemmVariant v) { vk::force_gemm_variant(v); }
    ~Variant() { vk::force_gemm_variant(vk::GemmVariant::automatic); }
};

const char* variant_name(vk::GemmVariant v) { return v == vk::GemmVariant::regblock ? "regblock" : "tiled"; }

// mm_regblock is the kernel of the CPU drivers (Caps::software); a GPU runs it
// only when forced, and on an H200 one section of these sweeps did not finish
// on it in 40 s (2026-11-27): on a GPU they test mm_tiled, the kernel it runs.
bool runs_here(Device& dev, vk::GemmVariant v) {
    return v != vk::GemmVariant::regblock || static_cast<vk::VulkanDevice&>(dev).caps().software;
}

std::mt19937 rng(2026);

std::vector<float> random_values(size_t n) {
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
}

// A host copy of a matrix together with the device one: `host` is the whole
// stored parent (column-major, ld = its rows), the view selects part of it.
struct Pair {
    Matrix parent, view;
    std::vector<float> host;
    int64_t ld;
    // Element (i, j) of the view, read from the host copy.
    double at(int64_t i, int64_t j) const {
        int64_t e = view.index(i, j) - parent.offset;
        return host[size_t(e)];
    }
};

// A rows×cols view with ld = stored rows + pad and offset (pad rows above it),
// transposed when trans (stored cols×rows). fill_nan fills it with NaN.
Pair make(Device& dev, int64_t rows, int64_t cols, bool trans, int64_t pad, bool fill_nan = false) {
    int64_t sr = trans ? cols : rows, sc = trans ? rows : cols;
    Pair p;
    p.ld = sr + pad;
    p.host = fill_nan ? std::vector<float>(size_t(p.ld * std::max<int64_t>(sc, 1)), NAN)
                      : random_values(size_t(p.ld * std::max<int64_t>(sc, 1)));
    p.parent = from_host(dev, p.ld, std::max<int64_t>(sc, 1), p.host.data());
    Matrix stored = view(p.parent, pad, 0, sr, sc);
    p.view = trans ? stored.t() : stored;
    return p;
}

// Largest |got − want| / (Σ|terms| + 1) over the view, so the bound scales with k.
struct Err {
    double worst = 0;
    void add(double got, double want, double scale) {
        double e = std::fabs(got - want) / (scale + 1.0);
        if (!(e <= worst)) worst = std::isnan(e) ? std::numeric_limits<double>::infinity() : e;
    }
};

// Everything of `after` outside the view must equal `before`.
bool outside_unchanged(const Pair& c, const std::vector<float>& after) {
    std::vector<bool> inside(c.host.size(), false);
    for (int64_t i = 0; i < c.view.rows; i++)
        for (int64_t j = 0; j < c.view.cols; j++) inside[size_t(c.view.index(i, j) - c.parent.offset)] = true;
    for (size_t e = 0; e < after.size(); e++) {
        if (inside[e]) continue;
        bool same = after[e] == c.host[e] || (std::isnan(after[e]) && std::isnan(c.host[e]));
        if (!same) return false;
    }
    return true;
}

constexpr double tol = 4 * std::numeric_limits<float>::epsilon();

// mm on the device against float64: the scaled error within tol, and nothing
// outside c's view written.
void check_mm(Device& dev, int64_t m, int64_t n, int64_t k, bool ta, bool tb, bool tc, float alpha, float beta,
              int64_t pad) {
    Pair a = make(dev, m, k, ta, pad), b = make(dev, k, n, tb, pad);
    Pair c = make(dev, m, n, tc, pad, beta == 0.0f);
    mm(alpha, a.view, b.view, beta, c.view);
    std::vector<float> got = to_host(c.parent);
    Err err;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0, scale = 0;
            for (int64_t l = 0; l < k; l++) {
                s += a.at(i, l) * b.at(l, j);
                scale += std::fabs(a.at(i, l) * b.at(l, j));
            }
            double want = double(alpha) * s + (beta != 0.0f ? double(beta) * c.at(i, j) : 0.0);
            scale = std::fabs(alpha) * scale + (beta != 0.0f ? std::fabs(beta * c.at(i, j)) : 0.0);
            err.add(got[size_t(c.view.index(i, j) - c.parent.offset)], want, scale);
        }
    CHECK(err.worst <= tol);
    CHECK(outside_unchanged(c, got));
}

// CPU time of the whole process (lavapipe's worker threads included).
double cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

}  // namespace

TEST_CASE("vulkan mm: transposes, α and β, odd sizes, ld > rows, offsets", "[vulkan][gemm]") {
    REQUIRE_VULKAN(dev);
    auto variant = GENERATE(vk::GemmVariant::regblock, vk::GemmVariant::tiled);
    if (!runs_here(*dev, variant)) return;
    Variant force(variant);
    struct Size {
        int64_t m, n, k;
    };
    const Size sizes[] = {{1, 1, 1}, {2, 3, 4}, {17, 13, 9}, {65, 25, 33}, {10, 7, 130}, {70, 14, 8}, {3, 1, 5}, {1, 5, 3}, {9, 13, 1100}};
    const float coefs[] = {0.0f, 1.0f, -1.5f};
    for (const Size& s : sizes)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                for (float alpha : coefs)
                    for (float beta : coefs)
                        for (int64_t pad : {0, 3}) {
                            INFO(variant_name(variant) << " " << s.m << "×" << s.n << "×" << s.k << " ta " << ta
                                                       << " tb " << tb << " α " << alpha << " β " << beta
                                                       << " pad " << pad);
                            check_mm(*dev, s.m, s.n, s.k, ta, tb, false, alpha, beta, pad);
                        }
}

TEST_CASE("vulkan mm: a transposed c, and even sizes that take the 8-byte loads", "[vulkan][gemm]") {
    REQUIRE_VULKAN(dev);
    auto variant = GENERATE(vk::GemmVariant::regblock, vk::GemmVariant::tiled);
    if (!runs_here(*dev, variant)) return;
    Variant force(variant);
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int tc = 0; tc < 2; tc++)
                for (int64_t pad : {0, 1, 2}) {
                    INFO(variant_name(variant) << " ta " << ta << " tb " << tb << " tc " << tc << " pad " << pad);
                    // 66 rows, k = 20: both the 8-wide k chunks and the remainder; pad 1 makes
                    // the leading dimension odd, which must fall back to 4-byte loads.
                    check_mm(*dev, 66, 26, 20, ta, tb, tc, -1.5f, 1.0f, pad);
                }
}

TEST_CASE("vulkan mm: sizes and leading dimensions that take the 16-byte loads", "[vulkan][gemm]") {
    REQUIRE_VULKAN(dev);
    // The portable register-blocked kernel (devices without shaderInt64, e.g.
    // SwiftShader) loads four rows or four k of a at once when a's address and
    // leading dimension are multiples of 4 (and its rows, untransposed): 68 rows,
    // k = 24 (three 8-wide chunks, six 4-wide ones). pad 0 and 4 take them, pad 2
    // the 8-byte loads, pad 1 the 4-byte ones; n = 30 leaves a partial column block.
    auto variant = GENERATE(vk::GemmVariant::regblock, vk::GemmVariant::tiled);
    if (!runs_here(*dev, variant)) return;
    Variant force(variant);
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int64_t pad : {0, 1, 2, 4})
                for (int64_t k : {24, 27}) {
                    INFO(variant_name(variant) << " ta " << ta << " tb " << tb << " pad " << pad << " k " << k);
                    check_mm(*dev, 68, 30, k, ta, tb, false, 0.75f, -1.0f, pad);
                }
}

TEST_CASE("vulkan mm: 8-byte loads of b along k and along columns, partial blocks and remainders", "[vulkan][gemm]") {
    REQUIRE_VULKAN(dev);
    // The 64-bit kernel (lavapipe) loads op(b) in pairs where b's address and
    // ld are even: two k per lane untransposed (16 k a pass, then the k % 16
    // remainder), two columns transposed when n is even (the last pair starts
    // at n - 2). n = 50 leaves a partial column block, 49 is odd (single
    // columns), 2 is one pair; k = 37 takes pairs and a remainder, k = 5
    // no pairs along k (record_gemm counts fewer loads without them); pad 1
    // makes the address and ld odd (4-byte loads), pad 2 even again.
    auto variant = GENERATE(vk::GemmVariant::regblock, vk::GemmVariant::tiled);
    if (!runs_here(*dev, variant)) return;
    Variant force(variant);
    for (int tb = 0; tb < 2; tb++)
        for (int64_t n : {50, 49, 2})
            for (int64_t k : {37, 16, 5})
                for (int64_t pad : {0, 1, 2}) {
                    INFO(variant_name(variant) << " tb " << tb << " n " << n << " k " << k << " pad " << pad);
                    check_mm(*dev, 70, n, k, false, tb, false, 1.25f, 0.5f, pad);
                }
}

TEST_CASE("vulkan mm: β = 0 never reads c, k = 0 and empty shapes", "[vulkan][gemm]") {
    REQUIRE_VULKAN(dev);
    // c full of NaN with β = 0: the result must be exactly α·a·b.
    check_mm(*dev, 33, 9, 7, false, false, false, 1.0f, 0.0f, 0);
    // k = 0: c ← β·c, and with β = 0 plain zeros even over NaN.
    std::vector<float> nan4(4, NAN), ones4(4, 1.0f);
    Matrix a = empty(*dev, 2, 0), b = empty(*dev, 0, 2);
    Matrix c = from_host(*dev, 2, 2, nan4.data());
    mm(1.0f, a, b, 0.0f, c);
    CHECK(to_host(c) == std::vector<float>(4, 0.0f));
    Matrix d = from_host(*dev, 2, 2, ones4.data());
    mm(1.0f, a, b, -1.5f, d);
    CHECK(to_host(d) == std::vector<float>(4, -1.5f));
    // Empty outputs dispatch nothing and fail nothing.
    Matrix e0 = empty(*dev, 0, 3), a0 = empty(*dev, 0, 4), b3 = zeros(*dev, 4, 3);
    mm(1.0f, a0, b3, 0.0f, e0);
    CHECK(to_host(e0).empty());
}

TEST_CASE("vulkan dense: fused bias and each activation", "[vulkan][gemm]") {
    REQUIRE_VULKAN(dev);
    auto variant = GENERATE(vk::GemmVariant::regblock, vk::GemmVariant::tiled);
    if (!runs_here(*dev, variant)) return;
    Variant force(variant);
    const Act acts[] = {Act::identity, Act::relu, Act::sigmoid, Act::tanh};
    struct Size {
        int64_t m, n, k;
    };
    const Size sizes[] = {{1, 1, 1}, {10, 7, 13}, {66, 9, 20}, {5, 3, 2}};
    for (const Size& s : sizes)
        for (Act act : acts)
            for (int tw = 0; tw < 2; tw++) {
                Pair w = make(*dev, s.m, s.k, tw, 2), x = make(*dev, s.k, s.n, false, 0);
                Pair b = make(*dev, 1, s.m, false, 1);  // a row of a 2×m matrix: a strided m-vector
                Matrix bias = b.view.t();
                Pair y = make(*dev, s.m, s.n, false, 1, true);
                // Large weights so sigmoid and tanh saturate somewhere.
                for (float& v : w.host) v *= 4.0f;
                w.parent = from_host(*dev, w.parent.rows, w.parent.cols, w.host.data());
                Matrix wv = view(w.parent, 2, 0, tw ? s.k : s.m, tw ? s.m : s.k);
                if (tw) wv = wv.t();
                dense(wv, x.view, bias, act, y.view);
                std::vector<float> got = to_host(y.parent);
                Err err;
                for (int64_t i = 0; i < s.m; i++)
                    for (int64_t j = 0; j < s.n; j++) {
                        double z = b.at(0, i), scale = std::fabs(z);
                        for (int64_t l = 0; l < s.k; l++) {
                            double t = double(w.host[size_t(wv.index(i, l) - w.parent.offset)]) * x.at(l, j);
                            z += t;
                            scale += std::fabs(t);
                        }
                        const double want = act_ref(act, z);  // the op table's float64 reference
                        err.add(got[size_t(y.view.index(i, j) - y.parent.offset)], want, scale);
                    }
                INFO(variant_name(variant) << " " << s.m << "×" << s.n << "×" << s.k << " " << act_name(act)
                                           << " tw " << tw);
                CHECK(err.worst <= tol);
                CHECK(outside_unchanged(y, got));
            }
}

TEST_CASE("vulkan mv: both layouts, α and β, strided vectors", "[vulkan][gemm]") {
    REQUIRE_VULKAN(dev);
    auto variant = GENERATE(vk::GemmVariant::regblock, vk::GemmVariant::tiled);
    Variant force(variant);
    const float coefs[] = {0.0f, 1.0f, -1.5f};
    struct Size {
        int64_t m, n;
    };
    const Size sizes[] = {{1, 1}, {7, 5}, {130, 67}, {3, 200}};
    for (const Size& s : sizes)
        for (int ta = 0; ta < 2; ta++)
            for (float alpha : coefs)
                for (float beta : coefs) {
                    Pair a = make(*dev, s.m, s.n, ta, 2);
                    Pair x = make(*dev, 1, s.n, false, 2);  // a row: step 3
                    Pair y = make(*dev, s.m, 1, false, 1, beta == 0.0f);
                    mv(alpha, a.view, x.view, beta, y.view);
                    std::vector<float> got = to_host(y.parent);
                    Err err;
                    for (int64_t i = 0; i < s.m; i++) {
                        double t = 0, scale = 0;
                        for (int64_t j = 0; j < s.n; j++) {
                            t += a.at(i, j) * x.at(0, j);
                            scale += std::fabs(a.at(i, j) * x.at(0, j));
                        }
                        double want = alpha * t + (beta != 0.0f ? beta * y.at(i, 0) : 0.0);
                        err.add(got[size_t(y.view.index(i, 0) - y.parent.offset)], want,
                                std::fabs(alpha) * scale + std::fabs(beta != 0.0f ? beta * y.at(i, 0) : 0.0));
                    }
                    INFO(variant_name(variant) << " " << s.m << "×" << s.n << " ta " << ta << " α " << alpha << " β "
                                               << beta);
                    CHECK(err.worst <= tol);
                    CHECK(outside_unchanged(y, got));
                }
}

TEST_CASE("vulkan rk: outer-product update of any view", "[vulkan][gemm]") {
    REQUIRE_VULKAN(dev);
    struct Size {
        int64_t m, n;
    };
    const Size sizes[] = {{1, 1}, {7, 5}, {130, 17}, {3, 70}};
    for (const Size& s : sizes)
        for (int ta = 0; ta < 2; ta++)
            for (float alpha : {0.0f, 1.0f, -1.5f}) {
                Pair a = make(*dev, s.m, s.n, ta, 2);
                Pair x = make(*dev, s.m, 1, false, 1), y = make(*dev, 1, s.n, false, 1);
                rk(alpha, x.view, y.view, a.view);
                std::vector<float> got = to_host(a.parent);
                Err err;
                for (int64_t i = 0; i < s.m; i++)
                    for (int64_t j = 0; j < s.n; j++) {
                        double want = a.at(i, j) + double(alpha) * x.at(i, 0) * y.at(0, j);
                        err.add(got[size_t(a.view.index(i, j) - a.parent.offset)], want, std::fabs(want));
                    }
                INFO(s.m << "×" << s.n << " ta " << ta << " α " << alpha);
                CHECK(err.worst <= tol);
                CHECK(outside_unchanged(a, got));
            }
}

TEST_CASE("vulkan gemm: grids beyond 65,535 workgroups are split", "[vulkan][gemm]") {
    REQUIRE_VULKAN(dev);
    // 1×800,000 columns: 66,667 column tiles of 12 in mm; rk on the first 540,000: 67,500 of 8 (all
    // 800,000 took 100,000, a sixth of the case's workgroups more, each slow on sanitized lavapipe),
    // the columns past them left as mm wrote them.
    const int64_t n = 800000, nr = 540000;
    std::vector<float> av{2.0f}, bv = random_values(size_t(n));
    Matrix a = from_host(*dev, 1, 1, av.data()), b = from_host(*dev, 1, n, bv.data());
    Matrix c = empty(*dev, 1, n);
    mm(1.5f, a, b, 0.0f, c);
    std::vector<float> got = to_host(c);
    size_t bad = 0;
    for (int64_t j = 0; j < n; j++) bad += got[size_t(j)] != 3.0f * bv[size_t(j)];
    CHECK(bad == 0);
    Matrix x = from_host(*dev, 1, 1, av.data());
    rk(-1.0f, x, b.columns(0, nr), c.columns(0, nr));  // c ← −1·2·b + c = 3b − 2b = b, 3b past nr
    got = to_host(c);
    bad = 0;
    for (int64_t j = 0; j < n; j++)
        bad += j < nr ? std::fabs(got[size_t(j)] - bv[size_t(j)]) > 1e-6f : got[size_t(j)] != 3.0f * bv[size_t(j)];
    CHECK(bad == 0);
    // mv with one workgroup per row over 65,535 rows (the reduction variant).
    Variant force(vk::GemmVariant::tiled);
    const int64_t m = 70000;
    std::vector<float> col = random_values(size_t(m)), one{1.0f};
    Matrix at = from_host(*dev, 1, m, col.data()).t();  // m×1, rows contiguous: transposed layout
    Matrix xv = from_host(*dev, 1, 1, one.data()), y = empty(*dev, m, 1);
    mv(2.0f, at, xv, 0.0f, y);
    got = to_host(y);
    bad = 0;
    for (int64_t i = 0; i < m; i++) bad += got[size_t(i)] != 2.0f * col[size_t(i)];
    CHECK(bad == 0);
}

// First use (kernels_blas.cpp, stand_in_budget): the 2×4 register block runs
// a product while the block chosen for it is not made and the products it
// ran in that one's stead stay within the budget; then the chosen block is
// made. The 1×1 block stands in for the 2×4 one the same way, over a
// sixteenth of the budget. All give the same bits (the same fma chain per
// element) and match float64. dense with elu, w and x both transposed: a
// block no other case makes first. Seen to fail before the stand-in existed
// (no product counted), and before the 1×1 stage (0 == 3 small ones).
TEST_CASE("vulkan mm: the 1×1 and 2×4 blocks stand in for a block not yet made, same bits", "[vulkan][gemm]") {
    REQUIRE_VULKAN(dev);
    const vk::Caps& caps = static_cast<vk::VulkanDevice&>(*dev).caps();
    const bool regblock = caps.software && caps.subgroup_ballot;
    const int64_t m = 70, n = 9, k = 33;  // 70 rows: the 8-row block on lavapipe and SwiftShader
    struct Budget {
        double saved = vk::gemm_stand_in_budget();
        ~Budget() { vk::set_gemm_stand_in_budget(saved); }
    } restore;
    vk::set_gemm_stand_in_budget(48.0 * double(m * n * k));  // 48 products, the first 3 on the 1×1 block
    Pair w = make(*dev, m, k, true, 1), x = make(*dev, k, n, true, 0);
    Pair b = make(*dev, m, 1, false, 0);
    std::vector<std::vector<float>> runs;
    const uint64_t before = vk::gemm_stand_in_count(), small_before = vk::gemm_small_stand_in_count();
    for (int run = 0; run < 51; run++) {
        Pair y = make(*dev, m, n, false, 0, true);
        dense(w.view, x.view, b.view, Act::elu, y.view);
        runs.push_back(to_host(y.parent));
    }
    CHECK(vk::gemm_stand_in_count() - before == (regblock ? 48u : 0u));
    CHECK(vk::gemm_small_stand_in_count() - small_before == (regblock ? 3u : 0u));
    for (const auto& r : runs) CHECK(r == runs[0]);
    Err err;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double z = b.at(i, 0), scale = std::fabs(z);
            for (int64_t l = 0; l < k; l++) {
                double t = w.at(i, l) * x.at(l, j);
                z += t;
                scale += std::fabs(t);
            }
            err.add(runs[0][size_t(i + j * m)], z > 0 ? z : std::expm1(z), scale);
        }
    CHECK(err.worst <= tol);
}

// The stand-ins keep the chosen block's loads of b where they fit them: on
// lavapipe op(b) = bᵀ with an even n loads column pairs, which need an even
// NR; the 1×1 block must load b one value at a time. Seen to fail when the
// 1×1 block kept the pairs (worst error 3.2 against float64).
TEST_CASE("vulkan mm: the stand-in blocks with bᵀ and an even n", "[vulkan][gemm]") {
    REQUIRE_VULKAN(dev);
    const int64_t m = 64, n = 8, k = 33;
    struct Budget {
        double saved = vk::gemm_stand_in_budget();
        ~Budget() { vk::set_gemm_stand_in_budget(saved); }
    } restore;
    // The first 2 products on the 1×1 block, the next 30 on the 2×4 one, then the chosen block.
    vk::set_gemm_stand_in_budget(32.0 * double(m * n * k));
    for (int run = 0; run < 40; run++) {
        INFO("run " << run);
        check_mm(*dev, m, n, k, false, true, false, 1.0f, 0.0f, 0);
    }
}

TEST_CASE("vulkan mm: GFLOP/s", "[.bench][vulkan][gemm]") {
    REQUIRE_VULKAN(dev);
    struct Size {
        int64_t m, n, k;
    };
    const Size sizes[] = {{256, 256, 256}, {512, 512, 512}, {1024, 1024, 1024}, {256, 128, 784}, {2048, 2048, 2048}};
    for (const Size& s : sizes) {
        std::vector<float> av = random_values(size_t(s.m * s.k)), bv = random_values(size_t(s.k * s.n));
        Matrix a = from_host(*dev, s.m, s.k, av.data()), b = from_host(*dev, s.k, s.n, bv.data());
        Matrix c = zeros(*dev, s.m, s.n);
        mm(1.0f, a, b, 0.0f, c);  // pipeline creation outside the timing
        dev->sync();
        double best = 1e30, best_cpu = 1e30;
        int reps = s.m >= 2048 ? 2 : s.m >= 1024 ? 3 : 10;
        for (int r = 0; r < reps; r++) {
            auto t0 = std::chrono::steady_clock::now();
            double c0 = cpu_seconds();
            mm(1.0f, a, b, 0.0f, c);
            dev->sync();
            best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
            best_cpu = std::min(best_cpu, cpu_seconds() - c0);
        }
        // On a CPU implementation sharing the machine with other work, the
        // CPU time spent over all cores tells what the kernel would do alone.
        double flop = 2.0 * double(s.m) * double(s.n) * double(s.k);
        unsigned cores = std::max(1u, std::thread::hardware_concurrency());
        std::printf("mm %lld×%lld·%lld×%lld on %s: %.2f ms, %.1f GFLOP/s (wall); %.1f GFLOP/s from CPU time over %u cores\n",
                    (long long)s.m, (long long)s.k, (long long)s.k, (long long)s.n, dev->name().c_str(), best * 1e3,
                    flop / best * 1e-9, flop / (best_cpu / cores) * 1e-9, cores);
    }
}

// mm_regblock_tex (lavapipe: VK_KHR_push_descriptor and texel views of the
// memory blocks) against float64, and with it off the 64-bit kernel on the
// same device: 16-byte texels of a (pad 0 and 4: a's index and ld multiples
// of 4; pad 1 and 2 load one float), of b along k (k ≥ 32: 64 + the 6 left
// over) and along columns (bᵀ with n = 52; n = 50 one column at a time), a k
// short of a texel pass (k = 9), a long k (1100: one pass here, 512-long
// passes with texels off) into a transposed c (texel stores with a row
// step), and dense with its bias. On a device without texel views
// (SwiftShader) nothing runs on it: the half with texels off tests the present kernels.
TEST_CASE("vulkan mm: operands through texel views, and the fallback with them off", "[vulkan][gemm]") {
    REQUIRE_VULKAN(dev);
    const bool texel_device = static_cast<vk::VulkanDevice&>(*dev).caps().texel_views;
    const bool on = GENERATE(true, false);
    // Without texel views both halves would run the same kernels (144 s under the sanitizers on
    // SwiftShader, most of it compiling the kernels' variants): there the half with texels off, on
    // the pads and widths that pick different kernels, checks that the present kernels take them.
    if (on && !texel_device) return;
    const std::vector<int64_t> pads = texel_device ? std::vector<int64_t>{0, 1, 2, 4} : std::vector<int64_t>{0, 1};
    const std::vector<int64_t> widths = texel_device ? std::vector<int64_t>{52, 50} : std::vector<int64_t>{50};
    struct Texel {
        explicit Texel(bool on) { vk::set_gemm_texel(on); }
        ~Texel() { vk::set_gemm_texel(true); }
    } texel(on);
    if (!runs_here(*dev, vk::GemmVariant::regblock)) return;
    Variant force(vk::GemmVariant::regblock);
    const uint64_t before = vk::gemm_texel_count();
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int64_t pad : pads)
                for (int64_t n : widths)
                    for (int64_t k : {70, 9}) {
                        INFO("texel " << on << " ta " << ta << " tb " << tb << " pad " << pad << " n " << n << " k " << k);
                        check_mm(*dev, 68, n, k, ta, tb, false, 0.75f, -1.0f, pad);
                    }
    for (int tb = 0; tb < 2; tb++) {
        INFO("texel " << on << " k 1100 tb " << tb);
        check_mm(*dev, 36, 28, 1100, false, tb, true, 1.0f, 0.5f, 0);
    }
    // dense: y ← relu(w·x + b) for a 20×64 w, 64×12 x (texels of both).
    std::vector<float> hw = random_values(20 * 64), hx = random_values(64 * 12), hb = random_values(20);
    Matrix w = from_host(*dev, 20, 64, hw.data()), x = from_host(*dev, 64, 12, hx.data());
    Matrix bias = from_host(*dev, 20, 1, hb.data()), y = zeros(*dev, 20, 12);
    dense(w, x, bias, Act::relu, y);
    std::vector<float> got = to_host(y);
    Err err;
    for (int64_t i = 0; i < 20; i++)
        for (int64_t j = 0; j < 12; j++) {
            double s = hb[size_t(i)], scale = std::fabs(hb[size_t(i)]);
            for (int64_t l = 0; l < 64; l++) {
                s += double(hw[size_t(i + 20 * l)]) * hx[size_t(l + 64 * j)];
                scale += std::fabs(double(hw[size_t(i + 20 * l)]) * hx[size_t(l + 64 * j)]);
            }
            err.add(got[size_t(i + 20 * j)], std::max(s, 0.0), scale);
        }
    CHECK(err.worst <= tol);
    if (on && texel_device) CHECK(vk::gemm_texel_count() > before);
    else CHECK(vk::gemm_texel_count() == before);
}

// mm_tiled's blocks (128×128 with 8×8 per invocation and 16 or 8 values of
// k per step, 64×64 and 32×32 with 4×4), each forced: c of two whole blocks and a part block each way,
// so one workgroup runs wholly inside (16-byte loads where the operand's
// address and ld allow it, 16-byte stores of c) and the others meet every
// edge (loads element by element, zeros past the edges); a k of three whole
// steps and a part step. pad 0: aligned (ld = rows, multiples of 4); pad 1:
// every ld odd, so only element loads. A transposed c takes the element
// stores. dense with an inline (relu) and a separate (sigmoid) activation.
TEST_CASE("vulkan mm: mm_tiled's blocks, 16-byte loads and stores inside, element loads at the edges", "[vulkan][gemm]") {
    REQUIRE_VULKAN(dev);
    Variant force(vk::GemmVariant::tiled);
    struct Tile {
        explicit Tile(const char* name) { vk::force_gemm_tile(name); }
        ~Tile() { vk::force_gemm_tile(nullptr); }
    };
    struct Shape {
        const char* name;
        int64_t block, bk;
        bool all_transposes;
    };
    const Shape shapes[] = {{"128", 128, 16, true}, {"128k8", 128, 8, false}, {"64", 64, 16, false}, {"32", 32, 16, false}};
    for (const Shape& s : shapes) {
        Tile tile(s.name);
        const int64_t m = 2 * s.block + 12, n = s.block + 20, k = 3 * s.bk + 4;
        // Each variant is a pipeline to compile (about a second on the software
        // drivers): the other blocks, whose code differs only in the register
        // block's size and the pieces per tile, take the aligned product alone;
        // the unaligned pad only with both operands alike.
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                for (int64_t pad : {0, 1}) {
                    if (pad == 1 && ta != tb) continue;
                    if (!s.all_transposes && (ta || tb || pad)) continue;
                    INFO("block " << s.name << " ta " << ta << " tb " << tb << " pad " << pad);
                    check_mm(*dev, m, n, k, ta, tb, false, 1.5f, pad ? 0.0f : -1.5f, pad);
                }
        if (s.all_transposes) {
            INFO("block " << s.name << ", a transposed c");
            check_mm(*dev, m, n, k, false, false, true, 1.0f, 0.5f, 0);
        }
        // dense: y ← act(w·x + b) with y inside and past the blocks.
        std::vector<float> hw = random_values(size_t(m * k)), hx = random_values(size_t(k * n)),
                           hb = random_values(size_t(m));
        Matrix w = from_host(*dev, m, k, hw.data()), x = from_host(*dev, k, n, hx.data());
        Matrix bias = from_host(*dev, m, 1, hb.data()), y = zeros(*dev, m, n);
        for (Act act : {Act::relu, Act::sigmoid}) {
            if (!s.all_transposes) continue;
            dense(w, x, bias, act, y);
            std::vector<float> got = to_host(y);
            Err err;
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = 0; j < n; j++) {
                    double sum = hb[size_t(i)], scale = std::fabs(hb[size_t(i)]);
                    for (int64_t l = 0; l < k; l++) {
                        sum += double(hw[size_t(i + m * l)]) * hx[size_t(l + k * j)];
                        scale += std::fabs(double(hw[size_t(i + m * l)]) * hx[size_t(l + k * j)]);
                    }
                    const double want = act == Act::relu ? std::max(sum, 0.0) : 1.0 / (1.0 + std::exp(-sum));
                    err.add(got[size_t(i + m * j)], want, scale);
                }
            INFO("block " << s.name << " dense " << (act == Act::relu ? "relu" : "sigmoid"));
            CHECK(err.worst <= tol);
        }
    }
}

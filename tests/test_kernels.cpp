// One body of kernel cases, run on every usable device of list_devices()
// (cpu, then vulkan:N as they appear): each kernel against the float64 host
// reference of kernel_reference.hpp, over sizes 0, 1, 7, 33, 257 and a large
// one, α and β in {0, 1, −1.5}, every transpose combination, and views with
// ld > rows and a non-zero offset, whose surrounding elements must stay
// untouched. A device that throws (a missing kernel, say) fails the case.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/ops.hpp"
#include "core/registry.hpp"
#include "cpu/cpu_device.hpp"
#include "kernel_reference.hpp"

using namespace vela;

namespace {

const float kAlphas[] = {0.0f, 1.0f, -1.5f};
constexpr double kTol = 1e-5;      // relative to the error scale of each element
constexpr double kTolLong = 1e-4;  // reductions over a million elements

std::vector<Device*> devices() {
    std::vector<Device*> out;
    for (const DeviceInfo& info : list_devices())
        if (info.usable) out.push_back(&get_device(info.id));
    return out;
}

// Runs body(dev) on each device; an exception fails the case for that device
// and the next device still runs.
void on_each_device(const std::function<void(Device&)>& body) {
    for (Device* d : devices()) {
        INFO("device " << d->name());
        try {
            body(*d);
            d->sync();
        } catch (const std::exception& e) {
            FAIL_CHECK(d->name() << " threw: " << e.what());
        }
    }
}

// Deterministic test data (splitmix64), independent of the generator under test.
struct Rng {
    uint64_t s;
    explicit Rng(uint64_t seed) : s(seed) {}
    uint64_t next() {
        uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
    float uniform(float lo, float hi) { return lo + (hi - lo) * float(double(next() >> 40) / double(1 << 24)); }
};

// How a test operand sits in memory.
enum class Layout { dense, padded, trans };
const char* layout_name(Layout l) { return l == Layout::dense ? "dense" : l == Layout::padded ? "padded" : "trans"; }

// An operand: a rows×cols view with the given layout inside a parent matrix of
// random values. padded: the view starts at (3, 2) of a parent with 4 more
// rows and 3 more columns (ld > rows, offset > 0). trans: the transpose of such
// a view of a cols×rows parent.
struct Spec {
    int64_t rows, cols;
    Layout layout;
    uint64_t seed;
    float lo = -1, hi = 1;

    int64_t prow() const { return layout == Layout::dense ? rows : layout == Layout::padded ? rows + 4 : cols + 4; }
    int64_t pcol() const { return layout == Layout::dense ? cols : layout == Layout::padded ? cols + 3 : rows + 3; }
    std::vector<float> parent_data() const {
        Rng r(seed);
        std::vector<float> v(size_t(prow() * pcol()));
        for (float& e : v) e = r.uniform(lo, hi);
        return v;
    }
    // Parent index of logical element (i, j), computed here from the layout.
    int64_t at(int64_t i, int64_t j) const {
        switch (layout) {
            case Layout::dense: return i + j * rows;
            case Layout::padded: return (i + 3) + (j + 2) * prow();
            case Layout::trans: return (j + 3) + (i + 2) * prow();
        }
        return 0;
    }
    ref::Mat logical() const {
        std::vector<float> p = parent_data();
        ref::Mat m(rows, cols);
        for (int64_t j = 0; j < cols; j++)
            for (int64_t i = 0; i < rows; i++) m(i, j) = p[size_t(at(i, j))];
        return m;
    }
};

struct Operand {
    Spec spec;
    Matrix parent, m;
};

Operand make(Device& d, const Spec& s) {
    Operand o{s, from_host(d, s.prow(), s.pcol(), s.parent_data().data()), {}};
    switch (s.layout) {
        case Layout::dense: o.m = o.parent; break;
        case Layout::padded: o.m = view(o.parent, 3, 2, s.rows, s.cols); break;
        case Layout::trans: o.m = view(o.parent, 3, 2, s.cols, s.rows).t(); break;
    }
    return o;
}

// The view holds want (within tol of each element's scale) and the parent
// elements outside the view are unchanged.
void check_result(const Operand& o, const ref::Result& want, double tol) {
    std::vector<float> got = to_host(o.m);
    REQUIRE(int64_t(got.size()) == want.value.size());
    int64_t bad = 0, first = -1;
    for (int64_t k = 0; k < want.value.size(); k++) {
        double g = got[size_t(k)], w = want.value.v[size_t(k)];
        double lim = tol * want.scale.v[size_t(k)] + 1e-30;
        if (!(std::fabs(g - w) <= lim) && !(std::isnan(w) && std::isnan(g))) {
            if (bad++ == 0) first = k;
        }
    }
    if (bad) {
        int64_t i = first % std::max<int64_t>(1, o.spec.rows), j = first / std::max<int64_t>(1, o.spec.rows);
        FAIL_CHECK(bad << " of " << got.size() << " elements off; first at (" << i + 1 << ", " << j + 1 << "): got "
                       << got[size_t(first)] << ", want " << want.value.v[size_t(first)] << " (scale "
                       << want.scale.v[size_t(first)] << ")");
    }
    if (o.spec.layout != Layout::dense) {
        std::vector<float> parent = to_host(o.parent), orig = o.spec.parent_data();
        std::vector<bool> inside(parent.size(), false);
        for (int64_t j = 0; j < o.spec.cols; j++)
            for (int64_t i = 0; i < o.spec.rows; i++) inside[size_t(o.spec.at(i, j))] = true;
        int64_t touched = 0;
        for (size_t k = 0; k < parent.size(); k++)
            if (!inside[k] && std::memcmp(&parent[k], &orig[k], sizeof(float)) != 0) touched++;
        CHECK(touched == 0);
    }
}

ref::Result exact(const ref::Mat& m) {
    ref::Result r{m, ref::Mat(m.rows, m.cols)};
    for (size_t k = 0; k < m.v.size(); k++) r.scale.v[k] = std::fabs(m.v[k]);
    return r;
}

void check_number(double got, double want, double scale, double tol) {
    INFO("got " << got << ", want " << want);
    CHECK(std::fabs(got - want) <= tol * scale + 1e-30);
}

const Layout kLayouts[] = {Layout::dense, Layout::padded, Layout::trans};

}  // namespace

// ---- transfers ------------------------------------------------------------------

TEST_CASE("kernels: upload and download of views", "[kernels]") {
    on_each_device([](Device& d) {
        const float vals[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};  // 4×3, column-major
        Matrix m = from_host(d, 4, 3, vals);
        CHECK(to_host(view(m, 1, 1, 2, 2)) == std::vector<float>{6, 7, 10, 11});
        CHECK(to_host(m.t()) == std::vector<float>{1, 5, 9, 2, 6, 10, 3, 7, 11, 4, 8, 12});
        CHECK(to_host(row(m, 2)) == std::vector<float>{3, 7, 11});
        CHECK(to_host(col(m.t(), 1)) == std::vector<float>{2, 6, 10});
        CHECK(get(m, 3, 2) == 12.0f);
        CHECK(get(m.t(), 2, 3) == 12.0f);
        set(view(m, 1, 1, 2, 2).t(), 0, 1, -7.0f);  // logical (1, 2) of the transposed view is m(2, 1)
        CHECK(get(m, 2, 1) == -7.0f);
        const float two[4] = {-1, -2, -3, -4};
        Matrix v = view(m, 2, 0, 2, 2);
        d.upload(v, two);
        CHECK(to_host(m) == std::vector<float>{1, 2, -1, -2, 5, 6, -3, -4, 9, 10, 11, 12});
        Matrix c = clone(m.t());
        CHECK(c.rows == 3);
        CHECK(c.ld == 3);
        CHECK(to_host(c) == to_host(m.t()));
        CHECK(to_host(zeros(d, 2, 3)) == std::vector<float>(6, 0.0f));
        CHECK(to_host(empty(d, 0, 5)).empty());
    });
}

// ---- level 3 ----------------------------------------------------------------------

TEST_CASE("kernels: mm over shapes, transposes, α, β and views", "[kernels][mm]") {
    struct Shape {
        int64_t m, n, k;
    };
    const Shape shapes[] = {{0, 0, 0}, {1, 1, 1}, {7, 33, 1}, {33, 7, 257}, {257, 33, 7}, {0, 7, 3}, {7, 0, 3},
                            {7, 3, 0}, {1, 257, 33}};
    on_each_device([&](Device& d) {
        int variant = 0;
        for (const Shape& s : shapes)
            for (bool ta : {false, true})
                for (bool tb : {false, true})
                    for (float alpha : kAlphas)
                        for (float beta : kAlphas) {
                            Layout lc = variant % 3 == 2 ? Layout::trans : variant % 3 == 1 ? Layout::padded : Layout::dense;
                            Layout la = ta ? Layout::trans : (variant % 2 ? Layout::padded : Layout::dense);
                            Layout lb = tb ? Layout::trans : (variant % 2 ? Layout::dense : Layout::padded);
                            variant++;
                            INFO("mm " << s.m << "×" << s.k << " · " << s.k << "×" << s.n << " ta=" << ta << " tb=" << tb
                                       << " α=" << alpha << " β=" << beta << " c " << layout_name(lc));
                            Spec sa{s.m, s.k, la, 11}, sb{s.k, s.n, lb, 12}, sc{s.m, s.n, lc, 13};
                            Operand a = make(d, sa), b = make(d, sb), c = make(d, sc);
                            mm(alpha, a.m, b.m, beta, c.m);
                            check_result(c, ref::mm(alpha, sa.logical(), sb.logical(), beta, sc.logical()), kTol);
                        }
    });
}

TEST_CASE("kernels: mm at 257 in every transpose combination and at 1024", "[kernels][mm]") {
    for (bool ta : {false, true})
        for (bool tb : {false, true}) {
            Spec sa{257, 257, ta ? Layout::trans : Layout::padded, 21}, sb{257, 257, tb ? Layout::trans : Layout::dense, 22};
            Spec sc{257, 257, Layout::padded, 23};
            ref::Result want = ref::mm(-1.5, sa.logical(), sb.logical(), 1.0, sc.logical());
            on_each_device([&](Device& d) {
                INFO("ta=" << ta << " tb=" << tb);
                Operand a = make(d, sa), b = make(d, sb), c = make(d, sc);
                mm(-1.5f, a.m, b.m, 1.0f, c.m);
                check_result(c, want, kTol);
            });
        }
    Spec sa{1024, 1024, Layout::dense, 31}, sb{1024, 1024, Layout::dense, 32}, sc{1024, 1024, Layout::dense, 33};
    ref::Result want = ref::mm(1.0, sa.logical(), sb.logical(), 0.0, sc.logical());
    on_each_device([&](Device& d) {
        Operand a = make(d, sa), b = make(d, sb), c = make(d, sc);
        mm(1.0f, a.m, b.m, 0.0f, c.m);
        check_result(c, want, kTol);
    });
}

TEST_CASE("kernels: β = 0 never reads the output (NaN garbage is overwritten)", "[kernels]") {
    on_each_device([](Device& d) {
        const float nan = std::numeric_limits<float>::quiet_NaN();
        Matrix a = from_host(d, 2, 2, std::vector<float>{1, 2, 3, 4}.data());
        Matrix c = empty(d, 2, 2), y = empty(d, 2, 1), z = empty(d, 2, 2);
        fill(c, nan), fill(y, nan), fill(z, nan);
        mm(1, a, a, 0, c);
        CHECK(to_host(c) == std::vector<float>{7, 10, 15, 22});
        mv(1, a, col(a, 0), 0, y);
        CHECK(to_host(y) == std::vector<float>{7, 10});
        axpby(2, a, 0, z);
        CHECK(to_host(z) == std::vector<float>{2, 4, 6, 8});
        Matrix big = empty(d, 300, 300), ones = empty(d, 300, 300);
        fill(big, nan), fill(ones, 1);
        mm(1, ones, ones, 0, big);
        CHECK(to_host(big) == std::vector<float>(300 * 300, 300.0f));
        Matrix yb = empty(d, 300, 1);
        fill(yb, nan);
        mv(1, ones, col(ones, 0), 0, yb);
        CHECK(to_host(yb) == std::vector<float>(300, 300.0f));
        Matrix k0 = empty(d, 2, 0), w = empty(d, 2, 2);
        fill(w, nan);
        mm(1, k0, empty(d, 0, 2), 0, w);  // an empty inner dimension: c ← β·c = 0
        CHECK(to_host(w) == std::vector<float>{0, 0, 0, 0});
    });
}

// ---- level 2 ------------------------------------------------------------------------

TEST_CASE("kernels: mv over shapes, transposes, α, β and strided vectors", "[kernels][mv]") {
    struct Shape {
        int64_t m, n;
    };
    const Shape shapes[] = {{0, 3}, {3, 0}, {1, 1}, {7, 33}, {33, 7}, {257, 257}, {1, 257}};
    on_each_device([&](Device& d) {
        int variant = 0;
        for (const Shape& s : shapes)
            for (bool ta : {false, true})
                for (float alpha : kAlphas)
                    for (float beta : kAlphas) {
                        // x and y alternate between a dense column, a row of a padded parent (inc = ld)
                        // and a column of a transposed one.
                        Layout lx = kLayouts[variant % 3], ly = kLayouts[(variant + 1) % 3];
                        bool xrow = variant % 2, yrow = variant % 4 >= 2;
                        variant++;
                        INFO("mv " << s.m << "×" << s.n << " ta=" << ta << " α=" << alpha << " β=" << beta << " x "
                                   << layout_name(lx) << (xrow ? " row" : " col") << " y " << layout_name(ly)
                                   << (yrow ? " row" : " col"));
                        Spec sa{s.m, s.n, ta ? Layout::trans : Layout::padded, 41};
                        Spec sx{xrow ? 1 : s.n, xrow ? s.n : 1, lx, 42}, sy{yrow ? 1 : s.m, yrow ? s.m : 1, ly, 43};
                        Operand a = make(d, sa), x = make(d, sx), y = make(d, sy);
                        mv(alpha, a.m, x.m, beta, y.m);
                        ref::Mat xl = sx.logical(), yl = sy.logical();
                        ref::Result r = ref::mv(alpha, sa.logical(), ref::Mat(s.n, 1, std::vector<float>(xl.v.begin(), xl.v.end())), beta,
                                                ref::Mat(s.m, 1, std::vector<float>(yl.v.begin(), yl.v.end())));
                        r.value.rows = r.scale.rows = sy.rows, r.value.cols = r.scale.cols = sy.cols;
                        check_result(y, r, kTol);
                    }
    });
}

TEST_CASE("kernels: rk over shapes, transposed a, α and strided vectors", "[kernels][rk]") {
    struct Shape {
        int64_t m, n;
    };
    const Shape shapes[] = {{0, 3}, {3, 0}, {1, 1}, {7, 33}, {257, 33}};
    on_each_device([&](Device& d) {
        int variant = 0;
        for (const Shape& s : shapes)
            for (bool ta : {false, true})
                for (float alpha : kAlphas) {
                    Layout lx = kLayouts[variant % 3], ly = kLayouts[(variant + 2) % 3];
                    bool xrow = variant % 2;
                    variant++;
                    INFO("rk " << s.m << "×" << s.n << " ta=" << ta << " α=" << alpha);
                    Spec sx{xrow ? 1 : s.m, xrow ? s.m : 1, lx, 51}, sy{s.n, 1, ly, 52};
                    Spec sa{s.m, s.n, ta ? Layout::trans : Layout::padded, 53};
                    Operand x = make(d, sx), y = make(d, sy), a = make(d, sa);
                    rk(alpha, x.m, y.m, a.m);
                    check_result(a, ref::rk(alpha, sx.logical(), sy.logical(), sa.logical()), kTol);
                }
    });
}

// ---- level 1 --------------------------------------------------------------------------

namespace {
// The operand shapes of level-1 cases: vectors in both orientations and whole matrices.
struct Shape1 {
    int64_t rows, cols;
};
const Shape1 kShapes1[] = {{0, 1}, {1, 1}, {7, 1}, {1, 33}, {257, 1}, {33, 7}, {257, 33}, {0, 4}};
}  // namespace

TEST_CASE("kernels: axpy, axpby, scal, copy, swap, fill on vectors and matrices", "[kernels][level1]") {
    on_each_device([](Device& d) {
        int variant = 0;
        for (const Shape1& s : kShapes1)
            for (Layout lx : kLayouts)
                for (float alpha : kAlphas) {
                    Layout ly = kLayouts[variant++ % 3];
                    INFO(s.rows << "×" << s.cols << " x " << layout_name(lx) << " y " << layout_name(ly) << " α=" << alpha);
                    Spec sx{s.rows, s.cols, lx, 61}, sy{s.rows, s.cols, ly, 62};
                    ref::Mat xl = sx.logical(), yl = sy.logical();
                    {
                        Operand x = make(d, sx), y = make(d, sy);
                        axpy(alpha, x.m, y.m);
                        check_result(y, ref::axpby(alpha, xl, 1, yl), kTol);
                        check_result(x, exact(xl), 0);
                    }
                    for (float beta : kAlphas) {
                        Operand x = make(d, sx), y = make(d, sy);
                        axpby(alpha, x.m, beta, y.m);
                        check_result(y, ref::axpby(alpha, xl, beta, yl), kTol);
                    }
                    {
                        Operand x = make(d, sx);
                        scal(alpha, x.m);
                        check_result(x, ref::axpby(alpha, xl, 0, xl), kTol);
                    }
                    {
                        Operand x = make(d, sx);
                        fill(x.m, alpha);
                        check_result(x, exact(ref::Mat(s.rows, s.cols, alpha)), 0);
                    }
                    if (alpha == 1.0f) {
                        Operand x = make(d, sx), y = make(d, sy);
                        copy(x.m, y.m);
                        check_result(y, exact(xl), 0);
                        Operand x2 = make(d, sx), y2 = make(d, Spec{s.rows, s.cols, ly, 63});
                        swap(x2.m, y2.m);
                        check_result(x2, exact(Spec{s.rows, s.cols, ly, 63}.logical()), 0);
                        check_result(y2, exact(xl), 0);
                    }
                }
        // A row and a column of one length work together (1×n beside n×1).
        Spec sr{1, 33, Layout::padded, 64}, sc{33, 1, Layout::trans, 65};
        Operand r = make(d, sr), c = make(d, sc);
        axpy(2.0f, r.m, c.m);
        ref::Mat rl = sr.logical(), cl = sc.logical();
        rl.rows = 33, rl.cols = 1;
        check_result(c, ref::axpby(2, rl, 1, cl), kTol);
        // In place: axpy(α, x, x) is x ← (1 + α)·x.
        Operand x = make(d, Spec{7, 5, Layout::padded, 66});
        axpy(-1.5f, x.m, x.m);
        check_result(x, ref::axpby(-0.5, x.spec.logical(), 0, x.spec.logical()), kTol);
    });
}

TEST_CASE("kernels: level 1 on a million elements", "[kernels][level1]") {
    const int64_t n = 1 << 20;
    Spec sx{n, 1, Layout::dense, 71}, sy{n, 1, Layout::dense, 72};
    ref::Mat xl = sx.logical(), yl = sy.logical();
    ref::Result want = ref::axpby(-1.5, xl, 1, yl);
    on_each_device([&](Device& d) {
        Operand x = make(d, sx), y = make(d, sy);
        axpy(-1.5f, x.m, y.m);
        check_result(y, want, kTol);
        check_number(dot(x.m, x.m), ref::dot(xl, xl), ref::dot_scale(xl, xl), kTolLong);
        check_number(asum(x.m), ref::asum(xl), ref::asum(xl), kTolLong);
        check_number(sum(x.m), ref::sum(xl), ref::asum(xl), kTolLong);
        check_number(nrm2(x.m), ref::nrm2(xl), ref::nrm2(xl), kTolLong);
        CHECK(imax(x.m) == ref::imax(xl));
        // A whole 1000×1000 matrix through a strided view: the per-column paths.
        Spec sm{1000, 1000, Layout::padded, 73};
        Operand m = make(d, sm);
        ref::Mat ml = sm.logical();
        check_number(sum(m.m), ref::sum(ml), ref::asum(ml), kTolLong);
        check_number(dot(m.m, m.m), ref::dot(ml, ml), ref::dot_scale(ml, ml), kTolLong);
    });
}

TEST_CASE("kernels: reductions and imax on vectors and views", "[kernels][level1]") {
    on_each_device([](Device& d) {
        for (const Shape1& s : kShapes1)
            for (Layout l : kLayouts) {
                INFO(s.rows << "×" << s.cols << " " << layout_name(l));
                Spec sx{s.rows, s.cols, l, 81}, sy{s.rows, s.cols, kLayouts[(int(l) + 1) % 3], 82};
                Operand x = make(d, sx), y = make(d, sy);
                ref::Mat xl = sx.logical(), yl = sy.logical();
                check_number(dot(x.m, y.m), ref::dot(xl, yl), ref::dot_scale(xl, yl), kTol);
                check_number(nrm2(x.m), ref::nrm2(xl), ref::nrm2(xl), kTol);
                check_number(asum(x.m), ref::asum(xl), ref::asum(xl), kTol);
                check_number(sum(x.m), ref::sum(xl), ref::asum(xl), kTol);
                if (s.rows * s.cols > 0) CHECK(imax(x.m) == ref::imax(xl));
            }
        // Ties go to the first index; the magnitude counts, not the sign.
        Matrix t = from_host(d, 5, 1, std::vector<float>{1, -3, 2, 3, -3}.data());
        CHECK(imax(t) == 1);
        Matrix m = from_host(d, 2, 2, std::vector<float>{1, 2, 5, 5}.data());
        CHECK(imax(m.t()) == 1);  // logical column-major order of the transposed view: 1, 5, 2, 5
    });
}

// ---- elementwise ----------------------------------------------------------------------

TEST_CASE("kernels: every unary function and derivative", "[kernels][elementwise]") {
    const Shape1 shapes[] = {{0, 5}, {1, 1}, {7, 33}, {257, 33}, {1, 257}};
    on_each_device([&](Device& d) {
        for (uint8_t i = 0; i < uint8_t(Unary::count_); i++)
            for (const Shape1& s : shapes)
                for (Layout lx : kLayouts) {
                    Layout ly = kLayouts[(int(lx) + 1) % 3];
                    const Unary op = Unary(i);
                    const ref::UnaryRef u = ref::unary(op);
                    INFO(unary_name(op) << " " << s.rows << "×" << s.cols << " x " << layout_name(lx) << " y "
                                          << layout_name(ly));
                    Spec sx{s.rows, s.cols, lx, 91, u.lo, u.hi}, sy{s.rows, s.cols, ly, 92};
                    ref::Result want = ref::unary(op, sx.logical());
                    Operand x = make(d, sx), y = make(d, sy);
                    unary(op, x.m, y.m, ref::kUnaryParams);
                    check_result(y, want, kTol);
                    check_result(x, exact(sx.logical()), 0);
                    unary(op, x.m, x.m, ref::kUnaryParams);  // in place
                    check_result(x, want, kTol);
                }
    });
}

TEST_CASE("kernels: tanh, exp and sigmoid on a million elements, and their edges", "[kernels][elementwise]") {
    Spec sx{1 << 20, 1, Layout::dense, 93, -30, 30};
    on_each_device([&](Device& d) {
        for (Unary op : {Unary::tanh, Unary::exp, Unary::sigmoid}) {
            INFO(unary_name(op));
            Operand x = make(d, sx);
            unary(op, x.m, x.m);
            check_result(x, ref::unary(op, sx.logical()), kTol);
        }
        const float inf = std::numeric_limits<float>::infinity();
        Matrix e = from_host(d, 6, 1, std::vector<float>{-inf, inf, 100, -100, 0, -1e-30f}.data());
        Matrix y = empty(d, 6, 1);
        unary(Unary::exp, e, y);
        std::vector<float> ey = to_host(y);
        CHECK(ey[0] == 0.0f);
        CHECK(ey[1] == inf);
        CHECK(ey[2] == inf);
        CHECK((ey[3] >= 0.0f && ey[3] < 1e-37f));  // e^-100 is subnormal: kept or flushed
        CHECK(ey[4] == 1.0f);
        CHECK(std::fabs(ey[5] - 1.0f) <= 1.2e-7f);
        unary(Unary::tanh, e, y);
        std::vector<float> ty = to_host(y);
        CHECK(std::vector<float>(ty.begin(), ty.begin() + 5) == std::vector<float>{-1, 1, 1, -1, 0});
        CHECK((ty[5] == 0.0f || std::fabs(ty[5] + 1e-30f) <= 1e-35f));  // tanh x ≈ x (a GPU may flush it to 0)
        unary(Unary::sigmoid, e, y);
        std::vector<float> sy = to_host(y);
        CHECK(sy[0] == 0.0f);
        CHECK(sy[1] == 1.0f);
        CHECK(sy[4] == 0.5f);
    });
}

TEST_CASE("kernels: mul, div, add, sub", "[kernels][elementwise]") {
    const Shape1 shapes[] = {{0, 3}, {1, 1}, {7, 33}, {257, 33}, {33, 1}};
    struct B {
        Binary op;
        double (*f)(double, double);
    };
    const B ops[] = {{Binary::mul, [](double a, double b) { return a * b; }},
                     {Binary::div, [](double a, double b) { return a / b; }},
                     {Binary::add, [](double a, double b) { return a + b; }},
                     {Binary::sub, [](double a, double b) { return a - b; }}};
    on_each_device([&](Device& d) {
        for (const B& b : ops)
            for (const Shape1& s : shapes)
                for (Layout la : kLayouts) {
                    Layout lb = kLayouts[(int(la) + 1) % 3], lc = kLayouts[(int(la) + 2) % 3];
                    INFO(binary_name(b.op) << " " << s.rows << "×" << s.cols << " a " << layout_name(la));
                    Spec sa{s.rows, s.cols, la, 101}, sb{s.rows, s.cols, lb, 102, 0.5f, 2}, sc{s.rows, s.cols, lc, 103};
                    ref::Mat al = sa.logical(), bl = sb.logical();
                    ref::Result want{ref::Mat(s.rows, s.cols), ref::Mat(s.rows, s.cols)};
                    for (size_t k = 0; k < al.v.size(); k++) {
                        want.value.v[k] = b.f(al.v[k], bl.v[k]);
                        want.scale.v[k] = b.op == Binary::add || b.op == Binary::sub ? std::fabs(al.v[k]) + std::fabs(bl.v[k])
                                                                                       : std::fabs(want.value.v[k]);
                    }
                    Operand a = make(d, sa), bb = make(d, sb), c = make(d, sc);
                    binary(b.op, a.m, bb.m, c.m);
                    check_result(c, want, kTol);
                    binary(b.op, a.m, bb.m, bb.m);  // into b, as mul(a, b) does
                    check_result(bb, want, kTol);
                }
    });
}

// Every op of core/binary.def with a broadcast operand (a column m×1, a row 1×n,
// a 1×1, in every layout, as a or as b, and a column with a row: the outer
// form), read by the kernel with a step of 0, against the float64 reference.
TEST_CASE("kernels: binary ops with broadcasting of a row, a column or a 1×1", "[kernels][elementwise][broadcast]") {
    struct Case {
        int64_t ar, ac, br, bc;
    };
    const Case cases[] = {{7, 33, 7, 1}, {7, 33, 1, 33}, {7, 33, 1, 1}, {7, 1, 7, 33}, {1, 33, 7, 33},
                          {1, 1, 257, 5}, {257, 1, 1, 5}, {1, 5, 257, 1}, {0, 3, 0, 1}};
    on_each_device([&](Device& d) {
        for (int op = 0; op < int(Binary::count_); op++) {
            const Binary b = Binary(op);
            const float lo = b == Binary::pow ? 0.25f : -2, hi = 2;  // pow: a positive base
            for (const Case& cs : cases)
                for (Layout la : kLayouts) {
                    Layout lb = kLayouts[(int(la) + 1) % 3], lc = kLayouts[(int(la) + 2) % 3];
                    const int64_t rows = std::max(cs.ar, cs.br), cols = std::max(cs.ac, cs.bc);
                    INFO(binary_name(b) << " a " << cs.ar << "×" << cs.ac << " " << layout_name(la) << ", b " << cs.br
                                        << "×" << cs.bc << " " << layout_name(lb));
                    Spec sa{cs.ar, cs.ac, la, 201, lo, hi}, sb{cs.br, cs.bc, lb, 202, -2, 2},
                        sc{rows, cols, lc, 203};
                    ref::Mat al = sa.logical(), bl = sb.logical();
                    ref::Result want{ref::Mat(rows, cols), ref::Mat(rows, cols)};
                    for (int64_t j = 0; j < cols; j++)
                        for (int64_t i = 0; i < rows; i++) {
                            double x = al(cs.ar == 1 ? 0 : i, cs.ac == 1 ? 0 : j);
                            double y = bl(cs.br == 1 ? 0 : i, cs.bc == 1 ? 0 : j);
                            double v = ref::binary(b, x, y);
                            want.value(i, j) = v;
                            want.scale(i, j) = b == Binary::add || b == Binary::sub ? std::fabs(x) + std::fabs(y)
                                               : b == Binary::pow ? std::fabs(v) * (1 + std::fabs(y * std::log(x)))
                                                                  : std::fabs(v);
                        }
                    Operand a = make(d, sa), bb = make(d, sb), c = make(d, sc);
                    binary(b, a.m, bb.m, c.m);
                    check_result(c, want, kTol);
                }
        }
        // Ties and NaN, by hand: eq/ne/ge/le on equal values, NaN compares false (ne: true).
        const float nan = std::numeric_limits<float>::quiet_NaN();
        const float av[4] = {1, 2, nan, 3}, bv[1] = {2};
        Matrix a = from_host(d, 4, 1, av), b1 = from_host(d, 1, 1, bv), c = zeros(d, 4, 1);
        const struct {
            Binary op;
            std::vector<float> want;
        } hand[] = {{Binary::gt, {0, 0, 0, 1}}, {Binary::lt, {1, 0, 0, 0}}, {Binary::ge, {0, 1, 0, 1}},
                    {Binary::le, {1, 1, 0, 0}}, {Binary::eq, {0, 1, 0, 0}}, {Binary::ne, {1, 0, 1, 1}}};
        for (const auto& h : hand) {
            INFO(binary_name(h.op) << " against 2");
            binary(h.op, a, b1, c);
            CHECK(to_host(c) == h.want);
        }
        // pow by hand: integer powers exact, the sign of a negative base kept for odd ones.
        const float xv[5] = {-2, 3, 0.5f, -1.5f, 0}, pv[5] = {3, 2, -2, 2, 0};
        Matrix x = from_host(d, 5, 1, xv), p = from_host(d, 5, 1, pv), y = zeros(d, 5, 1);
        binary(Binary::pow, x, p, y);
        CHECK(to_host(y) == std::vector<float>{-8, 9, 4, 2.25f, 1});
        const float frac[1] = {0.5f};
        binary(Binary::pow, x, from_host(d, 1, 1, frac), y);
        std::vector<float> r = to_host(y);
        CHECK(std::isnan(r[0]));
        CHECK(std::fabs(r[1] - 1.7320508f) <= 2e-7f);
        CHECK(std::fabs(r[2] - 0.70710678f) <= 2e-7f);
        CHECK(r[4] == 0.0f);
    });
}

// ---- fused ------------------------------------------------------------------------------

TEST_CASE("kernels: softmax per column, stable for large logits", "[kernels][fused]") {
    const Shape1 shapes[] = {{1, 1}, {10, 7}, {257, 33}, {7, 0}, {3, 1000}};
    on_each_device([&](Device& d) {
        for (const Shape1& s : shapes)
            for (Layout l : kLayouts) {
                INFO("softmax " << s.rows << "×" << s.cols << " " << layout_name(l));
                Spec sx{s.rows, s.cols, l, 111, -5, 5}, sy{s.rows, s.cols, kLayouts[(int(l) + 1) % 3], 112};
                ref::Mat p = ref::softmax(sx.logical());
                Operand x = make(d, sx), y = make(d, sy);
                softmax(x.m, y.m);
                check_result(y, exact(p), kTol);
                softmax(x.m, x.m);
                check_result(x, exact(p), kTol);
            }
        Matrix big = from_host(d, 3, 1, std::vector<float>{1000, 1001, 999}.data());
        softmax(big, big);
        ref::Mat want = ref::softmax(ref::Mat(3, 1, std::vector<float>{1000, 1001, 999}));
        std::vector<float> got = to_host(big);
        for (int i = 0; i < 3; i++) CHECK(std::fabs(got[size_t(i)] - want.v[size_t(i)]) <= kTol * want.v[size_t(i)]);
    });
}

TEST_CASE("kernels: softmax_xent loss and gradient", "[kernels][fused]") {
    const Shape1 shapes[] = {{10, 1}, {10, 33}, {257, 7}, {1, 5}, {10, 0}};
    on_each_device([&](Device& d) {
        for (const Shape1& s : shapes)
            for (Layout l : kLayouts)
                for (bool u8 : {false, true})
                    for (float scale : {1.0f, -1.5f}) {
                        INFO("softmax_xent " << s.rows << "×" << s.cols << " " << layout_name(l) << (u8 ? " uint8" : " float")
                                             << " labels, scale " << scale);
                        Spec sz{s.rows, s.cols, l, 121, -4, 4}, sd{s.rows, s.cols, kLayouts[(int(l) + 2) % 3], 122};
                        Rng r(123);
                        std::vector<double> labels(size_t(s.cols));
                        std::vector<float> lf(labels.size());
                        std::vector<uint8_t> lb(labels.size());
                        for (size_t j = 0; j < labels.size(); j++) {
                            labels[j] = double(1 + r.next() % uint64_t(s.rows));
                            lf[j] = float(labels[j]), lb[j] = uint8_t(labels[j]);
                        }
                        std::vector<double> loss;
                        ref::Mat dz;
                        ref::softmax_xent(sz.logical(), labels, scale, loss, dz);
                        Operand z = make(d, sz), g = make(d, sd);
                        Matrix lab = u8 ? from_host_u8(d, 1, s.cols, lb.data()) : from_host(d, s.cols, 1, lf.data());
                        Operand lo = make(d, Spec{1, s.cols, Layout::padded, 124});
                        softmax_xent(z.m, lab, lo.m, scale, g.m);
                        ref::Result gw = exact(dz);
                        for (double& e : gw.scale.v) e = std::fabs(scale);  // terms are probabilities times scale
                        check_result(g, gw, kTol);
                        ref::Mat lm(1, s.cols);
                        lm.v = loss;
                        ref::Result lw = exact(lm);
                        for (double& e : lw.scale.v) e = 1 + e;
                        check_result(lo, lw, kTol);
                        // Without a loss, and in place (dz = z).
                        softmax_xent(z.m, lab, Matrix{}, scale, z.m);
                        check_result(z, gw, kTol);
                    }
    });
}

TEST_CASE("kernels: argmax and argmin per column, the first on ties, NaN losing", "[kernels][fused]") {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    on_each_device([&](Device& d) {
        for (bool smallest : {false, true})
            for (Shape1 s : {Shape1{1, 1}, Shape1{10, 33}, Shape1{257, 7}, Shape1{4, 0}})
                for (Layout l : kLayouts) {
                    INFO((smallest ? "argmin " : "argmax ") << s.rows << "×" << s.cols << " " << layout_name(l));
                    Spec sx{s.rows, s.cols, l, 131};
                    std::vector<double> want = ref::arg_extreme(sx.logical(), smallest);
                    Operand x = make(d, sx), idx = make(d, Spec{1, s.cols, Layout::padded, 132});
                    smallest ? argmin(x.m, idx.m) : argmax(x.m, idx.m);
                    ref::Mat wm(1, s.cols);
                    wm.v = want;
                    check_result(idx, exact(wm), 0);
                }
        // By hand, columns of 4 (the cpu's row sweep) and one of 40 (its
        // lanes): ties, a NaN beside numbers, a column of NaN.
        const std::vector<float> tv{1, 3, 3, 2, -1, -1, -2, -1, nan, 5, 4, nan, nan, nan, nan, nan};
        Matrix t = from_host(d, 4, 4, tv.data());
        Matrix idx = empty(d, 4, 1);
        argmax(t, idx);
        CHECK(to_host(idx) == std::vector<float>{2, 1, 2, 1});
        argmin(t, idx);
        CHECK(to_host(idx) == std::vector<float>{1, 3, 3, 1});
        std::vector<float> tall(40, 7.0f);
        tall[0] = nan, tall[9] = 2.0f, tall[33] = 2.0f, tall[21] = 9.0f, tall[38] = 9.0f;
        Matrix col = from_host(d, 40, 1, tall.data()), one = empty(d, 1, 1);
        argmax(col, one);
        CHECK(to_host(one) == std::vector<float>{22});
        argmin(col, one);
        CHECK(to_host(one) == std::vector<float>{10});
    });
}

TEST_CASE("kernels: gather_cols from float and uint8 sources with scaling", "[kernels][fused]") {
    on_each_device([](Device& d) {
        for (bool u8 : {false, true})
            for (Layout l : {Layout::dense, Layout::padded, Layout::trans})
                for (float scale : {1.0f, 1.0f / 255.0f}) {
                    if (u8 && l != Layout::dense) continue;  // uint8 data sets are dense
                    INFO("gather_cols " << (u8 ? "uint8" : "float") << " src " << layout_name(l) << " scale " << scale);
                    const int64_t m = 33, ncols = 40, n = 17;
                    Spec ss{m, ncols, l, 141};
                    ref::Mat src = ss.logical();
                    std::vector<uint8_t> bytes(size_t(m * ncols));
                    Rng r(142);
                    for (auto& b : bytes) b = uint8_t(r.next() & 255);
                    Matrix srcm;
                    Operand so;
                    if (u8) {
                        srcm = from_host_u8(d, m, ncols, bytes.data());
                        for (size_t k = 0; k < bytes.size(); k++) src.v[k] = bytes[k];
                    } else {
                        so = make(d, ss);
                        srcm = so.m;
                    }
                    std::vector<float> idx(static_cast<size_t>(n));
                    for (auto& e : idx) e = float(1 + r.next() % uint64_t(ncols));
                    Matrix im = from_host(d, 1, n, idx.data());
                    Operand dst = make(d, Spec{m, n, Layout::padded, 143});
                    gather_cols(srcm, im, dst.m, scale);
                    ref::Mat want(m, n);
                    for (int64_t j = 0; j < n; j++)
                        for (int64_t i = 0; i < m; i++) want(i, j) = double(scale) * src(i, int64_t(idx[size_t(j)]) - 1);
                    check_result(dst, exact(want), kTol);
                }
    });
}

// Vulkan takes four rows per invocation where dst is dense with rows a multiple
// of 4 and src's columns are aligned runs (gather_cols.comp, VEC4); here both
// sides of each condition: rows 32 or 30, dst dense or padded, src whole or a
// view whose offset is aligned (column 3 on) or not (row 2 on). Each element
// must be float(scale) · src exactly (one float product), the words of src
// holding four pixels each read right, and the padding of dst untouched.
TEST_CASE("kernels: gather_cols four rows per invocation or one, as alignment and layout allow", "[kernels][fused]") {
    on_each_device([](Device& d) {
        const int64_t cols = 40, n = 9;
        const float scale = 1.0f / 255.0f;
        for (bool u8 : {false, true})
            for (int64_t rows : {32, 30})
                for (int src_view = 0; src_view < 3; ++src_view)  // whole, columns 3.., rows 2..
                    for (bool dst_dense : {true, false}) {
                        INFO((u8 ? "uint8" : "float") << " src " << rows << " rows, view " << src_view
                                                      << (dst_dense ? ", dst dense" : ", dst padded"));
                        std::vector<uint8_t> bytes(size_t(rows * cols));
                        std::vector<float> floats(bytes.size());
                        for (size_t e = 0; e < bytes.size(); ++e)
                            bytes[e] = uint8_t((e * 73 + 5) % 251), floats[e] = float(bytes[e]) + 0.25f;
                        Matrix whole = u8 ? from_host_u8(d, rows, cols, bytes.data())
                                          : from_host(d, rows, cols, floats.data());
                        int64_t i0 = src_view == 2 ? 2 : 0, j0 = src_view == 1 ? 3 : 0;
                        int64_t m = rows - i0, sc = cols - j0;
                        Matrix src = src_view ? view(whole, i0, j0, m, sc) : whole;
                        std::vector<float> idx(static_cast<size_t>(n));
                        for (int64_t j = 0; j < n; ++j) idx[size_t(j)] = float(1 + (j * 7 + 2) % sc);
                        Matrix im = from_host(d, 1, n, idx.data());
                        const int64_t ld = dst_dense ? m : m + 3;
                        std::vector<float> fill(size_t(ld * n), -7.0f);
                        Matrix parent = from_host(d, ld, n, fill.data());
                        Matrix dst = dst_dense ? parent : view(parent, 0, 0, m, n);
                        gather_cols(src, im, dst, scale);
                        std::vector<float> got = to_host(parent);
                        for (int64_t j = 0; j < n; ++j)
                            for (int64_t i = 0; i < ld; ++i) {
                                float v = got[size_t(j * ld + i)];
                                if (i >= m) {
                                    CHECK(v == -7.0f);  // padding untouched
                                    continue;
                                }
                                size_t e = size_t((i + i0) + (int64_t(idx[size_t(j)]) - 1 + j0) * rows);
                                float want = scale * (u8 ? float(bytes[e]) : floats[e]);
                                CHECK(v == want);
                            }
                    }
    });
}

TEST_CASE("kernels: add_bias and dense with every activation", "[kernels][fused]") {
    on_each_device([](Device& d) {
        for (Shape1 s : {Shape1{1, 1}, Shape1{33, 7}, Shape1{257, 33}, Shape1{5, 0}})
            for (Layout l : kLayouts) {
                INFO("add_bias " << s.rows << "×" << s.cols << " " << layout_name(l));
                Spec sb{1, s.rows, Layout::padded, 151}, sy{s.rows, s.cols, l, 152};
                ref::Mat b = sb.logical(), y = sy.logical();
                ref::Result want{y, ref::Mat(s.rows, s.cols)};
                for (int64_t j = 0; j < s.cols; j++)
                    for (int64_t i = 0; i < s.rows; i++) {
                        want.scale(i, j) = std::fabs(y(i, j)) + std::fabs(b.v[size_t(i)]);
                        want.value(i, j) += b.v[size_t(i)];
                    }
                Operand bo = make(d, sb), yo = make(d, sy);
                add_bias(bo.m, yo.m);
                check_result(yo, want, kTol);
            }
        struct S {
            int64_t m, k, n;
        };
        for (S s : {S{1, 1, 1}, S{33, 257, 7}, S{10, 784, 33}, S{7, 0, 3}})
            for (int act = 0; act < int(Act::count_); act++)
                for (bool tw : {false, true}) {
                    INFO("dense " << s.m << "×" << s.k << " · " << s.k << "×" << s.n << " " << act_name(Act(act))
                                  << (tw ? " wᵀ" : ""));
                    Spec sw{s.m, s.k, tw ? Layout::trans : Layout::padded, 161}, sx{s.k, s.n, Layout::dense, 162};
                    Spec sb{s.m, 1, Layout::trans, 163}, sy{s.m, s.n, Layout::padded, 164};
                    ref::Result z = ref::mm(1, sw.logical(), sx.logical(), 0, sy.logical());
                    ref::Mat b = sb.logical();
                    ref::Result want = z;
                    for (int64_t j = 0; j < s.n; j++)
                        for (int64_t i = 0; i < s.m; i++) {
                            double pre = z.value(i, j) + b.v[size_t(i)];
                            want.value(i, j) = ref::act(act, pre);
                            // The activations here have slope ≤ 1, so the pre-activation's scale bounds the error.
                            want.scale(i, j) = z.scale(i, j) + std::fabs(b.v[size_t(i)]) + std::fabs(want.value(i, j));
                        }
                    Operand w = make(d, sw), x = make(d, sx), bo = make(d, sb), y = make(d, sy);
                    dense(w.m, x.m, bo.m, Act(act), y.m);
                    check_result(y, want, kTol);
                }
    });
}

// ---- random -------------------------------------------------------------------------------

TEST_CASE("kernels: rand is uniform from 0 up to 1, randn is standard normal", "[kernels][random]") {
    on_each_device([](Device& d) {
        const int64_t n = 1 << 20;
        Matrix u = empty(d, 1024, 1024);
        random(Dist::uniform, 2024, u);
        std::vector<float> h = to_host(u);
        double s = 0;
        float lo = 1, hi = 0;
        for (float v : h) s += v, lo = std::min(lo, v), hi = std::max(hi, v);
        CHECK(lo >= 0.0f);
        CHECK(hi < 1.0f);
        CHECK(lo < 1e-4f);
        CHECK(hi > 0.9999f);
        CHECK(std::fabs(s / n - 0.5) < 0.002);
        Matrix z = empty(d, n, 1);
        random(Dist::normal, 2025, z);
        h = to_host(z);
        double s1 = 0, s2 = 0, s4 = 0;
        int64_t tail = 0;
        for (float v : h) s1 += v, s2 += double(v) * v, s4 += double(v) * v * v * v, tail += std::fabs(v) > 3;
        double mean = s1 / n, var = s2 / n - mean * mean;
        CHECK(std::fabs(mean) < 0.005);
        CHECK(std::fabs(var - 1) < 0.007);
        CHECK(std::fabs(s4 / n - 3) < 0.05);
        CHECK(std::fabs(double(tail) / n - 0.0027) < 0.0003);
    });
}

TEST_CASE("kernels: random values depend only on the seed and the logical index", "[kernels][random]") {
    on_each_device([](Device& d) {
        for (Dist dist : {Dist::uniform, Dist::normal}) {
            INFO((dist == Dist::normal ? "randn" : "rand"));
            Matrix a = empty(d, 33, 7), b = empty(d, 33, 7);
            random(dist, 99, a);
            random(dist, 99, b);
            CHECK(to_host(a) == to_host(b));
            random(dist, 100, b);
            CHECK(to_host(a) != to_host(b));
            // The same logical shape inside a padded parent or as a transposed view gives the same values.
            Operand p = make(d, Spec{33, 7, Layout::padded, 171}), t = make(d, Spec{33, 7, Layout::trans, 172});
            random(dist, 99, p.m);
            random(dist, 99, t.m);
            CHECK(to_host(p.m) == to_host(a));
            CHECK(to_host(t.m) == to_host(a));
            check_result(p, exact(ref::Mat(33, 7, to_host(a))), 0);  // and the padding is untouched
            // A vector's element k is the matrix's element k.
            Matrix v = empty(d, 1, 33 * 7);
            random(dist, 99, v);
            CHECK(to_host(v) == to_host(a));
        }
    });
}

// ---- agreement between devices ------------------------------------------------------------

TEST_CASE("kernels: every device agrees with the cpu, rand and randn bit for bit", "[kernels][devices]") {
    Device& cpu = cpu_device();
    for (Device* d : devices()) {
        if (d == &cpu) continue;
        INFO("cpu vs " << d->name());
        try {
            for (Dist dist : {Dist::uniform, Dist::normal}) {
                Matrix a = empty(cpu, 257, 129), b = empty(*d, 257, 129);
                random(dist, 4242, a);
                random(dist, 4242, b);
                std::vector<float> ha = to_host(a), hb = to_host(b);
                CHECK(std::memcmp(ha.data(), hb.data(), ha.size() * sizeof(float)) == 0);
            }
            // A small network step on both: dense, softmax_xent, mm for the gradient.
            Spec sw{10, 784, Layout::dense, 181, -0.05f, 0.05f}, sx{784, 64, Layout::dense, 182, 0, 1};
            Spec sb{10, 1, Layout::dense, 183};
            std::vector<float> labels(64);
            for (size_t j = 0; j < labels.size(); j++) labels[j] = float(1 + j % 10);
            std::vector<float> out[2];
            Device* devs[2] = {&cpu, d};
            for (int k = 0; k < 2; k++) {
                Operand w = make(*devs[k], sw), x = make(*devs[k], sx), b = make(*devs[k], sb);
                Matrix z = empty(*devs[k], 10, 64), dw = empty(*devs[k], 10, 784);
                Matrix lab = from_host(*devs[k], 1, 64, labels.data());
                dense(w.m, x.m, b.m, Act::tanh, z);
                softmax_xent(z, lab, Matrix{}, 1.0f / 64, z);
                mm(1, z, x.m.t(), 0, dw);
                out[k] = to_host(dw);
            }
            double worst = 0, mag = 0;
            for (size_t i = 0; i < out[0].size(); i++) {
                worst = std::max(worst, double(std::fabs(out[0][i] - out[1][i])));
                mag = std::max(mag, double(std::fabs(out[0][i])));
            }
            CHECK(worst <= 1e-5 * mag);
        } catch (const std::exception& e) {
            FAIL_CHECK(d->name() << " threw: " << e.what());
        }
    }
}

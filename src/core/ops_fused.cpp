// The checked kernel API, part 2: elementwise, fused and random kernels, and
// the seed sequence. The rules and message forms are those of ops.cpp (see
// its header comment); the shared checks are in ops_check.hpp.
#include "core/ops.hpp"

#include <cmath>
#include <vector>

#include "core/ops_check.hpp"

namespace vela {

using namespace opcheck;

// ---- elementwise ---------------------------------------------------------------

void unary(Unary op, const Matrix& x, const Matrix& y, const float* params) {
    if (op >= Unary::count_) fail("unary: unknown operation %d", int(op));
    const char* fn = unary_name(op);
    Matrix tmp;
    const Matrix& yy = pair(fn, x, y, tmp);
    if (unary_params(op) > 0 && !params) fail("%s: its %d parameters are missing", fn, unary_params(op));
    x.device().unary(op, x, yy, params);
}

void broadcast_shape(const char* fn, const Matrix& a, const Matrix& b, int64_t& rows, int64_t& cols) {
    if (a.rows == b.rows && a.cols == b.cols) {
        rows = a.rows, cols = a.cols;
        return;
    }
    if (a.is_vector() && b.is_vector() && a.size() == b.size()) {  // vela's rule: any orientation, a's shape
        rows = a.rows, cols = a.cols;
        return;
    }
    auto dim = [](int64_t p, int64_t q, int64_t& out) {
        if (p == q || q == 1) return out = p, true;
        if (p == 1) return out = q, true;
        return false;
    };
    if (!dim(a.rows, b.rows, rows) || !dim(a.cols, b.cols, cols))
        fail(
            "%s: a is %s but b is %s (shapes must match, or broadcast: a dimension of 1 in one operand "
            "stretches to the other's, as in NumPy, e.g. m×n with m×1, 1×n or 1×1)",
            fn, describe(a).c_str(), describe(b).c_str());
}

void binary(Binary op, const Matrix& a, const Matrix& b, const Matrix& c) {
    if (op >= Binary::count_) fail("binary: unknown operation %d", int(op));
    const char* fn = binary_name(op);
    f32_operands(fn, {{"a", a}, {"b", b}, {"c", c}});
    int64_t rows, cols;
    broadcast_shape(fn, a, b, rows, cols);
    if (rows == a.rows && cols == a.cols) {  // no broadcast of a: b and c may be vectors in any orientation
        Matrix tb, tc;
        const Matrix& bb = b.rows == rows && b.cols == cols        ? b
                           : b.is_vector() && b.size() == a.size() ? tb = b.t()
                                                                   : b;
        if (&bb == &b && (b.rows != rows || b.cols != cols) && (c.rows != rows || c.cols != cols))
            fail("%s: c is %s but a (%s) with b (%s) broadcasts to %lld×%lld", fn, describe(c).c_str(),
                 describe(a).c_str(), describe(b).c_str(), (long long)rows, (long long)cols);
        const Matrix& cc = like(fn, "a", a, "c", c, tc);
        no_partial_overlap(fn, "c", cc, "a", a), no_partial_overlap(fn, "c", cc, "b", bb);
        return a.device().binary(op, a, bb, cc);
    }
    if (c.rows != rows || c.cols != cols)
        fail("%s: c is %s but a (%s) with b (%s) broadcasts to %lld×%lld", fn, describe(c).c_str(), describe(a).c_str(),
             describe(b).c_str(), (long long)rows, (long long)cols);
    no_partial_overlap(fn, "c", c, "a", a), no_partial_overlap(fn, "c", c, "b", b);
    a.device().binary(op, a, b, c);
}

// ---- fused ---------------------------------------------------------------------

void softmax(const Matrix& x, const Matrix& y) {
    const char* fn = "softmax";
    f32_operands(fn, {{"x", x}, {"y", y}});
    need_shape(fn, "y", y, x.rows, x.cols, "the shape of x");
    no_partial_overlap(fn, "y", y, "x", x);
    x.device().softmax(x, y);
}

void softmax_xent(const Matrix& z, const Matrix& labels, const Matrix& loss, float scale, const Matrix& dz) {
    const char* fn = "softmax_xent";
    bool has_loss = loss.buf != nullptr;
    check_live(fn, "z", z), check_live(fn, "labels", labels), check_live(fn, "dz", dz);
    if (has_loss) check_live(fn, "loss", loss);
    same_device(fn, "z", z, "labels", labels), same_device(fn, "z", z, "dz", dz);
    if (has_loss) same_device(fn, "z", z, "loss", loss);
    need_f32(fn, "z", z), need_f32(fn, "dz", dz);
    if (has_loss) need_f32(fn, "loss", loss);
    if (z.rows == 0 && z.cols > 0) fail("softmax_xent: z is %s (it needs at least one class row)", describe(z).c_str());
    need_vector(fn, "labels", labels, z.cols, "one class index per column of z");
    if (has_loss) need_vector(fn, "loss", loss, z.cols, "one loss per column of z");
    need_shape(fn, "dz", dz, z.rows, z.cols, "the shape of z");
    no_partial_overlap(fn, "dz", dz, "z", z);
    no_overlap(fn, "dz", dz, "labels", labels);
    if (has_loss) {
        no_overlap(fn, "loss", loss, "z", z), no_overlap(fn, "loss", loss, "labels", labels);
        no_overlap(fn, "loss", loss, "dz", dz);
    }
    z.device().softmax_xent(z, labels, loss, scale, dz);
}

void arg_extreme(const Matrix& x, const Matrix& idx, Extreme e) {
    const bool lo = e == Extreme::smallest;
    const char* fn = lo ? "argmin" : "argmax";
    f32_operands(fn, {{"x", x}, {"idx", idx}});
    if (x.rows == 0 && x.cols > 0)
        fail("%s: x is %s (a column without rows has no %s)", fn, describe(x).c_str(), lo ? "minimum" : "maximum");
    need_vector(fn, "idx", idx, x.cols, "one index per column of x");
    no_overlap(fn, "idx", idx, "x", x);
    x.device().arg_extreme(x, idx, e);
}

void argmax(const Matrix& x, const Matrix& idx) { arg_extreme(x, idx, Extreme::largest); }
void argmin(const Matrix& x, const Matrix& idx) { arg_extreme(x, idx, Extreme::smallest); }

void gather_cols(const Matrix& src, const Matrix& idx, const Matrix& dst, float scale) {
    const char* fn = "gather_cols";
    check_live(fn, "src", src), check_live(fn, "idx", idx), check_live(fn, "dst", dst);
    same_device(fn, "src", src, "idx", idx), same_device(fn, "src", src, "dst", dst);
    need_f32(fn, "idx", idx), need_f32(fn, "dst", dst);
    if (!idx.is_vector())
        fail("gather_cols: idx is %s but must be a vector of column indices", describe(idx).c_str());
    need_shape(fn, "dst", dst, src.rows, idx.size(), "src's rows × the number of indices");
    no_overlap(fn, "dst", dst, "src", src), no_overlap(fn, "dst", dst, "idx", idx);
    src.device().gather_cols(src, idx, dst, scale);
}

void add_bias(const Matrix& b, const Matrix& y) {
    const char* fn = "add_bias";
    f32_operands(fn, {{"b", b}, {"y", y}});
    need_vector(fn, "b", b, y.rows, "one bias per row of y");
    no_overlap(fn, "y", y, "b", b);
    y.device().add_bias(b, y);
}

void dense(const Matrix& w, const Matrix& x, const Matrix& b, Act act, const Matrix& y) {
    const char* fn = "dense";
    f32_operands(fn, {{"w", w}, {"x", x}, {"b", b}, {"y", y}});
    if (act >= Act::count_) fail("dense: unknown activation %d", int(act));
    if (w.cols != x.rows)
        fail("dense: w is %s but x is %s (w's columns must equal x's rows)", describe(w).c_str(), describe(x).c_str());
    need_vector(fn, "b", b, w.rows, "one bias per row of w");
    need_shape(fn, "y", y, w.rows, x.cols, "w's rows × x's columns");
    no_overlap(fn, "y", y, "w", w), no_overlap(fn, "y", y, "x", x), no_overlap(fn, "y", y, "b", b);
    y.device().dense(w, x, b, act, y);
}

void act_backward(Act act, const Matrix& da, const Matrix& x, const Matrix& delta) {
    if (act >= Act::count_) fail("act_backward: unknown activation %d", int(act));
    const char* fn = act_backward_name(act);
    const char* xn = act_prime_from_z(act) ? "z" : "a";
    f32_operands(fn, {{"da", da}, {xn, x}, {"delta", delta}});
    Matrix tx, td;
    const Matrix& xx = like(fn, "da", da, xn, x, tx);
    const Matrix& dd = like(fn, "da", da, "delta", delta, td);
    no_partial_overlap(fn, "delta", dd, "da", da), no_partial_overlap(fn, "delta", dd, xn, xx);
    da.device().act_backward(act, da, xx, dd);
}

void random(Dist dist, uint64_t seed, const Matrix& x) {
    const char* fn = dist == Dist::normal ? "randn" : "rand";
    check_live(fn, "x", x);
    need_f32(fn, "x", x);
    x.device().random(dist, seed, x);
}

// ---- seeds -----------------------------------------------------------------------

namespace {
uint64_t seed_state = 0x5eed;
uint64_t seed_count = 0;
}  // namespace

void set_default_seed(uint64_t s) {
    seed_state = s;
    seed_count = 0;
}

void seed_sequence(uint64_t& seed, uint64_t& count) {
    seed = seed_state;
    count = seed_count;
}

void set_seed_sequence(uint64_t seed, uint64_t count) {
    seed_state = seed;
    seed_count = count;
}

// splitmix64 over (default seed, call count): consecutive calls get
// unrelated seeds, and the first call after seed(n) is the same every run.
uint64_t next_seed() {
    uint64_t z = seed_state + 0x9e3779b97f4a7c15ULL * ++seed_count;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

}  // namespace vela

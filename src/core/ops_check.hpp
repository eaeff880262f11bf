// The argument checks shared by the checked kernel API (src/core/ops*.cpp):
// every kernel's rules are written with these, so every device sees only valid
// operands and every message has one form (function, argument, expected versus
// actual, 1-based indices). Include it only from src/core/ops*.cpp.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "core/error.hpp"
#include "core/matrix.hpp"
#include "core/ops.hpp"

namespace vela::opcheck {

inline constexpr int64_t kMaxElements = int64_t(1) << 40;

inline void check_size(const char* fn, int64_t rows, int64_t cols) {
    if (rows < 0) fail("%s: rows is %lld (must be ≥ 0)", fn, (long long)rows);
    if (cols < 0) fail("%s: cols is %lld (must be ≥ 0)", fn, (long long)cols);
    if (rows > kMaxElements || cols > kMaxElements || (cols > 0 && rows > kMaxElements / cols))
        fail("%s: %lld×%lld is too large (at most 2^40 elements)", fn, (long long)rows, (long long)cols);
}

inline std::string describe(const Matrix& m) { return m.shape_str(); }

inline void need_f32(const char* fn, const char* arg, const Matrix& m) {
    if (m.dtype() != DType::f32) fail("%s: %s is %s but must be float32", fn, arg, dtype_name(m.dtype()));
}

inline void same_device(const char* fn, const char* an, const Matrix& a, const char* bn, const Matrix& b) {
    if (&a.device() != &b.device()) {
        std::string da = a.device().name(), db = b.device().name();
        throw DeviceMismatch(format("%s: %s is on %s but %s is on %s", fn, an, da.c_str(), bn, db.c_str()), da, db);
    }
}

// m is live, float32 and on x's device (x checked by the caller).
inline void operand(const char* fn, const char* name, const Matrix& m, const char* xn, const Matrix& x) {
    check_live(fn, name, m);
    same_device(fn, xn, x, name, m);
    need_f32(fn, name, m);
}

// Every operand live, then each on the first one's device, then each float32,
// in the order given: f32_operands(fn, {{"a", a}, {"x", x}, {"y", y}}).
struct Named {
    const char* name;
    const Matrix& m;
};
inline void f32_operands(const char* fn, std::initializer_list<Named> ops) {
    for (const Named& o : ops) check_live(fn, o.name, o.m);
    const Named& first = *ops.begin();
    for (const Named& o : ops)
        if (&o != &first) same_device(fn, first.name, first.m, o.name, o.m);
    for (const Named& o : ops) need_f32(fn, o.name, o.m);
}

// Exactly the same elements in the same order: in-place use of a kernel.
inline bool same_elements(const Matrix& a, const Matrix& b) {
    if (a.buf != b.buf || a.size() != b.size()) return false;
    if (a.size() == 0) return true;
    if (a.offset != b.offset) return false;
    if (a.size() == 1) return true;
    if (a.is_vector() && b.is_vector()) return a.inc() == b.inc();
    return a.rows == b.rows && a.cols == b.cols && a.ld == b.ld && a.trans == b.trans;
}

// An output may be its input exactly (in place) but not overlap it partially.
inline void no_partial_overlap(const char* fn, const char* out, const Matrix& o, const char* in, const Matrix& i) {
    if (o.overlaps(i) && !same_elements(o, i))
        fail("%s: %s partially overlaps %s (use the same view for in-place work, or disjoint views)", fn, out, in);
}

inline void no_overlap(const char* fn, const char* out, const Matrix& o, const char* in, const Matrix& i) {
    if (o.overlaps(i)) fail("%s: %s aliases %s (the output of %s must not overlap its inputs)", fn, out, in, fn);
}

// The operands of c ← α·a·b (+ β·c): live float32 matrices on one device,
// a's columns equal to b's rows, c of a's rows and b's columns, c overlapping
// neither input. `cn` names c in the messages (mm's c, mm_sgd_step's g).
inline void check_mm(const char* fn, const Matrix& a, const Matrix& b, const char* cn, const Matrix& c) {
    f32_operands(fn, {{"a", a}, {"b", b}, {cn, c}});
    if (a.cols != b.rows)
        fail("%s: a is %s but b is %s (a's columns must equal b's rows)", fn, describe(a).c_str(), describe(b).c_str());
    if (c.rows != a.rows || c.cols != b.cols)
        fail("%s: %s is %s but a·b is %lld×%lld (%s must have a's rows and b's columns)", fn, cn, describe(c).c_str(),
             (long long)a.rows, (long long)b.cols, cn);
    no_overlap(fn, cn, c, "a", a), no_overlap(fn, cn, c, "b", b);
}

// Same shape, or two vectors of one length. Returns b, or b reoriented to a's
// shape in tmp (no copy on the common path: a Matrix copy costs atomics).
inline const Matrix& like(const char* fn, const char* an, const Matrix& a, const char* bn, const Matrix& b, Matrix& tmp) {
    if (a.rows == b.rows && a.cols == b.cols) return b;
    if (a.is_vector() && b.is_vector() && a.size() == b.size()) return tmp = b.t();
    fail("%s: %s is %s but %s is %s (shapes must match)", fn, an, describe(a).c_str(), bn, describe(b).c_str());
}

inline void need_vector(const char* fn, const char* arg, const Matrix& v, int64_t n, const char* what) {
    if (!v.is_vector() || v.size() != n)
        fail("%s: %s is %s but must be a vector of %lld elements (%s)", fn, arg, describe(v).c_str(), (long long)n,
             what);
}

inline void need_shape(const char* fn, const char* arg, const Matrix& m, int64_t r, int64_t c, const char* what) {
    if (m.rows != r || m.cols != c)
        fail("%s: %s is %s but must be %lld×%lld (%s)", fn, arg, describe(m).c_str(), (long long)r, (long long)c,
             what);
}

inline Matrix make(Device& dev, int64_t rows, int64_t cols, DType dtype) {
    Matrix m;
    m.buf = dev.alloc(dtype, size_t(rows * cols));
    m.rows = rows;
    m.cols = cols;
    m.ld = rows > 0 ? rows : 1;
    return m;
}

inline void check_index(const char* fn, const Matrix& m, int64_t i, int64_t j) {
    if (i < 0 || i >= m.rows || j < 0 || j >= m.cols)
        fail("%s: index (%lld, %lld) is out of range for a %s matrix (rows 1..%lld, columns 1..%lld)", fn,
             (long long)i + 1, (long long)j + 1, describe(m).c_str(), (long long)m.rows, (long long)m.cols);
}

// The common checks of a two-operand level-1 kernel; returns y in x's shape.
inline const Matrix& pair(const char* fn, const Matrix& x, const Matrix& y, Matrix& tmp) {
    f32_operands(fn, {{"x", x}, {"y", y}});
    const Matrix& yy = like(fn, "x", x, "y", y, tmp);
    no_partial_overlap(fn, "y", yy, "x", x);
    return yy;
}

// The checks of a one-operand level-1 kernel.
inline void single(const char* fn, const Matrix& x) {
    check_live(fn, "x", x);
    need_f32(fn, "x", x);
}

}  // namespace vela::opcheck

// The checked kernel API. Every argument rule lives here, once for every
// device: a Device sees only valid operands (live, on itself, right dtypes,
// agreeing shapes, no forbidden aliasing). Messages name the function, the
// argument and expected versus actual; indices in messages are 1-based, as
// the user typed them.
//
// Level-1 and elementwise kernels accept two vectors of equal length in any
// orientation (1×n beside n×1): the transposed view of a vector holds the
// same elements in the same order, so the operands are reoriented here to
// the first one's shape and every device sees equal shapes only.
#include "core/ops.hpp"

#include <cmath>
#include <vector>

#include "core/error.hpp"

namespace vela {

namespace {

constexpr int64_t kMaxElements = int64_t(1) << 40;

void check_size(const char* fn, int64_t rows, int64_t cols) {
    if (rows < 0) fail("%s: rows is %lld (must be ≥ 0)", fn, (long long)rows);
    if (cols < 0) fail("%s: cols is %lld (must be ≥ 0)", fn, (long long)cols);
    if (rows > kMaxElements || cols > kMaxElements || (cols > 0 && rows > kMaxElements / cols))
        fail("%s: %lld×%lld is too large (at most 2^40 elements)", fn, (long long)rows, (long long)cols);
}

std::string describe(const Matrix& m) { return m.shape_str(); }

void need_f32(const char* fn, const char* arg, const Matrix& m) {
    if (m.dtype() != DType::f32) fail("%s: %s is %s but must be float32", fn, arg, dtype_name(m.dtype()));
}

void same_device(const char* fn, const char* an, const Matrix& a, const char* bn, const Matrix& b) {
    if (&a.device() != &b.device()) {
        std::string da = a.device().name(), db = b.device().name();
        throw DeviceMismatch(format("%s: %s is on %s but %s is on %s", fn, an, da.c_str(), bn, db.c_str()), da, db);
    }
}

// Exactly the same elements in the same order: in-place use of a kernel.
bool same_elements(const Matrix& a, const Matrix& b) {
    if (a.buf != b.buf || a.size() != b.size()) return false;
    if (a.size() == 0) return true;
    if (a.offset != b.offset) return false;
    if (a.size() == 1) return true;
    if (a.is_vector() && b.is_vector()) return a.inc() == b.inc();
    return a.rows == b.rows && a.cols == b.cols && a.ld == b.ld && a.trans == b.trans;
}

// An output may be its input exactly (in place) but not overlap it partially.
void no_partial_overlap(const char* fn, const char* out, const Matrix& o, const char* in, const Matrix& i) {
    if (o.overlaps(i) && !same_elements(o, i))
        fail("%s: %s partially overlaps %s (use the same view for in-place work, or disjoint views)", fn, out, in);
}

void no_overlap(const char* fn, const char* out, const Matrix& o, const char* in, const Matrix& i) {
    if (o.overlaps(i)) fail("%s: %s aliases %s (the output of %s must not overlap its inputs)", fn, out, in, fn);
}

// Same shape, or two vectors of one length. Returns b, or b reoriented to a's
// shape in tmp (no copy on the common path: a Matrix copy costs atomics).
const Matrix& like(const char* fn, const char* an, const Matrix& a, const char* bn, const Matrix& b, Matrix& tmp) {
    if (a.rows == b.rows && a.cols == b.cols) return b;
    if (a.is_vector() && b.is_vector() && a.size() == b.size()) return tmp = b.t();
    fail("%s: %s is %s but %s is %s (shapes must match)", fn, an, describe(a).c_str(), bn, describe(b).c_str());
}

void need_vector(const char* fn, const char* arg, const Matrix& v, int64_t n, const char* what) {
    if (!v.is_vector() || v.size() != n)
        fail("%s: %s is %s but must be a vector of %lld elements (%s)", fn, arg, describe(v).c_str(), (long long)n,
             what);
}

void need_shape(const char* fn, const char* arg, const Matrix& m, int64_t r, int64_t c, const char* what) {
    if (m.rows != r || m.cols != c)
        fail("%s: %s is %s but must be %lld×%lld (%s)", fn, arg, describe(m).c_str(), (long long)r, (long long)c,
             what);
}

Matrix make(Device& dev, int64_t rows, int64_t cols, DType dtype) {
    Matrix m;
    m.buf = dev.alloc(dtype, size_t(rows * cols));
    m.rows = rows;
    m.cols = cols;
    m.ld = rows > 0 ? rows : 1;
    return m;
}

void check_index(const char* fn, const Matrix& m, int64_t i, int64_t j) {
    if (i < 0 || i >= m.rows || j < 0 || j >= m.cols)
        fail("%s: index (%lld, %lld) is out of range for a %s matrix (rows 1..%lld, columns 1..%lld)", fn,
             (long long)i + 1, (long long)j + 1, describe(m).c_str(), (long long)m.rows, (long long)m.cols);
}

}  // namespace

void check_live(const char* fn, const char* arg, const Matrix& m) {
    if (!m.buf) fail("%s: %s is not a matrix (no storage)", fn, arg);
    if (m.buf->released()) fail("%s: %s is a released matrix", fn, arg);
}

// ---- construction and transfer ---------------------------------------------

Matrix empty(Device& dev, int64_t rows, int64_t cols, DType dtype) {
    check_size("matrix", rows, cols);
    return make(dev, rows, cols, dtype);
}

Matrix zeros(Device& dev, int64_t rows, int64_t cols, DType dtype) {
    if (dtype == DType::u8) return filled_u8(dev, rows, cols, 0);
    Matrix m = empty(dev, rows, cols, dtype);
    dev.fill(m, 0.0f);
    return m;
}

Matrix filled_u8(Device& dev, int64_t rows, int64_t cols, uint8_t v) {
    Matrix m = empty(dev, rows, cols, DType::u8);
    if (m.empty()) return m;
    // The fresh matrix is dense column-major: upload it as views of at most
    // kPiece bytes (whole columns where a column is small, else parts of one),
    // so ones(2^30, 1, "uint8") needs 1 GiB on the device and 1 MiB on the host.
    constexpr int64_t kPiece = int64_t(1) << 20;
    std::vector<uint8_t> piece(size_t(std::min<int64_t>(kPiece, m.size())), v);
    if (m.rows >= kPiece) {
        for (int64_t j = 0; j < m.cols; ++j)
            for (int64_t i = 0; i < m.rows; i += kPiece)
                dev.upload(m.view(i, j, std::min(kPiece, m.rows - i), 1), piece.data());
    } else {
        int64_t per = kPiece / m.rows;
        for (int64_t j = 0; j < m.cols; j += per) dev.upload(m.columns(j, std::min(per, m.cols - j)), piece.data());
    }
    return m;
}

Matrix from_host(Device& dev, int64_t rows, int64_t cols, const float* values) {
    Matrix m = empty(dev, rows, cols, DType::f32);
    if (!m.empty()) dev.upload(m, values);
    return m;
}

Matrix from_host_u8(Device& dev, int64_t rows, int64_t cols, const uint8_t* values) {
    Matrix m = empty(dev, rows, cols, DType::u8);
    if (!m.empty()) dev.upload(m, values);
    return m;
}

std::vector<float> to_host(const Matrix& m) {
    check_live("to_host", "m", m);
    std::vector<float> out(size_t(m.size()));
    if (m.empty()) return out;
    if (m.dtype() == DType::f32) {
        m.device().download(m, out.data());
    } else {
        std::vector<uint8_t> raw(out.size());
        m.device().download(m, raw.data());
        for (size_t k = 0; k < raw.size(); k++) out[k] = float(raw[k]);
    }
    return out;
}

Matrix to_device(const Matrix& m, Device& dev) {
    check_live("to", "m", m);
    if (&m.device() == &dev) return clone(m);
    Matrix out = make(dev, m.rows, m.cols, m.dtype());
    if (m.empty()) return out;
    std::vector<uint8_t> host(size_t(m.size()) * dtype_size(m.dtype()));
    m.device().download(m, host.data());
    dev.upload(out, host.data());
    return out;
}

Matrix clone(const Matrix& m) {
    check_live("copy", "m", m);
    Matrix out = make(m.device(), m.rows, m.cols, m.dtype());
    if (!m.empty()) m.device().copy(m, out);
    return out;
}

float get(const Matrix& m, int64_t i, int64_t j) {
    check_live("get", "m", m);
    check_index("get", m, i, j);
    Matrix e = m.view(i, j, 1, 1);
    if (m.dtype() == DType::f32) {
        float v;
        m.device().download(e, &v);
        return v;
    }
    uint8_t v;
    m.device().download(e, &v);
    return float(v);
}

void set(const Matrix& m, int64_t i, int64_t j, float v) {
    check_live("set", "m", m);
    check_index("set", m, i, j);
    Matrix e = m.view(i, j, 1, 1);
    if (m.dtype() == DType::f32) {
        m.device().upload(e, &v);
        return;
    }
    if (!(v >= 0 && v <= 255 && v == std::floor(v)))
        fail("set: value %g does not fit a uint8 matrix (integers 0..255)", double(v));
    uint8_t b = uint8_t(v);
    m.device().upload(e, &b);
}

// ---- views -------------------------------------------------------------------

Matrix view(const Matrix& m, int64_t i, int64_t j, int64_t rows, int64_t cols) {
    check_live("view", "m", m);
    if (rows < 0 || cols < 0)
        fail("view: size %lld×%lld is negative (must be ≥ 0)", (long long)rows, (long long)cols);
    if (i < 0 || j < 0 || i > m.rows || j > m.cols || rows > m.rows - i || cols > m.cols - j ||
        (i >= m.rows && rows > 0) || (j >= m.cols && cols > 0))
        fail("view: rows %lld..%lld, columns %lld..%lld are out of range for a %s matrix", (long long)i + 1,
             (long long)(i + rows), (long long)j + 1, (long long)(j + cols), describe(m).c_str());
    return m.view(i, j, rows, cols);
}

Matrix row(const Matrix& m, int64_t i) {
    check_live("row", "m", m);
    if (i < 0 || i >= m.rows)
        fail("row: row %lld is out of range for a %s matrix (rows 1..%lld)", (long long)i + 1, describe(m).c_str(),
             (long long)m.rows);
    return m.row(i);
}

Matrix col(const Matrix& m, int64_t j) {
    check_live("col", "m", m);
    if (j < 0 || j >= m.cols)
        fail("col: column %lld is out of range for a %s matrix (columns 1..%lld)", (long long)j + 1,
             describe(m).c_str(), (long long)m.cols);
    return m.col(j);
}

Matrix columns(const Matrix& m, int64_t j, int64_t n) {
    check_live("columns", "m", m);
    if (n < 0) fail("columns: count is %lld (must be ≥ 0)", (long long)n);
    if (j < 0 || j > m.cols || n > m.cols - j || (j >= m.cols && n > 0))
        fail("columns: columns %lld..%lld are out of range for a %s matrix (columns 1..%lld)", (long long)j + 1,
             (long long)(j + n), describe(m).c_str(), (long long)m.cols);
    return m.columns(j, n);
}

// ---- level 3 and 2 -------------------------------------------------------------

void mm(float alpha, const Matrix& a, const Matrix& b, float beta, const Matrix& c) {
    const char* fn = "mm";
    check_live(fn, "a", a), check_live(fn, "b", b), check_live(fn, "c", c);
    same_device(fn, "a", a, "b", b), same_device(fn, "a", a, "c", c);
    need_f32(fn, "a", a), need_f32(fn, "b", b), need_f32(fn, "c", c);
    if (a.cols != b.rows)
        fail("mm: a is %s but b is %s (a's columns must equal b's rows)", describe(a).c_str(), describe(b).c_str());
    if (c.rows != a.rows || c.cols != b.cols)
        fail("mm: c is %s but a·b is %lld×%lld (c must have a's rows and b's columns)", describe(c).c_str(),
             (long long)a.rows, (long long)b.cols);
    no_overlap(fn, "c", c, "a", a), no_overlap(fn, "c", c, "b", b);
    c.device().mm(alpha, a, b, beta, c);
}

void mv(float alpha, const Matrix& a, const Matrix& x, float beta, const Matrix& y) {
    const char* fn = "mv";
    check_live(fn, "a", a), check_live(fn, "x", x), check_live(fn, "y", y);
    same_device(fn, "a", a, "x", x), same_device(fn, "a", a, "y", y);
    need_f32(fn, "a", a), need_f32(fn, "x", x), need_f32(fn, "y", y);
    if (!x.is_vector() || x.size() != a.cols)
        fail("mv: a is %s but x is %s (x must be a vector of a's %lld columns)", describe(a).c_str(),
             describe(x).c_str(), (long long)a.cols);
    if (!y.is_vector() || y.size() != a.rows)
        fail("mv: a is %s but y is %s (y must be a vector of a's %lld rows)", describe(a).c_str(), describe(y).c_str(),
             (long long)a.rows);
    no_overlap(fn, "y", y, "a", a), no_overlap(fn, "y", y, "x", x);
    y.device().mv(alpha, a, x, beta, y);
}

void rk(float alpha, const Matrix& x, const Matrix& y, const Matrix& a) {
    const char* fn = "rk";
    check_live(fn, "x", x), check_live(fn, "y", y), check_live(fn, "a", a);
    same_device(fn, "x", x, "y", y), same_device(fn, "x", x, "a", a);
    need_f32(fn, "x", x), need_f32(fn, "y", y), need_f32(fn, "a", a);
    if (!x.is_vector() || x.size() != a.rows)
        fail("rk: a is %s but x is %s (x must be a vector of a's %lld rows)", describe(a).c_str(), describe(x).c_str(),
             (long long)a.rows);
    if (!y.is_vector() || y.size() != a.cols)
        fail("rk: a is %s but y is %s (y must be a vector of a's %lld columns)", describe(a).c_str(),
             describe(y).c_str(), (long long)a.cols);
    no_overlap(fn, "a", a, "x", x), no_overlap(fn, "a", a, "y", y);
    a.device().rk(alpha, x, y, a);
}

// ---- level 1 -------------------------------------------------------------------

namespace {

// The common checks of a two-operand level-1 kernel; returns y in x's shape.
const Matrix& pair(const char* fn, const Matrix& x, const Matrix& y, Matrix& tmp) {
    check_live(fn, "x", x), check_live(fn, "y", y);
    same_device(fn, "x", x, "y", y);
    need_f32(fn, "x", x), need_f32(fn, "y", y);
    const Matrix& yy = like(fn, "x", x, "y", y, tmp);
    no_partial_overlap(fn, "y", yy, "x", x);
    return yy;
}

void single(const char* fn, const Matrix& x) {
    check_live(fn, "x", x);
    need_f32(fn, "x", x);
}

}  // namespace

void axpy(float alpha, const Matrix& x, const Matrix& y) {
    Matrix tmp;
    const Matrix& yy = pair("axpy", x, y, tmp);
    x.device().axpby(alpha, x, 1.0f, yy);
}

void axpby(float alpha, const Matrix& x, float beta, const Matrix& y) {
    Matrix tmp;
    const Matrix& yy = pair("axpby", x, y, tmp);
    x.device().axpby(alpha, x, beta, yy);
}

void scal(float alpha, const Matrix& x) {
    single("scal", x);
    x.device().scal(alpha, x);
}

void copy(const Matrix& x, const Matrix& y) {
    const char* fn = "copy";
    check_live(fn, "x", x), check_live(fn, "y", y);
    same_device(fn, "x", x, "y", y);
    if (x.dtype() != y.dtype() && !(x.dtype() == DType::u8 && y.dtype() == DType::f32))
        fail("copy: x is %s but y is %s (copy keeps the dtype or converts uint8 to float32)", dtype_name(x.dtype()),
             dtype_name(y.dtype()));
    Matrix tmp;
    const Matrix& yy = like(fn, "x", x, "y", y, tmp);
    no_partial_overlap(fn, "y", yy, "x", x);
    if (same_elements(x, yy) && x.dtype() == y.dtype()) return;
    x.device().copy(x, yy);
}

void swap(const Matrix& x, const Matrix& y) {
    Matrix tmp;
    const Matrix& yy = pair("swap", x, y, tmp);
    if (same_elements(x, yy)) return;
    x.device().swap(x, yy);
}

void fill(const Matrix& x, float v) {
    single("fill", x);
    x.device().fill(x, v);
}

double dot(const Matrix& x, const Matrix& y) {
    const char* fn = "dot";
    check_live(fn, "x", x), check_live(fn, "y", y);
    same_device(fn, "x", x, "y", y);
    need_f32(fn, "x", x), need_f32(fn, "y", y);
    Matrix tmp;
    const Matrix& yy = like(fn, "x", x, "y", y, tmp);
    return x.device().reduce(Reduce::dot, x, &yy);
}

double nrm2(const Matrix& x) {
    single("nrm2", x);
    return x.device().reduce(Reduce::nrm2, x, nullptr);
}

double asum(const Matrix& x) {
    single("asum", x);
    return x.device().reduce(Reduce::asum, x, nullptr);
}

double sum(const Matrix& x) {
    single("sum", x);
    return x.device().reduce(Reduce::sum, x, nullptr);
}

int64_t imax(const Matrix& x) {
    single("imax", x);
    if (x.empty()) fail("imax: x is %s (an empty matrix has no largest element)", describe(x).c_str());
    return x.device().imax(x);
}

// ---- elementwise ---------------------------------------------------------------

void unary(Unary op, const Matrix& x, const Matrix& y, const float* params) {
    if (op >= Unary::count_) fail("unary: unknown operation %d", int(op));
    const char* fn = unary_name(op);
    check_live(fn, "x", x), check_live(fn, "y", y);
    same_device(fn, "x", x, "y", y);
    need_f32(fn, "x", x), need_f32(fn, "y", y);
    Matrix tmp;
    const Matrix& yy = like(fn, "x", x, "y", y, tmp);
    no_partial_overlap(fn, "y", yy, "x", x);
    if (unary_params(op) > 0 && !params) fail("%s: its %d parameters are missing", fn, unary_params(op));
    x.device().unary(op, x, yy, params);
}

void binary(Binary op, const Matrix& a, const Matrix& b, const Matrix& c) {
    if (op >= Binary::count_) fail("binary: unknown operation %d", int(op));
    const char* fn = binary_name(op);
    check_live(fn, "a", a), check_live(fn, "b", b), check_live(fn, "c", c);
    same_device(fn, "a", a, "b", b), same_device(fn, "a", a, "c", c);
    need_f32(fn, "a", a), need_f32(fn, "b", b), need_f32(fn, "c", c);
    Matrix tb, tc;
    const Matrix& bb = like(fn, "a", a, "b", b, tb);
    const Matrix& cc = like(fn, "a", a, "c", c, tc);
    no_partial_overlap(fn, "c", cc, "a", a), no_partial_overlap(fn, "c", cc, "b", bb);
    a.device().binary(op, a, bb, cc);
}

// ---- fused ---------------------------------------------------------------------

void softmax(const Matrix& x, const Matrix& y) {
    const char* fn = "softmax";
    check_live(fn, "x", x), check_live(fn, "y", y);
    same_device(fn, "x", x, "y", y);
    need_f32(fn, "x", x), need_f32(fn, "y", y);
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

void argmax(const Matrix& x, const Matrix& idx) {
    const char* fn = "argmax";
    check_live(fn, "x", x), check_live(fn, "idx", idx);
    same_device(fn, "x", x, "idx", idx);
    need_f32(fn, "x", x), need_f32(fn, "idx", idx);
    if (x.rows == 0 && x.cols > 0) fail("argmax: x is %s (a column without rows has no maximum)", describe(x).c_str());
    need_vector(fn, "idx", idx, x.cols, "one index per column of x");
    no_overlap(fn, "idx", idx, "x", x);
    x.device().argmax(x, idx);
}

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
    check_live(fn, "b", b), check_live(fn, "y", y);
    same_device(fn, "b", b, "y", y);
    need_f32(fn, "b", b), need_f32(fn, "y", y);
    need_vector(fn, "b", b, y.rows, "one bias per row of y");
    no_overlap(fn, "y", y, "b", b);
    y.device().add_bias(b, y);
}

void dense(const Matrix& w, const Matrix& x, const Matrix& b, Act act, const Matrix& y) {
    const char* fn = "dense";
    check_live(fn, "w", w), check_live(fn, "x", x), check_live(fn, "b", b), check_live(fn, "y", y);
    same_device(fn, "w", w, "x", x), same_device(fn, "w", w, "b", b), same_device(fn, "w", w, "y", y);
    need_f32(fn, "w", w), need_f32(fn, "x", x), need_f32(fn, "b", b), need_f32(fn, "y", y);
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
    check_live(fn, "da", da), check_live(fn, xn, x), check_live(fn, "delta", delta);
    same_device(fn, "da", da, xn, x), same_device(fn, "da", da, "delta", delta);
    need_f32(fn, "da", da), need_f32(fn, xn, x), need_f32(fn, "delta", delta);
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

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
#include "core/ops_check.hpp"

namespace vela {

using namespace opcheck;

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
    check_mm("mm", a, b, "c", c);
    c.device().mm(alpha, a, b, beta, c);
}

void mv(float alpha, const Matrix& a, const Matrix& x, float beta, const Matrix& y) {
    const char* fn = "mv";
    f32_operands(fn, {{"a", a}, {"x", x}, {"y", y}});
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
    f32_operands(fn, {{"x", x}, {"y", y}, {"a", a}});
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
    f32_operands(fn, {{"x", x}, {"y", y}});
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

}  // namespace vela

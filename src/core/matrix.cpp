#include "core/matrix.hpp"

#include "core/device.hpp"

namespace vela {

size_t dtype_size(DType t) { return t == DType::f32 ? 4 : 1; }
const char* dtype_name(DType t) { return t == DType::f32 ? "float32" : "uint8"; }

Matrix Matrix::t() const {
    Matrix m = *this;
    m.rows = cols;
    m.cols = rows;
    m.trans = !trans;
    return m;
}

Matrix Matrix::view(int64_t i, int64_t j, int64_t r, int64_t c) const {
    Matrix m = *this;
    m.offset = (r > 0 && c > 0) || (i < rows && j < cols) ? index(i, j) : offset;
    m.rows = r;
    m.cols = c;
    return m;
}

bool Matrix::overlaps(const Matrix& o) const {
    if (buf != o.buf || empty() || o.empty()) return false;
    if (last_index() < o.first_index() || o.last_index() < first_index()) return false;
    // Same storage layout and leading dimension: compare the stored row and column ranges exactly.
    if (ld == o.ld) {
        auto range = [](const Matrix& m, int64_t& r0, int64_t& r1, int64_t& c0, int64_t& c1) {
            r0 = m.offset % m.ld;
            c0 = m.offset / m.ld;
            r1 = r0 + m.srows() - 1;
            c1 = c0 + m.scols() - 1;
        };
        int64_t a0, a1, b0, b1, p0, p1, q0, q1;
        range(*this, a0, a1, b0, b1);
        range(o, p0, p1, q0, q1);
        if (a1 < ld && p1 < ld) return !(a1 < p0 || p1 < a0 || b1 < q0 || q1 < b0);
    }
    return true;
}

std::string Matrix::shape_str() const { return std::to_string(rows) + "×" + std::to_string(cols); }

}  // namespace vela

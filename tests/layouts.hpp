// Operands of a kernel test in the three layouts a view can have: plain, the
// transpose of a stored matrix, and a block inside a larger matrix (ld >
// rows, a non-zero offset), each holding given values in column-major logical
// order. Shared by the optimizer kernels' tests.
#pragma once
#include <cstdint>
#include <vector>

#include "core/ops.hpp"
#include "every_device.hpp"

namespace vela::test {

enum class Layout { dense, trans, strided };
inline const char* layout_name(Layout l) {
    return l == Layout::dense ? "dense" : l == Layout::trans ? "transposed" : "strided";
}

// A rows×cols operand holding `vals` in the layout, and the buffer behind it
// (kept alive by the view). strided: inside a (rows + 3)×(cols + 2) matrix of
// −7 at (2, 1).
inline Matrix operand(Device& d, Layout l, int64_t rows, int64_t cols, const std::vector<float>& vals) {
    if (l == Layout::dense) return from_host(d, rows, cols, vals.data());
    if (l == Layout::trans) {
        std::vector<float> st(vals.size());  // the stored cols×rows matrix is the transpose
        for (int64_t j = 0; j < cols; j++)
            for (int64_t i = 0; i < rows; i++) st[size_t(j + i * cols)] = vals[size_t(i + j * rows)];
        return from_host(d, cols, rows, st.data()).t();
    }
    const int64_t R = rows + 3, C = cols + 2;
    std::vector<float> big(size_t(R * C), -7.0f);
    for (int64_t j = 0; j < cols; j++)
        for (int64_t i = 0; i < rows; i++) big[size_t(2 + i + (1 + j) * R)] = vals[size_t(i + j * rows)];
    return view(from_host(d, R, C, big.data()), 2, 1, rows, cols);
}

// splitmix64 values in [lo, hi): independent of anything under test.
inline std::vector<float> data(size_t n, uint64_t seed, double lo, double hi) { return splitmix_values(n, seed, lo, hi); }

}  // namespace vela::test

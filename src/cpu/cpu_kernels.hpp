// Internal to the CPU device: what the topic files that define CpuDevice's
// kernels (cpu/cpu_device.hpp) share: the buffers' host addresses, the untimed
// forms of the kernels others call, and the walk over equal-shape operands.
// Operands are valid (checked by core/ops.cpp) and live in CpuBuffers.
#pragma once
#include <array>
#include <cstdint>

#include "core/device.hpp"
#include "cpu/cpu_device.hpp"
#include "cpu/pool.hpp"

namespace vela::cpu {

// Host address of a buffer's first element, and of a view's element (0, 0).
void* base(const Matrix& m);
inline float* fbase(const Matrix& m) { return static_cast<float*>(base(m)); }
inline uint8_t* bbase(const Matrix& m) { return static_cast<uint8_t*>(base(m)); }
inline float* fptr(const Matrix& m) { return fbase(m) + m.offset; }

// The runs of one or two equal-shape operands, for the kernels that go
// through BLAS or need the logical index: calls
//   f(n, k0, xo, xinc, yo, yinc)
// for runs of n elements, k0 the first element's column-major logical index,
// xo/yo buffer element indices of the run's start. A vector is one run, two
// dense operands one run, anything else one run per column. With `reorder`
// (the result does not depend on the order) two transposed operands are
// walked in their stored order instead.
template <class F>
void matrix_runs(const Matrix& x, const Matrix& y, F& f) {
    if (x.contiguous() && y.contiguous()) return f(x.size(), int64_t(0), x.offset, int64_t(1), y.offset, int64_t(1));
    for (int64_t j = 0; j < x.cols; j++) f(x.rows, j * x.rows, x.index(0, j), x.row_step(), y.index(0, j), y.row_step());
}

// No Matrix is copied on the way to a vector's single run: a shared_ptr copy
// is an atomic operation, a visible share of a one-element kernel's cost.
template <class F>
void runs(const Matrix& x, const Matrix* y0, bool reorder, F&& f) {
    const Matrix& y = y0 ? *y0 : x;
    if (x.empty()) return;
    if (x.is_vector()) return f(x.size(), int64_t(0), x.offset, x.inc(), y.offset, y.inc());
    if (reorder && x.trans && y.trans) {
        Matrix xt = x.t(), yt = y.t();
        return matrix_runs(xt, yt, f);
    }
    matrix_runs(x, y, f);
}

// Elements per task below which the own loops stay on the calling thread.
constexpr int64_t kGrain = 1 << 15;

// The kernels other kernels call, neither counted nor timed (CpuDevice's
// counts one kernel per call of the user's): blas.cpp, elementwise.cpp.
void mm_plain(float alpha, const Matrix& a, const Matrix& b, float beta, const Matrix& c);
// mm_plain, then after(ctx, r0, r1, j0, j1) on rows r0..r1 − 1 of columns j0..j1 − 1
// of c: each piece of a cut product (blas.cpp says how it is cut) by the thread
// that computed it, while in its cache (dense's bias and activation, mm_optim's
// update); the whole of c at the end otherwise.
using BlockFn = void (*)(void* ctx, int64_t r0, int64_t r1, int64_t j0, int64_t j1);
void mm_plain_then(float alpha, const Matrix& a, const Matrix& b, float beta, const Matrix& c, BlockFn after,
                   void* ctx);
void scal_plain(float alpha, const Matrix& x);
void copy_plain(const Matrix& x, const Matrix& y);
void fill_plain(const Matrix& x, float v);
// y ← op(x) over n dense floats with unary()'s own stride-1 loop (the one for this CPU).
void unary_run(Unary op, const float* x, float* y, int64_t n);

// Calls f(n, p, s) over runs of n elements of K equal-shape float operands,
// p[k] the run's start in operand k and s[k] its stride, in parallel above
// grain_elems (kGrain) elements. Elementwise math does not care about order, so when every
// operand is transposed the walk follows the stored layout, and when every
// operand is one dense run the whole matrix is one run (cut into chunks).
// Operands come as pointers: copying a Matrix costs atomic reference counts.
template <size_t K, class F>
void walk(std::array<const Matrix*, K> ms, F&& f, int64_t grain_elems = kGrain) {
    bool all_trans = true;
    for (const Matrix* m : ms) all_trans = all_trans && m->trans;
    std::array<Matrix, K> flipped;
    if (all_trans && ms[0]->rows != 1 && ms[0]->cols != 1)
        for (size_t k = 0; k < K; k++) flipped[k] = ms[k]->t(), ms[k] = &flipped[k];
    const int64_t rows = ms[0]->rows, cols = ms[0]->cols;
    if (rows == 0 || cols == 0) return;
    std::array<float*, K> base;
    std::array<int64_t, K> rs, cs;
    bool dense = true;
    for (size_t k = 0; k < K; k++) {
        base[k] = fptr(*ms[k]);
        rs[k] = ms[k]->row_step();
        cs[k] = ms[k]->col_step();
        dense = dense && ms[k]->contiguous();
    }
    if (dense || rows == 1 || cols == 1) {
        // One run: a row vector steps by its column step, a dense block by 1.
        if (rows == 1) rs = cs;
        else if (cols > 1) rs.fill(1);
        const int64_t n = rows * cols;
        parallel_for(n, grain_elems, [&](int64_t b, int64_t e) {
            std::array<float*, K> p;
            for (size_t k = 0; k < K; k++) p[k] = base[k] + b * rs[k];
            f(e - b, p, rs);
        });
        return;
    }
    const int64_t grain = rows >= grain_elems ? 1 : grain_elems / rows;
    parallel_for(cols, grain, [&](int64_t jb, int64_t je) {
        for (int64_t j = jb; j < je; j++) {
            std::array<float*, K> p;
            for (size_t k = 0; k < K; k++) p[k] = base[k] + j * cs[k];
            f(rows, p, rs);
        }
    });
}

}  // namespace vela::cpu

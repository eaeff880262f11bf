// The fused kernels of the CPU device, one pass per column, threaded over
// columns: softmax, softmax + cross-entropy, argmax/argmin, gather_cols, the bias
// broadcast and the dense layer's bias + activation pass after the GEMM.
// As in elementwise.cpp: lets the exp loops vectorise, and without jump
// threading GCC keeps exp's clamps ahead of its polynomial (docs/results.md).
#pragma GCC optimize("no-math-errno", "no-trapping-math", "no-thread-jumps")
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/index_check.hpp"
#include "cpu/cpu_kernels.hpp"
#include "cpu/isa.hpp"
#include "cpu/vmath.hpp"

namespace vela::cpu {

namespace {

// A column j of a view: p[i * s] for i < rows.
struct Col {
    float* p;
    int64_t s;
};
inline Col column(const Matrix& m, int64_t j) { return {fbase(m) + m.index(0, j), m.row_step()}; }

// Vector element k, float or uint8.
inline float element(const Matrix& v, int64_t k) {
    int64_t at = v.offset + k * v.inc();
    return v.dtype() == DType::f32 ? fbase(v)[at] : float(bbase(v)[at]);
}

// The index contract (core/index_check.hpp): every element of v an integer in
// 1..c.limit, checked before anything is written; the first bad one throws.
void check_indices(const Matrix& v, int64_t n, const IndexCheck& c) {
    for (int64_t k = 0; k < n; k++)
        if (!index_ok(element(v, k), c.limit)) throw Error(bad_index_message(c, uint64_t(k)));
}

template <class F>
void per_column(const Matrix& m, F&& f) {
    const int64_t grain = m.rows >= kGrain ? 1 : kGrain / (m.rows > 0 ? m.rows : 1);
    parallel_for(m.cols, grain, [&](int64_t jb, int64_t je) {
        for (int64_t j = jb; j < je; j++) f(j);
    });
}

// A dense column's three passes (the max, y ← exp(x − m) with Σ y in double,
// y ← f·y), compiled three times like elementwise.cpp's loops (isa.hpp): for
// x86-64-v4 (512-bit vectors), x86-64-v3 and the baseline x86-64; the process
// takes dense_runs[isa()]. vela_core is built with -ffp-contract=off and each
// pass keeps its order (the double sum one element at a time), so
// every path gives the same bits (tests/test_cpu_isa.cpp). The max runs in 16
// lanes (rows k, k + 16, ... each; four SSE registers on every path: one
// chain of compares 512 long was the pass's bound), then across them: the same largest number
// as one element at a time (a NaN is never taken, either way), but for the sign
// of a zero maximum, which no result sees (x − (±0) and e^(±0) are the same).
using F4 = float __attribute__((vector_size(16)));  // GCC's vector extension: one SSE register
#define VELA_DENSE_AT(suffix, attr)                                                               \
    attr float max_##suffix(const float* x, int64_t n) {                                          \
        float m = -std::numeric_limits<float>::infinity();                                        \
        int64_t i = 0;                                                                            \
        if (n >= 32) {                                                                            \
            F4 l0 = {m, m, m, m}, l1 = l0, l2 = l0, l3 = l0, v[4];                                \
            for (; i + 16 <= n; i += 16) {                                                        \
                __builtin_memcpy(v, x + i, sizeof v);                                             \
                l0 = v[0] > l0 ? v[0] : l0, l1 = v[1] > l1 ? v[1] : l1;                           \
                l2 = v[2] > l2 ? v[2] : l2, l3 = v[3] > l3 ? v[3] : l3;                           \
            }                                                                                     \
            for (F4 l : {l0, l1, l2, l3})                                                         \
                for (int k = 0; k < 4; k++) m = l[k] > m ? l[k] : m;                              \
        }                                                                                         \
        for (; i < n; i++) m = x[i] > m ? x[i] : m;                                               \
        return m;                                                                                 \
    }                                                                                             \
    attr double exp_##suffix(const float* x, float* y, int64_t n, float m) {                      \
        for (int64_t i = 0; i < n; i++) y[i] = exp_f(x[i] - m);                                   \
        double s = 0;                                                                             \
        for (int64_t i = 0; i < n; i++) s += y[i];                                                \
        return s;                                                                                 \
    }                                                                                             \
    attr void scale_##suffix(float* y, int64_t n, float f) {                                      \
        for (int64_t i = 0; i < n; i++) y[i] *= f;                                                \
    }
VELA_DENSE_AT(v4, VELA_V4)
VELA_DENSE_AT(v3, VELA_V3)
VELA_DENSE_AT(base, )
#undef VELA_DENSE_AT
struct DenseCol {
    float (*max)(const float*, int64_t);
    double (*exp)(const float*, float*, int64_t, float);
    void (*scale)(float*, int64_t, float);
};
const DenseCol dense_runs[kIsaCount] = {
    {max_base, exp_base, scale_base}, {max_v3, exp_v3, scale_v3}, {max_v4, exp_v4, scale_v4}};

float col_max(Col x, int64_t n, const DenseCol& d) {
    if (x.s == 1) return d.max(x.p, n);
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t i = 0; i < n; i++) m = x.p[i * x.s] > m ? x.p[i * x.s] : m;
    return m;
}

// y ← exp(x − m) and returns Σ y in double.
double exp_shifted(Col x, Col y, int64_t n, float m, const DenseCol& d) {
    if (x.s == 1 && y.s == 1) return d.exp(x.p, y.p, n, m);
    for (int64_t i = 0; i < n; i++) y.p[i * y.s] = exp_f(x.p[i * x.s] - m);
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += y.p[i * y.s];
    return s;
}

void scale_col(Col y, int64_t n, float f, const DenseCol& d) {
    if (y.s == 1) return d.scale(y.p, n, f);
    for (int64_t i = 0; i < n; i++) y.p[i * y.s] *= f;
}

}  // namespace

namespace {
void softmax_col(Col x, Col y, int64_t n, const DenseCol& d) {
    float m = col_max(x, n, d);
    double s = exp_shifted(x, y, n, m, d);
    scale_col(y, n, float(1.0 / s), d);
}
}  // namespace

void softmax_col_at(Isa path, const float* x, float* y, int64_t n) {
    softmax_col({const_cast<float*>(x), 1}, {y, 1}, n, dense_runs[int(path)]);
}

void CpuDevice::softmax(const Matrix& x, const Matrix& y) {
    Timed t(this, Kernel::softmax);
    const int64_t n = x.rows;
    const DenseCol& d = dense_runs[int(isa())];
    per_column(x, [&](int64_t j) { softmax_col(column(x, j), column(y, j), n, d); });
}

// Every label an integer in 1..k (checked first: a bad one throws before anything is written).
void CpuDevice::softmax_xent(const Matrix& z, const Matrix& labels, const Matrix& loss, float scale, const Matrix& dz) {
    Timed t(this, Kernel::softmax_xent);
    const int64_t k = z.rows;
    const bool has_loss = loss.buf != nullptr;
    const DenseCol& d = dense_runs[int(isa())];
    check_indices(labels, z.cols, {"softmax_xent", "labels", "a class index", uint64_t(k)});
    auto one = [&](int64_t j) {
        Col zc = column(z, j), dc = column(dz, j);
        int64_t c = int64_t(element(labels, j)) - 1;
        float m = col_max(zc, k, d);
        float zl = zc.p[c * zc.s];  // read before dz (which may be z) is written
        double s = exp_shifted(zc, dc, k, m, d);
        if (has_loss) fbase(loss)[loss.offset + j * loss.inc()] = float(std::log(s) + double(m) - zl);
        scale_col(dc, k, float(double(scale) / s), d);
        dc.p[c * dc.s] -= scale;
    };
    // A column costs ~100 ns at 10 rows (three passes, exp in double, a log):
    // some 40 times an element of the loops kGrain was sized for. When that is
    // more than a grain, one piece per thread: the column halves of the output
    // layer's product (cut in columns) that each thread still has in cache.
    const int64_t threads = pool_threads();
    const int64_t grain = threads > 1 && k * z.cols * 40 >= kGrain ? piece_step(z.cols, threads, 8) : z.cols;
    parallel_for(z.cols, grain, [&](int64_t jb, int64_t je) {
        for (int64_t j = jb; j < je; j++) one(j);
    });
}

namespace {

// argmax's rule, one element at a time: v replaces the best so far when
// larger, or when the best is NaN and v is a number (the first maximum wins;
// NaN loses to any number; a column of NaN gives row 1). argmin is argmax of
// sgn·x with sgn = −1: the loops below take sgn and multiply each element they
// read by it (exact, and a NaN stays NaN), so the first minimum wins the same way.
inline bool argmax_takes(float v, float best) { return v > best || (best != best && v == v); }

// One step of argmax_takes on (bv, bi), written with masks: GCC turns the
// plain form into branches, which random data mispredicts half the time.
inline void argmax_step(float v, int64_t i, float& bv, int64_t& bi) {
    const int32_t take = int32_t(v > bv) | (int32_t(bv != bv) & int32_t(v == v));
    const int64_t m = -int64_t(take);
    uint32_t vb, bb;
    __builtin_memcpy(&vb, &v, 4);
    __builtin_memcpy(&bb, &bv, 4);
    bb = (vb & uint32_t(m)) | (bb & ~uint32_t(m));
    __builtin_memcpy(&bv, &bb, 4);
    bi = (i & m) | (bi & ~m);
}

// F4 (above): four lanes, one SSE register on the baseline x86-64.
using I4 = int32_t __attribute__((vector_size(16)));

// One lane block's step: v replaces the lane's best when argmax_takes would.
inline void lanes_take(F4 v, I4 at, F4& lv, I4& li) {
    const I4 take = (v > lv) | ((lv != lv) & (v == v));
    lv = take ? v : lv;
    li = take ? at : li;
}

// The 0-based row of the maximum of sgn·p[0..n), by argmax_takes.
// Lane k of sixteen sees rows k, k + 16, ... in order (so its best is the
// first maximum among its rows; it starts at NaN, which any number replaces);
// the lanes then meet by value (NaN losing, the smaller row on ties), and the
// rows past the last whole sixteen follow one at a time: the same row as the
// plain loop. Compiled for AVX2 too (blends instead of and/andnot/or).
__attribute__((target_clones("arch=x86-64-v3", "default"))) int64_t argmax_dense(const float* p, int64_t n,
                                                                                   float sgn) {
    int64_t i = 0;
    float bv = std::numeric_limits<float>::quiet_NaN();
    int64_t best = -1;
    if (n >= 32 && n <= INT32_MAX) {
        const float nan = std::numeric_limits<float>::quiet_NaN();
        F4 lv[4], v[4];
        I4 li[4], at[4];
        for (int a = 0; a < 4; a++) {
            lv[a] = F4{nan, nan, nan, nan};
            li[a] = I4{-1, -1, -1, -1};
            at[a] = I4{4 * a, 4 * a + 1, 4 * a + 2, 4 * a + 3};
        }
        const I4 sixteen = {16, 16, 16, 16};
        const F4 s4 = {sgn, sgn, sgn, sgn};
        for (; i + 16 <= n; i += 16) {
            __builtin_memcpy(v, p + i, sizeof v);
            for (int a = 0; a < 4; a++) lanes_take(v[a] * s4, at[a], lv[a], li[a]), at[a] += sixteen;
        }
        for (int a = 0; a < 4; a++)
            for (int k = 0; k < 4; k++) {
                if (li[a][k] < 0) continue;  // a lane of NaN
                if (best < 0 || lv[a][k] > bv || (lv[a][k] == bv && li[a][k] < best)) bv = lv[a][k], best = li[a][k];
            }
    }
    for (; i < n; i++) argmax_step(sgn * p[i], i, bv, best);
    return best < 0 ? 0 : best;
}

// Columns 0..m-1 of a view with element (i, j) at q[i·rs + j·cs]: bv, bi ←
// each column's maximum of sgn·x and its 0-based row by argmax_takes, the
// rows swept in order (the columns are independent: no chain of compares to
// wait on, and with cs = 1 the loop over them vectorises).
template <bool kUnit>
inline void argmax_rows_at(const float* q, int64_t rs, int64_t cs, int64_t rows, int64_t m, float sgn, float* bv,
                           float* bi) {
    const int64_t s = kUnit ? 1 : cs;
    for (int64_t j = 0; j < m; j++) bv[j] = sgn * q[j * s], bi[j] = 0.0f;
    for (int64_t i = 1; i < rows; i++) {
        const float* r = q + i * rs;
        const float fi = float(i);
        for (int64_t j = 0; j < m; j++) {
            const float v = sgn * r[j * s];
            const bool t = v > bv[j] || (bv[j] != bv[j] && v == v);
            bv[j] = t ? v : bv[j];
            bi[j] = t ? fi : bi[j];
        }
    }
}
__attribute__((target_clones("arch=x86-64-v3", "default"))) void argmax_rows(const float* q, int64_t rs,
                                                                              int64_t cs, int64_t rows, int64_t m,
                                                                              float sgn, float* bv, float* bi) {
    if (cs == 1) argmax_rows_at<true>(q, rs, 1, rows, m, sgn, bv, bi);
    else argmax_rows_at<false>(q, rs, cs, rows, m, sgn, bv, bi);
}

}  // namespace

void CpuDevice::arg_extreme(const Matrix& x, const Matrix& idx, Extreme e) {
    Timed t(this, e == Extreme::smallest ? "argmin" : "argmax");
    const float sgn = e == Extreme::smallest ? -1.0f : 1.0f;
    float* out = fbase(idx) + idx.offset;
    const int64_t inc = idx.inc(), rows = x.rows, cols = x.cols;
    const int64_t rs = x.row_step(), cs = x.col_step();
    if (rows > 1 && cols > 1 && ((rs != 1 && cs == 1) || rows < 32)) {
        // The rows of x stored contiguously (xᵀ of a dense matrix: the
        // maximum along each row), or short columns: sweep the rows in order
        // over a block of columns at a time, each column keeping its best row
        // (the same rule in the same order as down one column).
        // Columns in blocks of up to 2048 (16 KiB of bests, in L1/L2), so a
        // matrix larger than the caches is read from memory once.
        constexpr int64_t kBlock = 2048;
        const float* base = fbase(x) + x.offset;
        const int64_t grain = std::max<int64_t>(1, kGrain / rows);
        parallel_for(cols, grain, [&](int64_t jb, int64_t je) {
            float bv[kBlock], bi[kBlock];
            for (int64_t j0 = jb; j0 < je; j0 += kBlock) {
                const int64_t m = std::min(kBlock, je - j0);
                argmax_rows(base + j0 * cs, rs, cs, rows, m, sgn, bv, bi);
                for (int64_t j = 0; j < m; j++) out[(j0 + j) * inc] = bi[j] + 1.0f;
            }
        });
        return;
    }
    per_column(x, [&](int64_t j) {
        Col xc = column(x, j);
        if (xc.s == 1) {
            out[j * inc] = float(argmax_dense(xc.p, rows, sgn) + 1);
            return;
        }
        int64_t best = 0;
        float bv = sgn * xc.p[0];
        for (int64_t i = 1; i < rows; i++) argmax_step(sgn * xc.p[i * xc.s], i, bv, best);
        out[j * inc] = float(best + 1);
    });
}

// Every index an integer in 1..cols(src) (checked first: a bad one throws before anything is written).
void CpuDevice::gather_cols(const Matrix& src, const Matrix& idx, const Matrix& dst, float scale) {
    Timed t(this, Kernel::gather_cols);
    const int64_t m = dst.rows;
    const bool u8 = src.dtype() == DType::u8;
    if (dst.empty()) return;  // nothing to gather (as on Vulkan, where no invocation runs to check)
    check_indices(idx, dst.cols, {"gather_cols", "idx", "a column index of src", uint64_t(src.cols)});
    const size_t esize = u8 ? 1 : sizeof(float);
    // The columns of a shuffled batch are far apart in a data set larger than
    // the caches: ask for a few columns ahead while one is copied.
    auto prefetch = [&](int64_t j) {
        if (src.row_step() != 1) return;
        float v = element(idx, j);  // checked above: an integer in 1..cols(src)
        const char* p = reinterpret_cast<const char*>(base(src)) + size_t(src.index(0, int64_t(v) - 1)) * esize;
        for (size_t b = 0; b < size_t(m) * esize; b += 64) __builtin_prefetch(p + b);
    };
    auto gather_one = [&](int64_t j) {
        Col d = column(dst, j);
        int64_t c = int64_t(element(idx, j)) - 1;
        int64_t at = src.index(0, c), s = src.row_step();
        if (u8) {
            const uint8_t* p = bbase(src) + at;
            if (s == 1 && d.s == 1) {
                for (int64_t i = 0; i < m; i++) d.p[i] = float(p[i]) * scale;
            } else {
                for (int64_t i = 0; i < m; i++) d.p[i * d.s] = float(p[i * s]) * scale;
            }
        } else {
            const float* p = fbase(src) + at;
            if (s == 1 && d.s == 1) {
                for (int64_t i = 0; i < m; i++) d.p[i] = p[i] * scale;
            } else {
                for (int64_t i = 0; i < m; i++) d.p[i * d.s] = p[i * s] * scale;
            }
        }
    };
    // One piece per thread: the column halves that the next product (dense, cut
    // in columns) gives the same threads, since the pool keeps its first piece
    // on the calling thread; each thread then multiplies the columns it wrote,
    // from its own cache.
    constexpr int64_t kAhead = 4;
    const int64_t grain = m >= kGrain ? 1 : kGrain / std::max<int64_t>(m, 1);
    // (starts at multiples of 8, as blas.cpp's split() cuts a product's columns: kMinCols)
    const int64_t per_thread = piece_step(dst.cols, pool_threads(), 8);
    parallel_for(dst.cols, std::max(grain, per_thread), [&](int64_t jb, int64_t je) {
        for (int64_t j = jb; j < std::min(je, jb + kAhead); j++) prefetch(j);
        for (int64_t j = jb; j < je; j++) {
            if (j + kAhead < je) prefetch(j + kAhead);
            gather_one(j);
        }
    });
}

namespace {

// y(r0..r1, j) ← act(y(r0..r1, j) + b(r0..r1)). A dense column gets the bias,
// then unary()'s own loop for `op` (while the column is in cache), so the result
// is bit-identical to add_bias then the activation kernel, whatever the rows.
template <class F>
void bias_act_column(const Matrix& b, const Matrix& y, int64_t j, F act, Unary op, int64_t r0, int64_t r1) {
    const float* bp = fbase(b) + b.offset;
    const int64_t bi = b.inc();
    Col yc = column(y, j);
    if (yc.s == 1 && bi == 1) {
        float* p = yc.p + r0;
        const float* q = bp + r0;
        for (int64_t i = 0; i < r1 - r0; i++) p[i] = p[i] + q[i];
        if (op != Unary::count_) unary_run(op, p, p, r1 - r0);
    } else {
        for (int64_t i = r0; i < r1; i++) yc.p[i * yc.s] = act(yc.p[i * yc.s] + bp[i * bi]);
    }
}

template <class F>
void bias_act(const Matrix& b, const Matrix& y, F act, Unary op = Unary::count_) {
    per_column(y, [&](int64_t j) { bias_act_column(b, y, j, act, op, 0, y.rows); });
}

// y ← act(w·x + b): each piece of a cut product (columns, or rows of every
// column) gets its bias and activation from the thread that computed it, while
// the piece is in its cache (bias_act's per-column loop, so the same bits); a
// product that is not cut gets them over all columns after it, across the pool.
template <class F>
void dense_act(const Matrix& w, const Matrix& x, const Matrix& b, const Matrix& y, F act, Unary op = Unary::count_) {
    struct Ctx {
        const Matrix &b, &y;
        F act;
        Unary op;
    } ctx{b, y, act, op};
    auto after = [](void* p, int64_t r0, int64_t r1, int64_t j0, int64_t j1) {
        auto& c = *static_cast<Ctx*>(p);
        if (r0 == 0 && r1 == c.y.rows && j0 == 0 && j1 == c.y.cols) return bias_act(c.b, c.y, c.act, c.op);
        for (int64_t j = j0; j < j1; j++) bias_act_column(c.b, c.y, j, c.act, c.op, r0, r1);
    };
    mm_plain_then(1.0f, w, x, 0.0f, y, after, &ctx);
}

}  // namespace

void CpuDevice::add_bias(const Matrix& b, const Matrix& y) {
    Timed t(this, Kernel::add_bias);
    bias_act(b, y, [](float v) { return v; });
}

void CpuDevice::dense(const Matrix& w, const Matrix& x, const Matrix& b, Act act, const Matrix& y) {
    Timed t(this, Kernel::dense);
    using namespace opmath;
    switch (act) {
        case Act::identity: return dense_act(w, x, b, y, [](float v) { return v; });
#define VELA_ACT(name, f, d, from, what) \
    case Act::name: return dense_act(w, x, b, y, [](float x) { return (f); }, Unary::name);
#define VELA_FN(name, params, f, what)
#include "core/ops.def"
#undef VELA_ACT
#undef VELA_FN
        case Act::count_: break;
    }
}

}  // namespace vela::cpu

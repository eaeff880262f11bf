// The CPU device's BLAS kernels through OpenBLAS's cblas: levels 3 and 2,
// and the level-1 operations on vectors (one call with the view's increment)
// or whole matrices (one call when both are dense, else one per column).
// Reductions accumulate in double.
#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "cpu/cpu_kernels.hpp"
#include "cpu/pool.hpp"

namespace vela::cpu {

namespace {

// BLAS takes int sizes: longer runs go in pieces.
constexpr int64_t kChunk = int64_t(1) << 30;

template <class F>
void chunked(int64_t n, int64_t xinc, int64_t yinc, F&& f) {
    for (int64_t done = 0; done < n; done += kChunk) f(int(std::min(kChunk, n - done)), done * xinc, done * yinc);
}

// chunked, and cut across the pool when the run is long (elementwise
// operations only: the pieces are independent).
template <class F>
void par_chunked(int64_t n, int64_t xinc, int64_t yinc, F&& f) {
    parallel_for(n, kGrain, [&](int64_t b, int64_t e) {
        chunked(e - b, xinc, yinc, [&](int cn, int64_t dx, int64_t dy) { f(cn, b * xinc + dx, b * yinc + dy); });
    });
}

int blas_dim(const char* fn, int64_t n) {
    if (n > INT_MAX) fail("%s: dimension %lld exceeds what BLAS accepts (2^31 − 1)", fn, (long long)n);
    return int(n);
}

// The leading dimension BLAS is given for a view's stored layout. With one
// stored column the ld is never used for addressing, but BLAS still demands
// ld ≥ max(1, stored rows); give it that.
int blas_ld(const char* fn, const Matrix& m) {
    int64_t ld = m.scols() <= 1 ? std::max<int64_t>(1, m.srows()) : std::max<int64_t>(m.ld, 1);
    return blas_dim(fn, ld);
}

int blas_inc(const char* fn, int64_t inc) { return blas_dim(fn, std::max<int64_t>(inc, 1)); }

CBLAS_TRANSPOSE op(const Matrix& m) { return m.trans ? CblasTrans : CblasNoTrans; }

// c ← β·c where nothing else will touch c; β = 0 writes zeros without reading.
void scale_only(float beta, const Matrix& c) {
    if (beta == 0.0f) fill_plain(c, 0.0f);
    else if (beta != 1.0f) scal_plain(beta, c);
}

// OpenBLAS runs on one thread (cpu_device.cpp sets it so, pool.cpp says why):
// the products and the long level-1 runs are cut here across vela's pool, one
// OpenBLAS call per piece on the thread that takes it. The cut follows the
// thread count, and OpenBLAS's rounding of an element depends on the call
// around it (measured; most likely which of its kernels, a whole register
// block or an edge one, computes the element), so a product's last bits can
// change with threads(n) (docs/cpu.md, "One pool"). The same thread count
// gives the same bits.

// Below this many flops a product runs whole on the calling thread: a piece
// must outweigh the microsecond or two of handing it to a spinning worker.
// Measured on this project's 2-core machine (docs/cpu.md): the output layer's
// 10×256·256×128 (0.66 MFLOP) ran at 68 GFLOP/s whole and 110 in two column
// pieces; the rule it replaces (one OpenBLAS thread below 16 MFLOP) slowed the
// batch-32 forward product 256×784·784×32 from 160 to 91 GFLOP/s. If the worker
// is busy elsewhere the caller takes the pieces itself, so a low bar costs little.
constexpr double kSplitFlops = 5e5;
// A piece of a product has at least this many columns (rows) of c: OpenBLAS's
// Haswell sgemm kernel works on 16×4 blocks of c.
constexpr int64_t kMinCols = 8, kMinRows = 16;
// A piece of a product cut along its inner dimension has at least this many of it.
constexpr int64_t kMinInner = 64;

// Cuts [0, n) into `parts` pieces whose starts are multiples of `align`; calls f(b, e) on the pool.
template <class F>
void split(int64_t n, int64_t parts, int64_t align, F&& f) {
    const int64_t step = piece_step(n, parts, align);
    parallel_for(n, step, [&](int64_t b, int64_t e) {
        // The pool hands out ranges of at least `step` items that start at multiples of it.
        for (int64_t i = b; i < e; i += step) f(i, std::min(e, i + step));
    });
}

// How many pieces a job of `flops` and `len` items (at least `min_len` each) is cut into.
int64_t pieces(double flops, int64_t len, int64_t min_len) {
    const int64_t t = pool_threads();
    if (t == 1 || flops < kSplitFlops) return 1;
    return std::max<int64_t>(1, std::min(t, len / min_len));
}

// c ← α·op(a)·op(b) + β·c cut along the inner dimension into `parts` pieces
// (starts at multiples of 8): piece 0 computes
// α·op(a)(:, K_0)·op(b)(K_0, :) + β·c into c, piece p > 0 its product into a
// partial sum; then c += Σ partials (in the order of p) by column pieces, each
// followed by after(ctx, 0, m, j0, j1) on its thread. The partials live in the
// calling thread's buffer (the workers write it while the caller waits), kept
// for the next call up to 16 MB.
void inner_split(float alpha, const Matrix& a, const Matrix& b, float beta, const Matrix& c, int64_t parts,
                 BlockFn after, void* ctx) {
    const int m = int(c.rows), n = int(c.cols), k = int(a.cols);
    const int lda = blas_ld("mm", a), ldb = blas_ld("mm", b), ldc = blas_ld("mm", c);
    float *ab = fbase(a), *bb = fbase(b), *cb = fbase(c) + c.offset;
    const int64_t step = piece_step(k, parts, 8), count = (k + step - 1) / step, size = int64_t(m) * n;
    thread_local std::vector<float> partials;
    if (partials.size() < size_t((count - 1) * size)) partials.resize(size_t((count - 1) * size));
    float* part = partials.data();
    parallel_for(k, step, [&](int64_t b0, int64_t e0) {
        for (int64_t k0 = b0; k0 < e0; k0 += step) {
            const int64_t k1 = std::min(e0, k0 + step), p = k0 / step;
            float* out = p == 0 ? cb : part + (p - 1) * size;
            cblas_sgemm(CblasColMajor, op(a), op(b), m, n, int(k1 - k0), alpha, ab + a.index(0, k0), lda,
                        bb + b.index(k0, 0), ldb, p == 0 ? beta : 0.0f, out, p == 0 ? ldc : m);
        }
    });
    const int64_t sum_parts = std::max<int64_t>(1, std::min<int64_t>(pool_threads(), n / kMinCols));
    split(n, sum_parts, kMinCols, [&](int64_t j0, int64_t j1) {
        for (int64_t j = j0; j < j1; j++) {
            float* cj = cb + j * ldc;
            for (int64_t p = 0; p + 1 < count; p++) {
                const float* s = part + p * size + j * m;
                for (int i = 0; i < m; i++) cj[i] += s[i];
            }
        }
        if (after) after(ctx, 0, m, j0, j1);
    });
    if (partials.size() > (size_t(16) << 20) / sizeof(float)) std::vector<float>().swap(partials);
}

}  // namespace

void mm_plain(float alpha, const Matrix& a, const Matrix& b, float beta, const Matrix& c) {
    mm_plain_then(alpha, a, b, beta, c, nullptr, nullptr);
}

void mm_plain_then(float alpha, const Matrix& a, const Matrix& b, float beta, const Matrix& c, BlockFn after,
                   void* ctx) {
    if (c.empty()) return;
    auto whole = [&] {
        if (after) after(ctx, 0, c.rows, 0, c.cols);
    };
    // BLAS writes a plain column-major c: for a transposed c compute cᵀ = bᵀ·aᵀ.
    if (c.trans) {
        mm_plain(alpha, b.t(), a.t(), beta, c.t());
        return whole();
    }
    if (a.cols == 0) {
        scale_only(beta, c);
        return whole();
    }
    // β = 0: OpenBLAS's gemm zero-fills c without reading it (NaN included), as
    // the kernel tests check at small and large sizes.
    const int m = blas_dim("mm", c.rows), n = blas_dim("mm", c.cols), k = blas_dim("mm", a.cols);
    const int lda = blas_ld("mm", a), ldb = blas_ld("mm", b), ldc = blas_ld("mm", c);
    float *ab = fbase(a), *bb = fbase(b), *cb = fbase(c);
    // Rows r0..r1 and columns c0..c1 of c: rows of op(a), columns of op(b).
    auto gemm = [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
        cblas_sgemm(CblasColMajor, op(a), op(b), int(r1 - r0), int(c1 - c0), k, alpha, ab + a.index(r0, 0), lda,
                    bb + b.index(0, c0), ldb, beta, cb + c.index(r0, c0), ldc);
    };
    const double flops = 2.0 * double(m) * double(n) * double(k);
    // When c is at most half of either input (2m ≤ k and 2n ≤ k), the inner
    // dimension is cut: piece p computes op(a)'s columns K_p times op(b)'s rows
    // K_p, the first into c and the others into partial sums that a second job
    // adds to c by column pieces. Each thread reads only its part of both
    // inputs, and a layer's W (op(a) in the forward W·x) is cut by its columns,
    // as its gradient δ·xᵀ (c, cut in columns) is: each thread reads in the
    // forward the columns of W that it wrote in the last step's update. Each
    // piece past the first adds c's size to write and read back, so c must be
    // small beside the inputs (the CNN's 128×1024·1024×1000 evaluation batch,
    // c nearly op(a)'s size, measured 1.5-2.5 % slower cut so), and the partial
    // sums are held to the size of the inputs: at most 1 + (m·k + k·n) / (m·n) pieces.
    int64_t pk = 2 * int64_t(m) <= k && 2 * int64_t(n) <= k ? pieces(flops, k, kMinInner) : 1;
    pk = std::min<int64_t>(pk, 1 + (int64_t(m) * k + int64_t(k) * n) / (int64_t(m) * n));
    if (pk > 1) return inner_split(alpha, a, b, beta, c, pk, after, ctx);
    // Else columns of c when there are enough, else rows: each piece then packs
    // all of op(a) once (columns) or all of op(b) (rows), and column pieces
    // measured faster (rows of W in the forward and its gradient too: results.md,
    // "W's columns on one thread").
    if (int64_t p = pieces(flops, n, kMinCols); p > 1)
        return split(n, p, kMinCols, [&](int64_t c0, int64_t c1) {
            gemm(0, m, c0, c1);
            if (after) after(ctx, 0, m, c0, c1);
        });
    if (int64_t p = pieces(flops, m, kMinRows); p > 1)
        return split(m, p, kMinRows, [&](int64_t r0, int64_t r1) {
            gemm(r0, r1, 0, n);
            if (after) after(ctx, r0, r1, 0, n);
        });
    gemm(0, m, 0, n);
    whole();
}

void CpuDevice::mm(float alpha, const Matrix& a, const Matrix& b, float beta, const Matrix& c) {
    Timed t(this, Kernel::mm);
    mm_plain(alpha, a, b, beta, c);
}

void CpuDevice::mv(float alpha, const Matrix& a, const Matrix& x, float beta, const Matrix& y) {
    Timed t(this, Kernel::mv);
    if (y.empty()) return;
    if (a.cols == 0) return scale_only(beta, y);
    // β = 0: y is not read. OpenBLAS versions differ on whether their internal
    // y·0 keeps a NaN; zeroing y first (a vector: cheap) settles it.
    if (beta == 0.0f) fill_plain(y, 0.0f);
    const int lda = blas_ld("mv", a), xinc = blas_inc("mv", x.inc()), yinc = blas_inc("mv", y.inc());
    blas_dim("mv", a.srows());
    blas_dim("mv", a.scols());
    float *ab = fbase(a), *xb = fptr(x), *yb = fbase(y);
    // Elements r0..r1 of y: rows r0..r1 of op(a), stored rows (plain a) or columns (transposed a).
    auto gemv = [&](int64_t r0, int64_t r1) {
        const int part = int(r1 - r0);
        cblas_sgemv(CblasColMajor, op(a), a.trans ? int(a.cols) : part, a.trans ? part : int(a.cols), alpha,
                    ab + a.index(r0, 0), lda, xb, xinc, beta, yb + y.offset + r0 * y.inc(), yinc);
    };
    if (int64_t p = pieces(2.0 * double(a.rows) * double(a.cols), a.rows, kMinRows); p > 1)
        return split(a.rows, p, kMinRows, gemv);
    gemv(0, a.rows);
}

void CpuDevice::rk(float alpha, const Matrix& x, const Matrix& y, const Matrix& a) {
    Timed t(this, Kernel::rk);
    if (a.empty()) return;
    const char* fn = "rk";
    // The stored a (M×N) ← α·u·vᵀ + a: u = x, v = y, or for a transposed a
    // (aᵀ ← α·y·xᵀ + aᵀ) u = y, v = x. Pieces are stored columns.
    const Matrix& u = a.trans ? y : x;
    const Matrix& v = a.trans ? x : y;
    const int rows = blas_dim(fn, a.srows());
    blas_dim(fn, a.scols());
    const int lda = blas_ld(fn, a), ui = blas_inc(fn, u.inc()), vi = blas_inc(fn, v.inc());
    float *ab = fbase(a), *ub = fptr(u), *vb = fbase(v);
    auto ger = [&](int64_t j0, int64_t j1) {
        cblas_sger(CblasColMajor, rows, int(j1 - j0), alpha, ub, ui, vb + v.offset + j0 * v.inc(), vi,
                   ab + a.offset + j0 * a.ld, lda);
    };
    const int64_t cols = a.scols();
    if (int64_t p = pieces(2.0 * double(rows) * double(cols), cols, kMinCols); p > 1) return split(cols, p, kMinCols, ger);
    ger(0, cols);
}

void CpuDevice::axpby(float alpha, const Matrix& x, float beta, const Matrix& y) {
    Timed t(this, beta == 1.0f ? "axpy" : "axpby");
    if (beta == 0.0f) {  // β = 0: y is not read (it may hold garbage), and y may be x
        copy_plain(x, y);
        return scal_plain(alpha, y);
    }
    float* xb = fbase(x);
    float* yb = fbase(y);
    // OpenBLAS skips x when α = 0, so 0·NaN and 0·Inf in x left y as it was
    // here but gave NaN on Vulkan (found by tests/fuzz): α = 0 reads x, as IEEE says.
    if (alpha == 0.0f) {
        runs(x, &y, true, [&](int64_t n, int64_t, int64_t xo, int64_t xi, int64_t yo, int64_t yi) {
            for (int64_t k = 0; k < n; ++k) yb[yo + k * yi] = alpha * xb[xo + k * xi] + beta * yb[yo + k * yi];
        });
        return;
    }
    runs(x, &y, true, [&](int64_t n, int64_t, int64_t xo, int64_t xi, int64_t yo, int64_t yi) {
        par_chunked(n, xi, yi, [&](int cn, int64_t dx, int64_t dy) {
            if (beta == 1.0f)
                cblas_saxpy(cn, alpha, xb + xo + dx, int(xi), yb + yo + dy, int(yi));
            else
                cblas_saxpby(cn, alpha, xb + xo + dx, int(xi), beta, yb + yo + dy, int(yi));
        });
    });
}

void scal_plain(float alpha, const Matrix& x) {
    float* xb = fbase(x);
    // OpenBLAS's sscal writes zeros for α = 0 and for α = NaN without reading x,
    // so 0·NaN, 0·Inf and NaN·x came out 0 here but NaN on Vulkan (found by
    // tests/fuzz): those two cases multiply element by element, as IEEE says.
    if (alpha == 0.0f || alpha != alpha) {
        runs(x, nullptr, true, [&](int64_t n, int64_t, int64_t xo, int64_t xi, int64_t, int64_t) {
            for (int64_t k = 0; k < n; ++k) xb[xo + k * xi] *= alpha;
        });
        return;
    }
    runs(x, nullptr, true, [&](int64_t n, int64_t, int64_t xo, int64_t xi, int64_t, int64_t) {
        par_chunked(n, xi, 0, [&](int cn, int64_t dx, int64_t) { cblas_sscal(cn, alpha, xb + xo + dx, int(xi)); });
    });
}

void copy_plain(const Matrix& x, const Matrix& y) {
    if (x.dtype() == DType::f32) {
        float* xb = fbase(x);
        float* yb = fbase(y);
        runs(x, &y, true, [&](int64_t n, int64_t, int64_t xo, int64_t xi, int64_t yo, int64_t yi) {
            if (xi == 1 && yi == 1) {
                parallel_for(n, kGrain, [&](int64_t b, int64_t e) {
                    std::memmove(yb + yo + b, xb + xo + b, size_t(e - b) * sizeof(float));
                });
                return;
            }
            par_chunked(n, xi, yi, [&](int cn, int64_t dx, int64_t dy) {
                cblas_scopy(cn, xb + xo + dx, int(xi), yb + yo + dy, int(yi));
            });
        });
        return;
    }
    const uint8_t* xb = bbase(x);
    if (y.dtype() == DType::u8) {
        uint8_t* yb = bbase(y);
        runs(x, &y, true, [&](int64_t n, int64_t, int64_t xo, int64_t xi, int64_t yo, int64_t yi) {
            for (int64_t i = 0; i < n; i++) yb[yo + i * yi] = xb[xo + i * xi];
        });
        return;
    }
    float* yb = fbase(y);
    runs(x, &y, true, [&](int64_t n, int64_t, int64_t xo, int64_t xi, int64_t yo, int64_t yi) {
        if (xi == 1 && yi == 1) {
            for (int64_t i = 0; i < n; i++) yb[yo + i] = float(xb[xo + i]);
        } else {
            for (int64_t i = 0; i < n; i++) yb[yo + i * yi] = float(xb[xo + i * xi]);
        }
    });
}

void CpuDevice::scal(float alpha, const Matrix& x) {
    Timed t(this, Kernel::scal);
    scal_plain(alpha, x);
}

void CpuDevice::copy(const Matrix& x, const Matrix& y) {
    Timed t(this, Kernel::copy);
    copy_plain(x, y);
}

void CpuDevice::swap(const Matrix& x, const Matrix& y) {
    Timed t(this, Kernel::swap);
    float* xb = fbase(x);
    float* yb = fbase(y);
    runs(x, &y, true, [&](int64_t n, int64_t, int64_t xo, int64_t xi, int64_t yo, int64_t yi) {
        par_chunked(n, xi, yi, [&](int cn, int64_t dx, int64_t dy) {
            cblas_sswap(cn, xb + xo + dx, int(xi), yb + yo + dy, int(yi));
        });
    });
}

namespace {

// Σ f(x_i) in double with four partial sums (independent chains run in parallel in the FPU).
template <class F>
double sum_run(const float* p, int64_t n, int64_t inc, F f) {
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += f(p[i * inc]);
        s1 += f(p[(i + 1) * inc]);
        s2 += f(p[(i + 2) * inc]);
        s3 += f(p[(i + 3) * inc]);
    }
    for (; i < n; i++) s0 += f(p[i * inc]);
    return (s0 + s1) + (s2 + s3);
}

}  // namespace

double CpuDevice::reduce(Reduce r, const Matrix& x, const Matrix* y) {
    Timed t(this, reduce_name(r));
    ++waits_;  // a number read by the host: a wait of zero cost
    const float* xb = fbase(x);
    double total = 0;
    switch (r) {
        case Reduce::dot: {
            const float* yb = fbase(*y);
            runs(x, y, true, [&](int64_t n, int64_t, int64_t xo, int64_t xi, int64_t yo, int64_t yi) {
                chunked(n, xi, yi, [&](int cn, int64_t dx, int64_t dy) {
                    total += cblas_dsdot(cn, xb + xo + dx, int(xi), yb + yo + dy, int(yi));
                });
            });
            return total;
        }
        case Reduce::nrm2:
            runs(x, nullptr, true, [&](int64_t n, int64_t, int64_t xo, int64_t xi, int64_t, int64_t) {
                chunked(n, xi, 0, [&](int cn, int64_t dx, int64_t) {
                    double v = cblas_snrm2(cn, xb + xo + dx, int(xi));
                    total += v * v;
                });
            });
            return std::sqrt(total);
        case Reduce::asum:
            runs(x, nullptr, true, [&](int64_t n, int64_t, int64_t xo, int64_t xi, int64_t, int64_t) {
                total += sum_run(xb + xo, n, xi, [](float v) { return double(std::fabs(v)); });
            });
            return total;
        case Reduce::sum:
            runs(x, nullptr, true, [&](int64_t n, int64_t, int64_t xo, int64_t xi, int64_t, int64_t) {
                total += sum_run(xb + xo, n, xi, [](float v) { return double(v); });
            });
            return total;
        case Reduce::count_: break;
    }
    return total;
}

int64_t CpuDevice::imax(const Matrix& x) {
    Timed t(this, Kernel::imax);
    ++waits_;
    const float* xb = fbase(x);
    int64_t best = 0;
    float best_abs = -1.0f;
    runs(x, nullptr, false, [&](int64_t n, int64_t k0, int64_t xo, int64_t xi, int64_t, int64_t) {
        chunked(n, xi, 0, [&](int cn, int64_t dx, int64_t) {
            int64_t i = int64_t(cblas_isamax(cn, xb + xo + dx, int(xi)));
            float v = std::fabs(xb[xo + dx + i * xi]);
            if (v > best_abs || best_abs < 0) {  // strictly larger: the first wins ties
                best_abs = v;
                best = k0 + dx / std::max<int64_t>(xi, 1) + i;
            }
        });
    });
    return best;
}

}  // namespace vela::cpu

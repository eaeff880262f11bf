// The CPU device's BLAS kernels through OpenBLAS's cblas: levels 3 and 2,
// and the level-1 operations on vectors (one call with the view's increment)
// or whole matrices (one call when both are dense, else one per column).
// Reductions accumulate in double.
#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>

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
    if (beta == 0.0f) fill(c, 0.0f);
    else if (beta != 1.0f) scal(beta, c);
}

// Below this many flops OpenBLAS's threads cost more than they save: on this
// 2-core machine a 10×784·784×256 product (4 MFLOP, softmax regression's
// forward step) takes 66 µs on one thread and 135 µs on two; the two meet
// between 13 and 26 MFLOP (measured with bench() on mm of m×784·784×256 for m = 10…256).
constexpr double kSerialGemmFlops = 16e6;

// Runs a small gemm on one OpenBLAS thread, restoring the user's setting.
struct SerialBlas {
    bool active;
    explicit SerialBlas(double flops) : active(flops < kSerialGemmFlops && pool_threads() > 1) {
        if (active) openblas_set_num_threads(1);
    }
    ~SerialBlas() {
        if (active) openblas_set_num_threads(pool_threads());
    }
};

}  // namespace

void mm(float alpha, const Matrix& a, const Matrix& b, float beta, const Matrix& c) {
    if (c.empty()) return;
    // BLAS writes a plain column-major c: for a transposed c compute cᵀ = bᵀ·aᵀ.
    if (c.trans) return mm(alpha, b.t(), a.t(), beta, c.t());
    if (a.cols == 0) return scale_only(beta, c);
    // β = 0: OpenBLAS's gemm zero-fills c without reading it (NaN included), as
    // the kernel tests check at small and large sizes.
    SerialBlas serial(2.0 * double(c.rows) * double(c.cols) * double(a.cols));
    cblas_sgemm(CblasColMajor, op(a), op(b), blas_dim("mm", c.rows), blas_dim("mm", c.cols), blas_dim("mm", a.cols),
                alpha, fptr(a), blas_ld("mm", a), fptr(b), blas_ld("mm", b), beta, fptr(c), blas_ld("mm", c));
}

void mv(float alpha, const Matrix& a, const Matrix& x, float beta, const Matrix& y) {
    if (y.empty()) return;
    if (a.cols == 0) return scale_only(beta, y);
    // β = 0: y is not read. OpenBLAS versions differ on whether their internal
    // y·0 keeps a NaN; zeroing y first (a vector: cheap) settles it.
    if (beta == 0.0f) fill(y, 0.0f);
    cblas_sgemv(CblasColMajor, op(a), blas_dim("mv", a.srows()), blas_dim("mv", a.scols()), alpha, fptr(a),
                blas_ld("mv", a), fptr(x), blas_inc("mv", x.inc()), beta, fptr(y), blas_inc("mv", y.inc()));
}

void rk(float alpha, const Matrix& x, const Matrix& y, const Matrix& a) {
    if (a.empty()) return;
    const char* fn = "rk";
    if (a.trans)  // aᵀ ← α·y·xᵀ + aᵀ on the stored layout
        cblas_sger(CblasColMajor, blas_dim(fn, a.cols), blas_dim(fn, a.rows), alpha, fptr(y), blas_inc(fn, y.inc()),
                   fptr(x), blas_inc(fn, x.inc()), fptr(a), blas_ld(fn, a));
    else
        cblas_sger(CblasColMajor, blas_dim(fn, a.rows), blas_dim(fn, a.cols), alpha, fptr(x), blas_inc(fn, x.inc()),
                   fptr(y), blas_inc(fn, y.inc()), fptr(a), blas_ld(fn, a));
}

void axpby(float alpha, const Matrix& x, float beta, const Matrix& y) {
    if (beta == 0.0f) {  // β = 0: y is not read (it may hold garbage), and y may be x
        copy(x, y);
        return scal(alpha, y);
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
        chunked(n, xi, yi, [&](int cn, int64_t dx, int64_t dy) {
            if (beta == 1.0f)
                cblas_saxpy(cn, alpha, xb + xo + dx, int(xi), yb + yo + dy, int(yi));
            else
                cblas_saxpby(cn, alpha, xb + xo + dx, int(xi), beta, yb + yo + dy, int(yi));
        });
    });
}

void scal(float alpha, const Matrix& x) {
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
        chunked(n, xi, 0, [&](int cn, int64_t dx, int64_t) { cblas_sscal(cn, alpha, xb + xo + dx, int(xi)); });
    });
}

void copy(const Matrix& x, const Matrix& y) {
    if (x.dtype() == DType::f32) {
        float* xb = fbase(x);
        float* yb = fbase(y);
        runs(x, &y, true, [&](int64_t n, int64_t, int64_t xo, int64_t xi, int64_t yo, int64_t yi) {
            if (xi == 1 && yi == 1) {
                std::memmove(yb + yo, xb + xo, size_t(n) * sizeof(float));
                return;
            }
            chunked(n, xi, yi, [&](int cn, int64_t dx, int64_t dy) {
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

void swap(const Matrix& x, const Matrix& y) {
    float* xb = fbase(x);
    float* yb = fbase(y);
    runs(x, &y, true, [&](int64_t n, int64_t, int64_t xo, int64_t xi, int64_t yo, int64_t yi) {
        chunked(n, xi, yi, [&](int cn, int64_t dx, int64_t dy) {
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

double reduce(Reduce r, const Matrix& x, const Matrix* y) {
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

int64_t imax(const Matrix& x) {
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

// The sequence layers on the CPU device (docs/sequence.md: one token per
// column): layer norm per column, forward and backward, with float64
// accumulators, and the embedding's scatter-add backward in the order of the
// tokens (the same bits on every run). The equations are in core/device.hpp.
#include <cmath>
#include <vector>

#include "core/index_check.hpp"
#include "cpu/cpu_kernels.hpp"

namespace vela::cpu {

namespace {

inline float vec(const float* base, const Matrix& v, int64_t k) { return base[v.offset + k * v.inc()]; }
inline float& vec_ref(float* base, const Matrix& v, int64_t k) { return base[v.offset + k * v.inc()]; }

}  // namespace

void CpuDevice::layernorm_forward(const Matrix& x, const Matrix& gamma, const Matrix& beta, float eps, const Matrix& mean,
                       const Matrix& rstd, const Matrix& y) {
    Timed t(this, Kernel::layernorm_forward);
    const float *xb = fbase(x), *gb = fbase(gamma), *bb = fbase(beta);
    float *yb = fbase(y), *mb = fbase(mean), *rb = fbase(rstd);
    const int64_t m = x.rows;
    parallel_for(x.cols, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, m)), [&](int64_t jb, int64_t je) {
        for (int64_t j = jb; j < je; j++) {
            double s = 0;
            for (int64_t i = 0; i < m; i++) s += xb[x.index(i, j)];
            const float mu = float(s / double(m));
            double q = 0;
            for (int64_t i = 0; i < m; i++) {
                double d = double(xb[x.index(i, j)]) - mu;
                q += d * d;
            }
            const float r = 1.0f / std::sqrt(float(q / double(m)) + eps);
            for (int64_t i = 0; i < m; i++)
                yb[y.index(i, j)] = vec(gb, gamma, i) * ((xb[x.index(i, j)] - mu) * r) + vec(bb, beta, i);
            vec_ref(mb, mean, j) = mu;
            vec_ref(rb, rstd, j) = r;
        }
    });
}

void CpuDevice::layernorm_backward(const Matrix& dy, const Matrix& x, const Matrix& mean, const Matrix& rstd,
                        const Matrix& gamma, const Matrix& dgamma, const Matrix& dbeta, const Matrix& dx) {
    Timed t(this, Kernel::layernorm_backward);
    const float *db = fbase(dy), *xb = fbase(x), *mb = fbase(mean), *rb = fbase(rstd), *gb = fbase(gamma);
    float *dgb = fbase(dgamma), *dbb = fbase(dbeta), *dxb = fbase(dx);
    const int64_t m = x.rows, n = x.cols;
    // dβ(i) = Σⱼ dy, dγ(i) = Σⱼ dy·x̂: per row, over the columns in order.
    parallel_for(m, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, n)), [&](int64_t ib, int64_t ie) {
        for (int64_t i = ib; i < ie; i++) {
            double sb = 0, sg = 0;
            for (int64_t j = 0; j < n; j++) {
                double d = db[dy.index(i, j)];
                sb += d;
                sg += d * (double(xb[x.index(i, j)]) - vec(mb, mean, j)) * vec(rb, rstd, j);
            }
            vec_ref(dgb, dgamma, i) = float(sg);
            vec_ref(dbb, dbeta, i) = float(sb);
        }
    });
    // dx = rstd·(g − mean(g) − x̂·mean(g·x̂)) per column, g = dy·γ.
    parallel_for(n, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, m)), [&](int64_t jb, int64_t je) {
        for (int64_t j = jb; j < je; j++) {
            const double mu = vec(mb, mean, j), r = vec(rb, rstd, j);
            double s1 = 0, s2 = 0;
            for (int64_t i = 0; i < m; i++) {
                double g = double(db[dy.index(i, j)]) * vec(gb, gamma, i);
                s1 += g;
                s2 += g * (xb[x.index(i, j)] - mu) * r;
            }
            s1 /= double(m), s2 /= double(m);
            for (int64_t i = 0; i < m; i++) {
                double g = double(db[dy.index(i, j)]) * vec(gb, gamma, i);
                double xh = (xb[x.index(i, j)] - mu) * r;
                dxb[dx.index(i, j)] = float(r * (g - s1 - xh * s2));
            }
        }
    });
}

void CpuDevice::embedding_backward(const Matrix& dy, const Matrix& idx, const Matrix& dE) {
    Timed t(this, Kernel::embedding_backward);
    const float *db = fbase(dy), *ib = fbase(idx);
    float* eb = fbase(dE);
    const IndexCheck check{"embedding_backward", "idx", "a column index of dE", uint64_t(dE.cols)};
    for (int64_t j = 0; j < dy.cols; j++)  // all checked before anything is written
        if (!index_ok(vec(ib, idx, j), check.limit)) throw Error(bad_index_message(check, uint64_t(j)));
    // Rows in parallel, each over the tokens in order: the same sums on every run.
    parallel_for(dy.rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, dy.cols)), [&](int64_t rb, int64_t re) {
        for (int64_t j = 0; j < dy.cols; j++) {
            const int64_t t = int64_t(vec(ib, idx, j)) - 1;
            for (int64_t i = rb; i < re; i++) eb[dE.index(i, t)] += db[dy.index(i, j)];
        }
    });
}

// Each column's running sum in double, rounded once per element; each
// element read before it is written (y may be x).
void CpuDevice::cumsum(const Matrix& x, const Matrix& y) {
    Timed t(this, Kernel::cumsum);
    const float* xb = fbase(x);
    float* yb = fbase(y);
    const int64_t rows = x.rows;
    parallel_for(x.cols, std::max<int64_t>(1, kGrain / std::max<int64_t>(rows, 1)), [&](int64_t jb, int64_t je) {
        for (int64_t j = jb; j < je; j++) {
            double s = 0;
            for (int64_t i = 0; i < rows; i++) {
                s += double(xb[x.index(i, j)]);
                yb[y.index(i, j)] = float(s);
            }
        }
    });
}

// Per column j, rows 0..p (p = j mod T, T = rows) in float like softmax (fused.cpp), the rest 0.
void CpuDevice::softmax_causal(const Matrix& x, const Matrix& y) {
    Timed t(this, Kernel::softmax_causal);
    const float* xb = fbase(x);
    float* yb = fbase(y);
    const int64_t T = x.rows;
    parallel_for(x.cols, std::max<int64_t>(1, 4096 / T), [&](int64_t jb, int64_t je) {
        for (int64_t j = jb; j < je; j++) {
            const int64_t p = j % T;
            float m = -INFINITY, s = 0;
            for (int64_t i = 0; i <= p; i++) m = std::max(m, xb[x.index(i, j)]);
            for (int64_t i = 0; i <= p; i++) s += std::exp(xb[x.index(i, j)] - m);
            const float inv = 1.0f / s;
            for (int64_t i = 0; i < T; i++) yb[y.index(i, j)] = i <= p ? std::exp(xb[x.index(i, j)] - m) * inv : 0.0f;
        }
    });
}

void CpuDevice::softmax_causal_backward(const Matrix& y, const Matrix& dy, const Matrix& dx) {
    Timed t(this, Kernel::softmax_causal_backward);
    const float *yb = fbase(y), *db = fbase(dy);
    float* xb = fbase(dx);
    const int64_t T = y.rows;
    parallel_for(y.cols, std::max<int64_t>(1, 4096 / T), [&](int64_t jb, int64_t je) {
        for (int64_t j = jb; j < je; j++) {
            const int64_t p = j % T;
            float s = 0;
            for (int64_t i = 0; i <= p; i++) s += yb[y.index(i, j)] * db[dy.index(i, j)];
            for (int64_t i = 0; i < T; i++)
                xb[dx.index(i, j)] = i <= p ? yb[y.index(i, j)] * (db[dy.index(i, j)] - s) : 0.0f;
        }
    });
}

}  // namespace vela::cpu

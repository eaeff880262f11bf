// Regularization and augmentation on the CPU device: dropout (the Philox mask
// and its application in one pass), batch normalization (statistics, forward,
// backward; float64 accumulators) and random_shift. The equations are in
// core/device.hpp; the Philox values are those of shaders/dropout.comp and
// random_shift.comp bit for bit (integer operations and one exact scaling).
#include <cmath>
#include <vector>

#include "core/philox.hpp"
#include "cpu/cpu_kernels.hpp"

namespace vela::cpu {

namespace {

philox::Counter draw(uint64_t seed, uint64_t step, uint64_t k) {
    return philox::philox4x32_10({uint32_t(k), uint32_t(k >> 32), uint32_t(step), uint32_t(step >> 32)},
                                 {uint32_t(seed), uint32_t(seed >> 32)});
}

// Element (i, j) of a view, by pointer.
inline float& at(float* base, const Matrix& m, int64_t i, int64_t j) { return base[m.index(i, j)]; }
inline float vec(const float* base, const Matrix& v, int64_t k) { return base[v.offset + k * v.inc()]; }
inline float& vec_ref(float* base, const Matrix& v, int64_t k) { return base[v.offset + k * v.inc()]; }

}  // namespace

void CpuDevice::dropout(uint64_t seed, uint64_t step, float p, float scale, const Matrix& x, const Matrix& mask,
             const Matrix& y) {
    Timed t(this, Kernel::dropout);
    if (x.empty()) return;
    float *xb = fbase(x), *mb = fbase(mask), *yb = fbase(y);
    const int64_t rows = x.rows;
    parallel_for(x.cols, rows >= 4096 ? 1 : 4096 / rows + 1, [&](int64_t jb, int64_t je) {
        uint64_t group = ~uint64_t(0);  // one draw gives the words of four consecutive elements
        philox::Counter w{};
        for (int64_t j = jb; j < je; j++)
            for (int64_t i = 0; i < rows; i++) {
                uint64_t k = uint64_t(j * rows + i);
                if (k >> 2 != group) group = k >> 2, w = draw(seed, step, group);
                float u = float(w[k & 3] >> 8) * 0x1p-24f;
                float m = u >= p ? scale : 0.0f;
                at(mb, mask, i, j) = m;
                at(yb, y, i, j) = at(xb, x, i, j) * m;
            }
    });
}

// For each feature f, calls fn(f, visit) where visit(g) calls g(v...) for every (i, j) of the feature.
template <class F>
static void each_feature(int64_t nf, int64_t group, int64_t n, F&& fn) {
    parallel_for(nf, std::max<int64_t>(1, 65536 / std::max<int64_t>(1, group * n)), [&](int64_t fb, int64_t fe) {
        for (int64_t f = fb; f < fe; f++) fn(f, f * group, n);
    });
}

void CpuDevice::batchnorm_stats(const Matrix& x, int64_t group, const Matrix& mean, const Matrix& var) {
    Timed t(this, Kernel::batchnorm_stats);
    const float* xb = fbase(x);
    float *mb = fbase(mean), *vb = fbase(var);
    const int64_t nf = x.rows / group, n = x.cols;
    each_feature(nf, group, n, [&](int64_t f, int64_t r0, int64_t cols) {
        double s = 0;
        for (int64_t j = 0; j < cols; j++)
            for (int64_t i = r0; i < r0 + group; i++) s += xb[x.index(i, j)];
        const double count = double(group) * double(cols);
        const double mu = s / count;
        double q = 0;
        for (int64_t j = 0; j < cols; j++)
            for (int64_t i = r0; i < r0 + group; i++) {
                double d = xb[x.index(i, j)] - mu;
                q += d * d;
            }
        vec_ref(mb, mean, f) = float(mu);
        vec_ref(vb, var, f) = float(q / count);
    });
}

void CpuDevice::batchnorm(const Matrix& x, const Matrix& mean, const Matrix& var, const Matrix& gamma, const Matrix& beta,
               float eps, int64_t group, const Matrix& y) {
    Timed t(this, Kernel::batchnorm);
    if (x.empty()) return;
    const float *xb = fbase(x), *mb = fbase(mean), *vb = fbase(var), *gb = fbase(gamma), *bb = fbase(beta);
    float* yb = fbase(y);
    const int64_t nf = x.rows / group, n = x.cols;
    each_feature(nf, group, n, [&](int64_t f, int64_t r0, int64_t cols) {
        // y = a·x + b with a = γ·inv, b = β − μ·a: in float64, rounded once.
        const double inv = 1.0 / std::sqrt(double(vec(vb, var, f)) + double(eps));
        const double a = double(vec(gb, gamma, f)) * inv, mu = vec(mb, mean, f), b = vec(bb, beta, f);
        for (int64_t j = 0; j < cols; j++)
            for (int64_t i = r0; i < r0 + group; i++) yb[y.index(i, j)] = float(a * (xb[x.index(i, j)] - mu) + b);
    });
}

void CpuDevice::batchnorm_backward(const Matrix& dy, const Matrix& x, const Matrix& mean, const Matrix& var, const Matrix& gamma,
                        float eps, int64_t group, const Matrix& dgamma, const Matrix& dbeta, const Matrix& dx) {
    Timed t(this, Kernel::batchnorm_backward);
    const float *db = fbase(dy), *xb = fbase(x), *mb = fbase(mean), *vb = fbase(var), *gb = fbase(gamma);
    float *dgb = fbase(dgamma), *dbb = fbase(dbeta);
    float* dxb = dx.buf ? fbase(dx) : nullptr;
    const int64_t nf = x.rows / group, n = x.cols;
    each_feature(nf, group, n, [&](int64_t f, int64_t r0, int64_t cols) {
        const double inv = 1.0 / std::sqrt(double(vec(vb, var, f)) + double(eps));
        const double mu = vec(mb, mean, f), count = double(group) * double(cols);
        double sd = 0, sdx = 0;  // Σ dy, Σ dy·x̂
        for (int64_t j = 0; j < cols; j++)
            for (int64_t i = r0; i < r0 + group; i++) {
                double d = db[dy.index(i, j)];
                sd += d;
                sdx += d * (xb[x.index(i, j)] - mu) * inv;
            }
        vec_ref(dbb, dbeta, f) = float(sd);
        vec_ref(dgb, dgamma, f) = float(sdx);
        if (!dxb) return;
        // dx = γ·inv/N·(N·dy − dβ − x̂·dγ) = a·dy + c·(x − μ) + b
        const double a = double(vec(gb, gamma, f)) * inv;
        const double b = -a * sd / count, c = -a * inv * sdx / count;  // sdx = Σ dy·x̂ already holds one inv
        for (int64_t j = 0; j < cols; j++)
            for (int64_t i = r0; i < r0 + group; i++)
                dxb[dx.index(i, j)] = float(a * db[dy.index(i, j)] + c * (xb[x.index(i, j)] - mu) + b);
    });
}

void CpuDevice::random_shift(uint64_t seed, uint64_t step, int64_t shift, int64_t height, int64_t width, const Matrix& x,
                  const Matrix& y) {
    Timed t(this, Kernel::random_shift);
    if (x.empty()) return;
    const float* xb = fbase(x);
    float* yb = fbase(y);
    const int64_t plane = height * width, channels = x.rows / plane;
    const uint32_t span = uint32_t(2 * shift + 1);
    parallel_for(x.cols, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, x.rows)), [&](int64_t jb, int64_t je) {
        for (int64_t j = jb; j < je; j++) {
            philox::Counter w = draw(seed, step, uint64_t(j));
            const int64_t dr = int64_t(w[0] % span) - shift, dc = int64_t(w[1] % span) - shift;
            for (int64_t c = 0; c < channels; c++)
                for (int64_t r = 0; r < height; r++)
                    for (int64_t q = 0; q < width; q++) {
                        const int64_t sr = r - dr, sq = q - dc;
                        float v = 0.0f;
                        if (sr >= 0 && sr < height && sq >= 0 && sq < width) v = xb[x.index(c * plane + sr * width + sq, j)];
                        yb[y.index(c * plane + r * width + q, j)] = v;
                    }
        }
    });
}

}  // namespace vela::cpu

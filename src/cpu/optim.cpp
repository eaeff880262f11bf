// The fused optimizer updates of the CPU device (the math: src/core/ops_optim.cpp):
// one pass over the parameter, its gradient and its state, threaded by walk(),
// with a dense stride-1 loop cloned per instruction set as in elementwise.cpp.
#pragma GCC optimize("no-math-errno", "no-trapping-math")
#include <cmath>

#include "cpu/cpu_kernels.hpp"

namespace vela::cpu {

namespace {

#define VELA_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))

// sgd: v ← μv + (g + λw); w ← w − lr·(nesterov ? g + λw + μv : v).
VELA_SIMD_CLONES void sgd_dense(float* w, const float* g, float* v, int64_t n, float lr, float mu, float wd,
                                bool nesterov) {
    if (nesterov) {
        for (int64_t i = 0; i < n; i++) {
            float gg = g[i] + wd * w[i];
            float vv = mu * v[i] + gg;
            v[i] = vv;
            w[i] = w[i] - lr * (gg + mu * vv);
        }
    } else {
        for (int64_t i = 0; i < n; i++) {
            float vv = mu * v[i] + (g[i] + wd * w[i]);
            v[i] = vv;
            w[i] = w[i] - lr * vv;
        }
    }
}

// adam: m ← β₁m + (1 − β₁)g; v ← β₂v + (1 − β₂)g²; w ← w − lr·m/(√v + ε).
VELA_SIMD_CLONES void adam_dense(float* w, const float* g, float* m, float* v, int64_t n, float lr, float b1, float b2,
                                 float eps) {
    const float c1 = 1.0f - b1, c2 = 1.0f - b2;
    for (int64_t i = 0; i < n; i++) {
        float gi = g[i];
        float mm = b1 * m[i] + c1 * gi;
        float vv = b2 * v[i] + c2 * (gi * gi);
        m[i] = mm;
        v[i] = vv;
        w[i] = w[i] - lr * mm / (std::sqrt(vv) + eps);
    }
}

}  // namespace

void optim_step(Optim kind, const Matrix& w, const Matrix& g, const Matrix& s1, const Matrix& s2, const float* p) {
    const float lr = p[0];
    if (kind == Optim::sgd) {
        const float mu = p[1], wd = p[2];
        const bool nesterov = p[3] != 0.0f;
        walk<3>({&w, &g, &s1}, [&](int64_t n, const std::array<float*, 3>& q, const std::array<int64_t, 3>& s) {
            if (s[0] == 1 && s[1] == 1 && s[2] == 1) return sgd_dense(q[0], q[1], q[2], n, lr, mu, wd, nesterov);
            for (int64_t i = 0; i < n; i++) {
                float& wi = q[0][i * s[0]];
                float& vi = q[2][i * s[2]];
                float gg = q[1][i * s[1]] + wd * wi;
                float vv = mu * vi + gg;
                vi = vv;
                wi = wi - lr * (nesterov ? gg + mu * vv : vv);
            }
        });
        return;
    }
    const float b1 = p[1], b2 = p[2], eps = p[3];
    walk<4>({&w, &g, &s1, &s2}, [&](int64_t n, const std::array<float*, 4>& q, const std::array<int64_t, 4>& s) {
        if (s[0] == 1 && s[1] == 1 && s[2] == 1 && s[3] == 1) return adam_dense(q[0], q[1], q[2], q[3], n, lr, b1, b2, eps);
        for (int64_t i = 0; i < n; i++) {
            float& wi = q[0][i * s[0]];
            float& mi = q[2][i * s[2]];
            float& vi = q[3][i * s[3]];
            float gi = q[1][i * s[1]];
            float mm = b1 * mi + (1.0f - b1) * gi;
            float vv = b2 * vi + (1.0f - b2) * (gi * gi);
            mi = mm;
            vi = vv;
            wi = wi - lr * mm / (std::sqrt(vv) + eps);
        }
    });
}

}  // namespace vela::cpu

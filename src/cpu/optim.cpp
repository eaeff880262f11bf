// The fused optimizer updates of the CPU device (the math and the six scalars
// p: src/core/ops_optim.cpp): one pass over the parameter, its gradient and
// its state, threaded by walk(), with a dense stride-1 loop cloned per
// instruction set as in elementwise.cpp. One function per kind gives an
// element's update; the dense and strided loops and shaders/optim.comp do the
// same float operations in the same order.
#pragma GCC optimize("no-math-errno", "no-trapping-math")
#include <cmath>

#include "cpu/cpu_kernels.hpp"

namespace vela::cpu {

namespace {

#define VELA_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))

// p: lr, μ, λ, nesterov. s1: the velocity.
inline void sgd(float& w, float g, float& v, const float* p) {
    float gg = g + p[2] * w;
    float vv = p[1] * v + gg;
    v = vv;
    w = w - p[0] * (p[3] != 0.0f ? gg + p[1] * vv : vv);
}

// p: lr, 1 − β₁, β₂, 1 − β₂, ε, then λ (adam) or 1 − lr·λ (adamw). s1, s2: the moments.
template <bool decoupled>
inline void adam(float& w, float g, float& m, float& v, const float* p) {
    float ww = w;
    if (decoupled)
        ww = p[5] * ww;
    else
        g = g + p[5] * ww;
    float mm = m + p[1] * (g - m);
    float vv = p[2] * v + p[3] * (g * g);
    m = mm;
    v = vv;
    w = ww - p[0] * mm / (std::sqrt(vv) + p[4]);
}

// p: lr, α, 1 − α, ε, λ, μ. s1: the mean square, s2: the momentum buffer (μ ≠ 0), s3: the mean gradient (centered).
template <bool centered>
inline void rmsprop(float& w, float g, float& v, float& b, float& a, const float* p) {
    g = g + p[4] * w;
    float vv = p[1] * v + p[2] * (g * g);
    v = vv;
    float d;
    if (centered) {
        float aa = a + p[2] * (g - a);
        a = aa;
        d = std::sqrt(vv - aa * aa) + p[3];
    } else {
        d = std::sqrt(vv) + p[3];
    }
    if (p[5] != 0.0f) {
        float bb = p[5] * b + g / d;
        b = bb;
        w = w - p[0] * bb;
    } else {
        w = w - p[0] * (g / d);
    }
}

// p: lr, λ, ε. s1: the sum of squares.
inline void adagrad(float& w, float g, float& s, const float* p) {
    g = g + p[1] * w;
    float ss = s + g * g;
    s = ss;
    w = w - p[0] * (g / (std::sqrt(ss) + p[2]));
}

// One element of kind K; s2 and s3 are only touched by the kinds that own them.
template <Optim K>
inline void element(float& w, float g, float& s1, float& s2, float& s3, const float* p) {
    if constexpr (K == Optim::sgd)
        sgd(w, g, s1, p);
    else if constexpr (K == Optim::adam)
        adam<false>(w, g, s1, s2, p);
    else if constexpr (K == Optim::adamw)
        adam<true>(w, g, s1, s2, p);
    else if constexpr (K == Optim::rmsprop)
        rmsprop<false>(w, g, s1, s2, s3, p);
    else if constexpr (K == Optim::rmsprop_centered)
        rmsprop<true>(w, g, s1, s2, s3, p);
    else
        adagrad(w, g, s1, p);
}

// The dense loops, one per kind (target_clones does not take templates).
// An unused state pointer is s1's, never dereferenced by that kind.
#define VELA_DENSE(NAME, K)                                                                                            \
    VELA_SIMD_CLONES void NAME(float* w, const float* g, float* s1, float* s2, float* s3, int64_t n, const float* p) { \
        float q[6] = {p[0], p[1], p[2], p[3], p[4], p[5]};                                                             \
        for (int64_t i = 0; i < n; i++) element<K>(w[i], g[i], s1[i], s2[i], s3[i], q);                                \
    }
VELA_DENSE(sgd_dense, Optim::sgd)
VELA_DENSE(adam_dense, Optim::adam)
VELA_DENSE(adamw_dense, Optim::adamw)
VELA_DENSE(rmsprop_dense, Optim::rmsprop)
VELA_DENSE(rmsprop_centered_dense, Optim::rmsprop_centered)
VELA_DENSE(adagrad_dense, Optim::adagrad)
#undef VELA_DENSE

using Dense = void (*)(float*, const float*, float*, float*, float*, int64_t, const float*);

template <Optim K>
void run(Dense dense, const Matrix& w, const Matrix& g, const Matrix& s1, const Matrix& s2, const Matrix& s3,
         const float* p) {
    walk<5>({&w, &g, &s1, &s2, &s3}, [&](int64_t n, const std::array<float*, 5>& q, const std::array<int64_t, 5>& s) {
        if (s[0] == 1 && s[1] == 1 && s[2] == 1 && s[3] == 1 && s[4] == 1)
            return dense(q[0], q[1], q[2], q[3], q[4], n, p);
        for (int64_t i = 0; i < n; i++)
            element<K>(q[0][i * s[0]], q[1][i * s[1]], q[2][i * s[2]], q[3][i * s[3]], q[4][i * s[4]], p);
    });
}

}  // namespace

void CpuDevice::optim_step(Optim kind, const Matrix& w, const Matrix& g, const Matrix& s1, const Matrix& s2, const Matrix& s3,
                const float* p) {
    Timed t(this, optim_name(kind));
    switch (kind) {
        case Optim::sgd:
            return run<Optim::sgd>(sgd_dense, w, g, s1, s2, s3, p);
        case Optim::adam:
            return run<Optim::adam>(adam_dense, w, g, s1, s2, s3, p);
        case Optim::adamw:
            return run<Optim::adamw>(adamw_dense, w, g, s1, s2, s3, p);
        case Optim::rmsprop:
            return run<Optim::rmsprop>(rmsprop_dense, w, g, s1, s2, s3, p);
        case Optim::rmsprop_centered:
            return run<Optim::rmsprop_centered>(rmsprop_centered_dense, w, g, s1, s2, s3, p);
        case Optim::adagrad:
            return run<Optim::adagrad>(adagrad_dense, w, g, s1, s2, s3, p);
        case Optim::count_:
            break;
    }
}

}  // namespace vela::cpu

// The fused optimizer updates of the CPU device (the math and the six scalars
// p: src/core/ops_optim.cpp): one pass over the parameter, its gradient and
// its state, threaded by walk(), with a dense stride-1 loop cloned per
// instruction set as in elementwise.cpp. One function per kind gives an
// element's update; the dense and strided loops and shaders/optim.comp do the
// same float operations in the same order.
#pragma GCC optimize("no-math-errno", "no-trapping-math")
#include <array>
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

// Rows r0..r1 of columns j0..j1 of every operand, on this thread (a piece of a
// product runs in a pool job already): one dense run per column, or per block
// where whole columns of every operand follow each other in memory, else
// element by element.
template <Optim K>
void run_block(Dense dense, const std::array<const Matrix*, 5>& ms, int64_t r0, int64_t r1, int64_t j0, int64_t j1,
               const float* p) {
    const int64_t rows = ms[0]->rows, len = r1 - r0;
    bool unit = true, packed = len == rows;
    for (const Matrix* m : ms) {
        unit = unit && m->row_step() == 1;
        packed = packed && m->row_step() == 1 && m->col_step() == rows;
    }
    auto at = [&](int k, int64_t j) { return fptr(*ms[k]) + j * ms[k]->col_step() + r0 * ms[k]->row_step(); };
    if (packed) return dense(at(0, j0), at(1, j0), at(2, j0), at(3, j0), at(4, j0), (j1 - j0) * rows, p);
    for (int64_t j = j0; j < j1; j++) {
        float *w = at(0, j), *g = at(1, j), *s1 = at(2, j), *s2 = at(3, j), *s3 = at(4, j);
        if (unit) {
            dense(w, g, s1, s2, s3, len, p);
            continue;
        }
        const int64_t q0 = ms[0]->row_step(), q1 = ms[1]->row_step(), q2 = ms[2]->row_step(), q3 = ms[3]->row_step(),
                      q4 = ms[4]->row_step();
        for (int64_t i = 0; i < len; i++) element<K>(w[i * q0], g[i * q1], s1[i * q2], s2[i * q3], s3[i * q4], p);
    }
}

// Calls f.template operator()<K>(dense) for kind's K and dense loop.
template <class F>
void with_kind(Optim kind, F&& f) {
    switch (kind) {
        case Optim::sgd:
            return f.template operator()<Optim::sgd>(sgd_dense);
        case Optim::adam:
            return f.template operator()<Optim::adam>(adam_dense);
        case Optim::adamw:
            return f.template operator()<Optim::adamw>(adamw_dense);
        case Optim::rmsprop:
            return f.template operator()<Optim::rmsprop>(rmsprop_dense);
        case Optim::rmsprop_centered:
            return f.template operator()<Optim::rmsprop_centered>(rmsprop_centered_dense);
        case Optim::adagrad:
            return f.template operator()<Optim::adagrad>(adagrad_dense);
        case Optim::count_:
            break;
    }
}

}  // namespace

void CpuDevice::optim_step(Optim kind, const Matrix& w, const Matrix& g, const Matrix& s1, const Matrix& s2, const Matrix& s3,
                const float* p) {
    Timed t(this, optim_name(kind));
    with_kind(kind, [&]<Optim K>(Dense dense) { run<K>(dense, w, g, s1, s2, s3, p); });
}

// g ← α·a·b with each piece of g updated as soon as the thread that computed it
// is done (the piece is then in its core's cache: the separate pass read g, w
// and the state back from the other core or from L3). When the product is cut
// in rows (blas.cpp), so is the forward W·x, and a thread updates the rows of w
// that it multiplies in the forward. A product run whole (small) is updated
// after it, threaded.
void CpuDevice::mm_optim(float alpha, const Matrix& a, const Matrix& b, const Matrix& g, Optim kind, const Matrix& w,
                         const Matrix& s1, const Matrix& s2, const Matrix& s3, const float* p) {
    Timed t(this, Kernel::mm_optim);
    struct Ctx {
        Optim kind;
        std::array<const Matrix*, 5> ms;
        const float* p;
    } ctx{kind, {&w, &g, &s1, &s2, &s3}, p};
    mm_plain_then(alpha, a, b, 0.0f, g, [](void* c, int64_t r0, int64_t r1, int64_t j0, int64_t j1) {
        const Ctx& x = *static_cast<const Ctx*>(c);
        const std::array<const Matrix*, 5>& m = x.ms;
        if (r0 == 0 && r1 == m[0]->rows && j0 == 0 && j1 == m[0]->cols)  // whole: on the calling thread, outside any pool job
            return with_kind(x.kind, [&]<Optim K>(Dense dense) { run<K>(dense, *m[0], *m[1], *m[2], *m[3], *m[4], x.p); });
        with_kind(x.kind, [&]<Optim K>(Dense dense) { run_block<K>(dense, m, r0, r1, j0, j1, x.p); });
    }, &ctx);
}

}  // namespace vela::cpu

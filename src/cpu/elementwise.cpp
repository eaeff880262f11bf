// Elementwise kernels of the CPU device: fill, the unary functions and their
// derivatives, the binary operations. Each is one loop over walk()'s runs,
// with a stride-1 version the compiler vectorises.
// No errno and no FP traps are ever observed here; without them GCC vectorises
// sqrt and if-converts the selects in vmath.hpp (4-5x faster tanh and exp).
#pragma GCC optimize("no-math-errno", "no-trapping-math")
#include <cmath>

#include "cpu/cpu_kernels.hpp"
#include "cpu/vmath.hpp"

namespace vela::cpu {

namespace {

// The compute-bound functions get an AVX2 clone of their dense loop, chosen
// at load time (8 lanes instead of SSE2's 4).
using DenseRun = void (*)(const float* x, float* y, int64_t n);
#define VELA_SIMD_CLONES __attribute__((target_clones("avx2", "default")))
VELA_SIMD_CLONES void tanh_run(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = tanh_f(x[i]);
}
VELA_SIMD_CLONES void sigmoid_run(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = sigmoid_f(x[i]);
}
VELA_SIMD_CLONES void exp_run(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = exp_f(x[i]);
}

template <class F>
void map1(const Matrix& x, const Matrix& y, F f, DenseRun dense = nullptr) {
    walk<2>({&x, &y}, [&](int64_t n, const std::array<float*, 2>& p, const std::array<int64_t, 2>& s) {
        const float* a = p[0];
        float* b = p[1];
        if (s[0] == 1 && s[1] == 1 && dense) {
            dense(a, b, n);
        } else if (s[0] == 1 && s[1] == 1) {
            for (int64_t i = 0; i < n; i++) b[i] = f(a[i]);
        } else {
            for (int64_t i = 0; i < n; i++) b[i * s[1]] = f(a[i * s[0]]);
        }
    });
}

template <class F>
void map2(const Matrix& x, const Matrix& y, const Matrix& z, F f) {
    walk<3>({&x, &y, &z}, [&](int64_t n, const std::array<float*, 3>& p, const std::array<int64_t, 3>& s) {
        const float* a = p[0];
        const float* b = p[1];
        float* c = p[2];
        if (s[0] == 1 && s[1] == 1 && s[2] == 1) {
            for (int64_t i = 0; i < n; i++) c[i] = f(a[i], b[i]);
        } else {
            for (int64_t i = 0; i < n; i++) c[i * s[2]] = f(a[i * s[0]], b[i * s[1]]);
        }
    });
}

}  // namespace

void fill(const Matrix& x, float v) {
    walk<1>({&x}, [&](int64_t n, const std::array<float*, 1>& p, const std::array<int64_t, 1>& s) {
        float* a = p[0];
        if (s[0] == 1) {
            for (int64_t i = 0; i < n; i++) a[i] = v;
        } else {
            for (int64_t i = 0; i < n; i++) a[i * s[0]] = v;
        }
    });
}

void unary(Unary op, const Matrix& x, const Matrix& y, const float* params) {
    switch (op) {
        case Unary::tanh: return map1(x, y, [](float v) { return tanh_f(v); }, tanh_run);
        case Unary::sigmoid: return map1(x, y, [](float v) { return sigmoid_f(v); }, sigmoid_run);
        case Unary::relu: return map1(x, y, [](float v) { return v < 0.0f ? 0.0f : v; });
        case Unary::exp: return map1(x, y, [](float v) { return exp_f(v); }, exp_run);
        case Unary::log: return map1(x, y, [](float v) { return std::log(v); });
        case Unary::sqrt: return map1(x, y, [](float v) { return std::sqrt(v); });
        case Unary::sqr: return map1(x, y, [](float v) { return v * v; });
        case Unary::inv: return map1(x, y, [](float v) { return 1.0f / v; });
        case Unary::abs: return map1(x, y, [](float v) { return std::fabs(v); });
        case Unary::linear_frac: {
            const float a = params[0], b = params[1], c = params[2], d = params[3];
            return map1(x, y, [=](float v) { return (a * v + b) / (c * v + d); });
        }
        case Unary::tanh_prime: return map1(x, y, [](float a) { return 1.0f - a * a; });
        case Unary::sigmoid_prime: return map1(x, y, [](float a) { return a * (1.0f - a); });
        case Unary::relu_prime: return map1(x, y, [](float v) { return v > 0.0f ? 1.0f : 0.0f; });
        case Unary::count_: break;
    }
}

void binary(Binary op, const Matrix& a, const Matrix& b, const Matrix& c) {
    switch (op) {
        case Binary::mul: return map2(a, b, c, [](float u, float v) { return u * v; });
        case Binary::div: return map2(a, b, c, [](float u, float v) { return u / v; });
        case Binary::add: return map2(a, b, c, [](float u, float v) { return u + v; });
        case Binary::sub: return map2(a, b, c, [](float u, float v) { return u - v; });
        case Binary::count_: break;
    }
}

}  // namespace vela::cpu

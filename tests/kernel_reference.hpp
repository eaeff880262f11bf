// The float64 host reference every device's kernels are checked against:
// plain loops in double, written from the definitions (BLAS reference
// semantics, the softmax and cross-entropy formulas), sharing no code with
// any device. Each kernel also yields an error scale: the sum of the
// magnitudes of the terms that make up each result element, so a tolerance
// is relative to what the arithmetic could lose, not to a result that
// cancels to zero.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/device.hpp"

namespace vela::ref {

// A dense column-major float64 matrix.
struct Mat {
    int64_t rows = 0, cols = 0;
    std::vector<double> v;
    Mat() = default;
    Mat(int64_t r, int64_t c, double fill = 0) : rows(r), cols(c), v(size_t(r * c), fill) {}
    Mat(int64_t r, int64_t c, const std::vector<float>& host) : rows(r), cols(c), v(host.begin(), host.end()) {}
    double& operator()(int64_t i, int64_t j) { return v[size_t(i + j * rows)]; }
    double operator()(int64_t i, int64_t j) const { return v[size_t(i + j * rows)]; }
    int64_t size() const { return rows * cols; }
};

struct Result {
    Mat value, scale;  // expected value and its error scale, element by element
};

// c ← α·a·b + β·c (a, b already in their logical, transposed-if-asked shape).
// β = 0 means c is not read (BLAS semantics).
inline Result mm(double alpha, const Mat& a, const Mat& b, double beta, const Mat& c) {
    Result r{Mat(c.rows, c.cols), Mat(c.rows, c.cols)};
    for (int64_t j = 0; j < c.cols; j++) {
        for (int64_t i = 0; i < c.rows; i++) {
            r.value(i, j) = beta == 0 ? 0 : beta * c(i, j);
            r.scale(i, j) = beta == 0 ? 0 : std::fabs(beta * c(i, j));
        }
        for (int64_t k = 0; k < a.cols; k++) {
            double bkj = b(k, j);
            for (int64_t i = 0; i < c.rows; i++) {
                r.value(i, j) += alpha * a(i, k) * bkj;
                r.scale(i, j) += std::fabs(alpha * a(i, k) * bkj);
            }
        }
    }
    return r;
}

// Vectors as n×1 Mats.
inline Result mv(double alpha, const Mat& a, const Mat& x, double beta, const Mat& y) {
    return mm(alpha, a, x, beta, y);
}

inline Result rk(double alpha, const Mat& x, const Mat& y, const Mat& a) {
    Result r{a, Mat(a.rows, a.cols)};
    for (int64_t j = 0; j < a.cols; j++)
        for (int64_t i = 0; i < a.rows; i++) {
            r.value(i, j) += alpha * x.v[size_t(i)] * y.v[size_t(j)];
            r.scale(i, j) = std::fabs(a(i, j)) + std::fabs(alpha * x.v[size_t(i)] * y.v[size_t(j)]);
        }
    return r;
}

// Elementwise: value and scale from a function of one or two values.
template <class F>
Result map(const Mat& x, F f) {
    Result r{Mat(x.rows, x.cols), Mat(x.rows, x.cols)};
    for (size_t k = 0; k < x.v.size(); k++) {
        r.value.v[k] = f(x.v[k]);
        r.scale.v[k] = std::fabs(r.value.v[k]);
    }
    return r;
}

inline Result axpby(double alpha, const Mat& x, double beta, const Mat& y) {
    Result r{Mat(y.rows, y.cols), Mat(y.rows, y.cols)};
    for (size_t k = 0; k < y.v.size(); k++) {
        double by = beta == 0 ? 0 : beta * y.v[k];
        r.value.v[k] = alpha * x.v[k] + by;
        r.scale.v[k] = std::fabs(alpha * x.v[k]) + std::fabs(by);
    }
    return r;
}

inline double dot(const Mat& x, const Mat& y) {
    double s = 0;
    for (size_t k = 0; k < x.v.size(); k++) s += x.v[k] * y.v[k];
    return s;
}
inline double dot_scale(const Mat& x, const Mat& y) {
    double s = 0;
    for (size_t k = 0; k < x.v.size(); k++) s += std::fabs(x.v[k] * y.v[k]);
    return s;
}
inline double nrm2(const Mat& x) { return std::sqrt(dot(x, x)); }
inline double asum(const Mat& x) {
    double s = 0;
    for (double e : x.v) s += std::fabs(e);
    return s;
}
inline double sum(const Mat& x) {
    double s = 0;
    for (double e : x.v) s += e;
    return s;
}
// The binary ops of core/binary.def in float64, from their definitions (a switch
// without default: a new row without its reference fails the build under -Werror=switch).
inline double binary(Binary op, double a, double b) {
    switch (op) {
        case Binary::mul: return a * b;
        case Binary::div: return a / b;
        case Binary::add: return a + b;
        case Binary::sub: return a - b;
        case Binary::gt: return a > b ? 1 : 0;
        case Binary::lt: return a < b ? 1 : 0;
        case Binary::ge: return a >= b ? 1 : 0;
        case Binary::le: return a <= b ? 1 : 0;
        case Binary::eq: return a == b ? 1 : 0;
        case Binary::ne: return a != b ? 1 : 0;
        case Binary::pow: return std::pow(a, b);
        case Binary::count_: break;
    }
    return NAN;
}

// First index (column-major) of the largest magnitude.
inline int64_t imax(const Mat& x) {
    int64_t best = 0;
    for (int64_t k = 1; k < x.size(); k++)
        if (std::fabs(x.v[size_t(k)]) > std::fabs(x.v[size_t(best)])) best = k;
    return best;
}

inline Mat softmax(const Mat& x) {
    Mat y(x.rows, x.cols);
    for (int64_t j = 0; j < x.cols; j++) {
        double m = -INFINITY, s = 0;
        for (int64_t i = 0; i < x.rows; i++) m = std::max(m, x(i, j));
        for (int64_t i = 0; i < x.rows; i++) s += std::exp(x(i, j) - m);
        for (int64_t i = 0; i < x.rows; i++) y(i, j) = std::exp(x(i, j) - m) / s;
    }
    return y;
}

// loss_j = −log softmax(z)_{label_j}; dz = (softmax(z) − onehot)·scale; labels 1-based.
inline void softmax_xent(const Mat& z, const std::vector<double>& labels, double scale, std::vector<double>& loss,
                         Mat& dz) {
    Mat p = softmax(z);
    dz = Mat(z.rows, z.cols);
    loss.assign(size_t(z.cols), 0);
    for (int64_t j = 0; j < z.cols; j++) {
        int64_t c = int64_t(labels[size_t(j)]) - 1;
        loss[size_t(j)] = -std::log(p(c, j));
        for (int64_t i = 0; i < z.rows; i++) dz(i, j) = (p(i, j) - (i == c ? 1.0 : 0.0)) * scale;
    }
}

// 1-based row of each column's first maximum (smallest: its first minimum).
inline std::vector<double> arg_extreme(const Mat& x, bool smallest) {
    std::vector<double> idx(size_t(x.cols));
    for (int64_t j = 0; j < x.cols; j++) {
        int64_t best = 0;
        for (int64_t i = 1; i < x.rows; i++)
            if (smallest ? x(i, j) < x(best, j) : x(i, j) > x(best, j)) best = i;
        idx[size_t(j)] = double(best + 1);
    }
    return idx;
}

// ---- the elementwise op table's reference ----------------------------------------

// One row per vela::Unary op (every row of src/core/ops.def and every
// derivative): the float64 definition, the input range the generic tests draw
// from, and the magnitude rounding is relative to (|value| when null). The
// switch has no default and -Wswitch is an error here: an op added to the table
// without a reference does not compile.
struct UnaryRef {
    float lo = 0, hi = 0;
    double (*f)(double) = nullptr;
    double (*scale)(double) = nullptr;
};
inline const float kUnaryParams[4] = {2, 1, 0.5f, 3};  // linear_frac's a, b, c, d in every test
inline double sigmoid64(double z) { return z >= 0 ? 1 / (1 + std::exp(-z)) : std::exp(z) / (1 + std::exp(z)); }
inline double gelu_arg64(double z) { return 2 * std::sqrt(2 / M_PI) * (z + 0.044715 * z * z * z); }

#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wswitch"
inline UnaryRef unary(Unary op) {
    switch (op) {
    case Unary::relu: return {-1, 1, [](double v) { return v > 0 ? v : 0; }};
    case Unary::sigmoid: return {-20, 20, sigmoid64};
    case Unary::tanh: return {-6, 6, [](double v) { return std::tanh(v); }};
    case Unary::elu: return {-10, 5, [](double v) { return v > 0 ? v : std::expm1(v); }};
    // ½z(1 + tanh u) = z·σ(2u), the form without cancellation in float64 too.
    case Unary::gelu: return {-6, 6, [](double v) { return v * sigmoid64(gelu_arg64(v)); }};
    case Unary::leaky_relu: return {-5, 5, [](double v) { return v > 0 ? v : 0.01 * v; }};
    case Unary::softplus:
        return {-30, 30, [](double v) { return (v > 0 ? v : 0) + std::log1p(std::exp(-std::fabs(v))); }};
    case Unary::exp: return {-80, 80, [](double v) { return std::exp(v); }};
    case Unary::log:
        return {1e-3f, 1e3f, [](double v) { return std::log(v); }, [](double v) { return 1.0 + std::fabs(std::log(v)); }};
    case Unary::sqrt: return {0, 100, [](double v) { return std::sqrt(v); }};
    case Unary::sqr: return {-10, 10, [](double v) { return v * v; }};
    case Unary::inv: return {0.5f, 4, [](double v) { return 1 / v; }};
    case Unary::abs: return {-3, 3, [](double v) { return std::fabs(v); }};
    case Unary::linear_frac:
        return {-1, 1, [](double v) { return (2 * v + 1) / (0.5 * v + 3); },
                [](double v) { return (std::fabs(2 * v) + 1) / (0.5 * v + 3); }};
    // Derivatives, from what the table says: the activation a or the pre-activation z.
    case Unary::relu_prime: return {-1, 1, [](double v) { return v > 0 ? 1.0 : 0.0; }};
    case Unary::sigmoid_prime: return {0, 1, [](double a) { return a * (1 - a); }};
    case Unary::tanh_prime: return {-1, 1, [](double a) { return 1 - a * a; }, [](double a) { return 1 + a * a; }};
    case Unary::elu_prime: return {-0.99f, 5, [](double a) { return a > 0 ? 1 : a + 1; }, [](double a) { return 1 + std::fabs(a); }};
    case Unary::gelu_prime:
        return {-6, 6,
                [](double z) {
                    double s = sigmoid64(gelu_arg64(z));
                    return s + z * s * (1 - s) * 2 * std::sqrt(2 / M_PI) * (1 + 3 * 0.044715 * z * z);
                },
                [](double z) {
                    double s = sigmoid64(gelu_arg64(z));
                    return s + std::fabs(z * s * (1 - s) * 2 * std::sqrt(2 / M_PI) * (1 + 3 * 0.044715 * z * z));
                }};
    case Unary::leaky_relu_prime: return {-1, 1, [](double a) { return a > 0 ? 1 : 0.01; }};
    case Unary::softplus_prime: return {-20, 20, sigmoid64};
    case Unary::count_: break;
    }
    return {};
}
#pragma GCC diagnostic pop

// An activation (vela::Act code) at v: its row of the table above.
inline double act(int which, double v) {
    return Act(which) == Act::identity ? v : unary(act_unary(Act(which))).f(v);
}

// The values of unary op at the elements of x, with their error scales.
inline Result unary(Unary op, const Mat& x) {
    const UnaryRef u = unary(op);
    Result r{Mat(x.rows, x.cols), Mat(x.rows, x.cols)};
    for (size_t k = 0; k < x.v.size(); k++) {
        r.value.v[k] = u.f(x.v[k]);
        r.scale.v[k] = u.scale ? u.scale(x.v[k]) : std::fabs(r.value.v[k]);
    }
    return r;
}

}  // namespace vela::ref

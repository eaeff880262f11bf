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
#include <functional>
#include <vector>

#include "core/device.hpp"
#include "core/opref.hpp"

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
// The binary ops of core/binary.def in float64: the table's own VELA_BIN_REF rows.
inline double binary(Binary op, double a, double b) { return binary_ref(op, a, b); }

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

// The values are the table's own float64 references (the VELA_REF rows of
// src/core/ops.def, vela::unary_ref: <cmath> in double, no kernel code), so a
// new op needs nothing here. What the tests add: the input range each op is
// drawn from ([−5, 5] unless listed below), and the magnitude rounding is
// relative to where the float32 formula cancels (|value| unless listed).
struct UnaryRef {
    float lo = -5, hi = 5;
    std::function<double(double)> f, scale;
};
inline const float kUnaryParams[4] = {2, 1, 0.5f, 3};  // linear_frac's a, b, c, d in every test
inline double unary_value(Unary op, double v) {
    const double p[4] = {kUnaryParams[0], kUnaryParams[1], kUnaryParams[2], kUnaryParams[3]};
    return unary_ref(op, v, p);
}

inline UnaryRef unary(Unary op) {
    UnaryRef r;
    r.f = [op](double v) { return unary_value(op, v); };
    auto range = [&](float lo, float hi) { r.lo = lo, r.hi = hi; };
    switch (op) {
    case Unary::relu: case Unary::relu_prime: case Unary::leaky_relu_prime: case Unary::tanh_prime:
        range(-1, 1);
        break;
    case Unary::sigmoid: case Unary::softplus_prime: range(-20, 20); break;
    case Unary::tanh: case Unary::gelu: case Unary::gelu_prime: range(-6, 6); break;
    case Unary::elu: range(-10, 5); break;
    case Unary::softplus: range(-30, 30); break;
    case Unary::exp: range(-80, 80); break;
    case Unary::sqrt: range(0, 100); break;
    case Unary::sqr: range(-10, 10); break;
    case Unary::inv: range(0.5f, 4); break;
    case Unary::abs: range(-3, 3); break;
    case Unary::sigmoid_prime: range(0, 1); break;
    case Unary::elu_prime: range(-0.99f, 5); break;
    case Unary::linear_frac: range(-1, 1); break;
    case Unary::log: range(1e-3f, 1e3f); break;
    default: break;
    }
    // Where the float32 formula's terms cancel: the sum of their magnitudes.
    switch (op) {
    case Unary::log: r.scale = [](double v) { return 1.0 + std::fabs(unary_value(Unary::log, v)); }; break;
    case Unary::tanh_prime: r.scale = [](double a) { return 1 + a * a; }; break;          // 1 − a²
    case Unary::elu_prime: r.scale = [](double a) { return 1 + std::fabs(a); }; break;    // a + 1
    case Unary::linear_frac:                                                                // (p0·x + p1)/(p2·x + p3)
        r.scale = [](double v) {
            return (std::fabs(kUnaryParams[0] * v) + std::fabs(kUnaryParams[1])) /
                   std::fabs(kUnaryParams[2] * v + kUnaryParams[3]);
        };
        break;
    case Unary::gelu_prime:  // s + z·s′ with s = gelu(z)/z (s(0) = gelu′(0))
        r.scale = [](double z) {
            const double s = z == 0 ? unary_value(Unary::gelu_prime, 0) : unary_value(Unary::gelu, z) / z;
            return std::fabs(s) + std::fabs(unary_value(Unary::gelu_prime, z) - s);
        };
        break;
    default: break;
    }
    return r;
}

// An activation (vela::Act code) at the pre-activation v: the table's reference.
inline double act(int which, double v) { return act_ref(Act(which), v); }

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

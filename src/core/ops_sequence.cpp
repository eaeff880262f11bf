// The checked kernel API of the sequence layers (docs/sequence.md): layer norm
// per column (one token per column) forward and backward, and the embedding's
// scatter-add backward (its forward is gather_cols). The rules and message
// forms are those of ops.cpp (shared checks in ops_check.hpp).
#include <cmath>

#include "core/ops.hpp"
#include "core/ops_check.hpp"

namespace vela {

using namespace opcheck;

void layernorm(const Matrix& x, const Matrix& gamma, const Matrix& beta, float eps, const Matrix& mean,
               const Matrix& rstd, const Matrix& y) {
    const char* fn = "layernorm";
    check_live(fn, "x", x);
    need_f32(fn, "x", x);
    operand(fn, "gamma", gamma, "x", x), operand(fn, "beta", beta, "x", x);
    operand(fn, "mean", mean, "x", x), operand(fn, "rstd", rstd, "x", x), operand(fn, "y", y, "x", x);
    if (x.rows == 0) fail("%s: x is %s but needs at least one row (the values of a token)", fn, describe(x).c_str());
    need_vector(fn, "gamma", gamma, x.rows, "one per row of x");
    need_vector(fn, "beta", beta, x.rows, "one per row of x");
    need_vector(fn, "mean", mean, x.cols, "one per column of x");
    need_vector(fn, "rstd", rstd, x.cols, "one per column of x");
    need_shape(fn, "y", y, x.rows, x.cols, "the shape of x");
    if (!(eps > 0.0f) || !std::isfinite(eps)) fail("%s: eps is %g but must be a positive number", fn, double(eps));
    no_partial_overlap(fn, "y", y, "x", x);
    const Matrix* ins[] = {&gamma, &beta};
    const char* in_names[] = {"gamma", "beta"};
    for (int i = 0; i < 2; i++) {
        no_overlap(fn, "y", y, in_names[i], *ins[i]);
        no_overlap(fn, "mean", mean, in_names[i], *ins[i]), no_overlap(fn, "rstd", rstd, in_names[i], *ins[i]);
    }
    no_overlap(fn, "mean", mean, "x", x), no_overlap(fn, "rstd", rstd, "x", x);
    no_overlap(fn, "mean", mean, "y", y), no_overlap(fn, "rstd", rstd, "y", y);
    no_overlap(fn, "rstd", rstd, "mean", mean);
    x.device().layernorm_forward(x, gamma, beta, eps, mean, rstd, y);
}

void layernorm_backward(const Matrix& dy, const Matrix& x, const Matrix& mean, const Matrix& rstd,
                        const Matrix& gamma, const Matrix& dgamma, const Matrix& dbeta, const Matrix& dx) {
    const char* fn = "layernorm_backward";
    check_live(fn, "x", x);
    need_f32(fn, "x", x);
    operand(fn, "dy", dy, "x", x), operand(fn, "mean", mean, "x", x), operand(fn, "rstd", rstd, "x", x);
    operand(fn, "gamma", gamma, "x", x), operand(fn, "dgamma", dgamma, "x", x);
    operand(fn, "dbeta", dbeta, "x", x), operand(fn, "dx", dx, "x", x);
    if (x.rows == 0) fail("%s: x is %s but needs at least one row (the values of a token)", fn, describe(x).c_str());
    need_shape(fn, "dy", dy, x.rows, x.cols, "the shape of x");
    need_vector(fn, "mean", mean, x.cols, "one per column of x");
    need_vector(fn, "rstd", rstd, x.cols, "one per column of x");
    need_vector(fn, "gamma", gamma, x.rows, "one per row of x");
    need_vector(fn, "dgamma", dgamma, x.rows, "one per row of x");
    need_vector(fn, "dbeta", dbeta, x.rows, "one per row of x");
    need_shape(fn, "dx", dx, x.rows, x.cols, "the shape of x");
    const Matrix* ins[] = {&dy, &x, &mean, &rstd, &gamma};
    const char* in_names[] = {"dy", "x", "mean", "rstd", "gamma"};
    for (int i = 0; i < 5; i++) {
        no_overlap(fn, "dgamma", dgamma, in_names[i], *ins[i]);
        no_overlap(fn, "dbeta", dbeta, in_names[i], *ins[i]);
        no_overlap(fn, "dx", dx, in_names[i], *ins[i]);
    }
    no_overlap(fn, "dbeta", dbeta, "dgamma", dgamma);
    no_overlap(fn, "dx", dx, "dgamma", dgamma), no_overlap(fn, "dx", dx, "dbeta", dbeta);
    x.device().layernorm_backward(dy, x, mean, rstd, gamma, dgamma, dbeta, dx);
}

void embedding_backward(const Matrix& dy, const Matrix& idx, const Matrix& dE) {
    const char* fn = "embedding_backward";
    check_live(fn, "dy", dy);
    need_f32(fn, "dy", dy);
    operand(fn, "idx", idx, "dy", dy), operand(fn, "dE", dE, "dy", dy);
    if (!idx.is_vector() && !idx.empty())
        fail("%s: idx is %s but must be a vector of column indices of dE", fn, describe(idx).c_str());
    if (idx.size() != dy.cols)
        fail("%s: idx has %lld indices but dy has %lld columns (one index per column of dy)", fn,
             (long long)idx.size(), (long long)dy.cols);
    if (dE.rows != dy.rows)
        fail("%s: dE is %s but dy is %s (dE's rows must equal dy's rows)", fn, describe(dE).c_str(),
             describe(dy).c_str());
    no_overlap(fn, "dE", dE, "dy", dy), no_overlap(fn, "dE", dE, "idx", idx);
    dy.device().embedding_backward(dy, idx, dE);
}

namespace {

// T×n scores of n/T sequences: n a multiple of T.
void causal_shape(const char* fn, const Matrix& x) {
    if (x.rows == 0 || x.cols % x.rows != 0)
        fail("%s: x is %s but must be T×n with n a multiple of T (one column per query, T keys per column)", fn,
             describe(x).c_str());
}

}  // namespace

void softmax_causal(const Matrix& x, const Matrix& y) {
    const char* fn = "softmax_causal";
    check_live(fn, "x", x);
    need_f32(fn, "x", x);
    operand(fn, "y", y, "x", x);
    causal_shape(fn, x);
    need_shape(fn, "y", y, x.rows, x.cols, "the shape of x");
    no_partial_overlap(fn, "y", y, "x", x);
    x.device().softmax_causal(x, y);
}

void softmax_causal_backward(const Matrix& y, const Matrix& dy, const Matrix& dx) {
    const char* fn = "softmax_causal_backward";
    check_live(fn, "y", y);
    need_f32(fn, "y", y);
    operand(fn, "dy", dy, "y", y), operand(fn, "dx", dx, "y", y);
    causal_shape(fn, y);
    need_shape(fn, "dy", dy, y.rows, y.cols, "the shape of y");
    need_shape(fn, "dx", dx, y.rows, y.cols, "the shape of y");
    no_overlap(fn, "dx", dx, "y", y), no_partial_overlap(fn, "dx", dx, "dy", dy);
    y.device().softmax_causal_backward(y, dy, dx);
}

void cumsum VELA_SIG_cumsum {  // (const Matrix& x, const Matrix& y): core/kernels.def
    const char* fn = "cumsum";
    check_live(fn, "x", x);
    need_f32(fn, "x", x);
    operand(fn, "y", y, "x", x);
    need_shape(fn, "y", y, x.rows, x.cols, "the shape of x");
    no_partial_overlap(fn, "y", y, "x", x);
    x.device().cumsum(x, y);
}

}  // namespace vela

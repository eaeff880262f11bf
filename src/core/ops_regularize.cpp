// The checked kernel API, regularization and augmentation: dropout, batch
// normalization (batchnorm_stats, batchnorm, batchnorm_backward) and random_shift. The
// rules and message forms are those of ops.cpp; the shared checks are in
// ops_check.hpp.
#include <cmath>

#include "core/ops.hpp"
#include "core/ops_check.hpp"

namespace vela {

using namespace opcheck;

namespace {

// The number of features of x for `group` rows each.
int64_t features(const char* fn, const Matrix& x, int64_t group) {
    if (group < 1) fail("%s: group is %lld but must be ≥ 1 (rows per feature)", fn, (long long)group);
    if (x.rows % group != 0)
        fail("%s: x has %lld rows, not a multiple of group %lld (rows per feature: channels·height·width rows "
             "for height·width per channel)",
             fn, (long long)x.rows, (long long)group);
    return x.rows / group;
}

void need_eps(const char* fn, float eps) {
    if (!(eps > 0.0f) || !std::isfinite(eps)) fail("%s: eps is %g but must be a positive number", fn, double(eps));
}

}  // namespace

void dropout(uint64_t seed, uint64_t step, double p, const Matrix& x, const Matrix& mask, const Matrix& y) {
    const char* fn = "dropout";
    check_live(fn, "x", x);
    need_f32(fn, "x", x);
    operand(fn, "mask", mask, "x", x);
    operand(fn, "y", y, "x", x);
    // p as a float must stay below 1 too (0.99999999 rounds to 1).
    if (!(p >= 0.0 && p < 1.0 && float(p) < 1.0f))
        fail("%s: p is %.17g but must be in [0, 1) (the probability of dropping)", fn, p);
    need_shape(fn, "mask", mask, x.rows, x.cols, "the shape of x");
    need_shape(fn, "y", y, x.rows, x.cols, "the shape of x");
    no_partial_overlap(fn, "y", y, "x", x);
    no_overlap(fn, "mask", mask, "x", x);
    no_overlap(fn, "mask", mask, "y", y);
    // The scale 1/(1 − p) in double, rounded once (in float, 1 − float(p)
    // carries p's rounding error into the scale).
    x.device().dropout(seed, step, float(p), float(1.0 / (1.0 - p)), x, mask, y);
}

void batchnorm_stats(const Matrix& x, int64_t group, const Matrix& mean, const Matrix& var) {
    const char* fn = "batchnorm_stats";
    check_live(fn, "x", x);
    need_f32(fn, "x", x);
    int64_t f = features(fn, x, group);
    operand(fn, "mean", mean, "x", x), operand(fn, "var", var, "x", x);
    need_vector(fn, "mean", mean, f, "one per feature");
    need_vector(fn, "var", var, f, "one per feature");
    if (x.cols == 0) fail("%s: x is %s, an empty batch (the statistics need at least one column)", fn, describe(x).c_str());
    no_overlap(fn, "mean", mean, "x", x), no_overlap(fn, "var", var, "x", x);
    no_overlap(fn, "var", var, "mean", mean);
    x.device().batchnorm_stats(x, group, mean, var);
}

void batchnorm(const Matrix& x, const Matrix& mean, const Matrix& var, const Matrix& gamma, const Matrix& beta,
               float eps, int64_t group, const Matrix& y) {
    const char* fn = "batchnorm";
    check_live(fn, "x", x);
    need_f32(fn, "x", x);
    int64_t f = features(fn, x, group);
    operand(fn, "mean", mean, "x", x), operand(fn, "var", var, "x", x);
    operand(fn, "gamma", gamma, "x", x), operand(fn, "beta", beta, "x", x);
    operand(fn, "y", y, "x", x);
    need_vector(fn, "mean", mean, f, "one per feature");
    need_vector(fn, "var", var, f, "one per feature");
    need_vector(fn, "gamma", gamma, f, "one per feature");
    need_vector(fn, "beta", beta, f, "one per feature");
    need_shape(fn, "y", y, x.rows, x.cols, "the shape of x");
    need_eps(fn, eps);
    no_partial_overlap(fn, "y", y, "x", x);
    no_overlap(fn, "y", y, "mean", mean), no_overlap(fn, "y", y, "var", var);
    no_overlap(fn, "y", y, "gamma", gamma), no_overlap(fn, "y", y, "beta", beta);
    x.device().batchnorm(x, mean, var, gamma, beta, eps, group, y);
}

void batchnorm_backward(const Matrix& dy, const Matrix& x, const Matrix& mean, const Matrix& var, const Matrix& gamma,
                        float eps, int64_t group, const Matrix& dgamma, const Matrix& dbeta, const Matrix& dx) {
    const char* fn = "batchnorm_backward";
    check_live(fn, "x", x);
    need_f32(fn, "x", x);
    int64_t f = features(fn, x, group);
    operand(fn, "dy", dy, "x", x);
    operand(fn, "mean", mean, "x", x), operand(fn, "var", var, "x", x), operand(fn, "gamma", gamma, "x", x);
    operand(fn, "dgamma", dgamma, "x", x), operand(fn, "dbeta", dbeta, "x", x);
    need_shape(fn, "dy", dy, x.rows, x.cols, "the shape of x");
    need_vector(fn, "mean", mean, f, "one per feature");
    need_vector(fn, "var", var, f, "one per feature");
    need_vector(fn, "gamma", gamma, f, "one per feature");
    need_vector(fn, "dgamma", dgamma, f, "one per feature");
    need_vector(fn, "dbeta", dbeta, f, "one per feature");
    need_eps(fn, eps);
    if (x.cols == 0) fail("%s: x is %s, an empty batch", fn, describe(x).c_str());
    const Matrix* ins[] = {&dy, &x, &mean, &var, &gamma};
    const char* in_names[] = {"dy", "x", "mean", "var", "gamma"};
    for (int i = 0; i < 5; i++) {
        no_overlap(fn, "dgamma", dgamma, in_names[i], *ins[i]);
        no_overlap(fn, "dbeta", dbeta, in_names[i], *ins[i]);
    }
    no_overlap(fn, "dbeta", dbeta, "dgamma", dgamma);
    if (dx.buf) {
        operand(fn, "dx", dx, "x", x);
        need_shape(fn, "dx", dx, x.rows, x.cols, "the shape of x");
        for (int i = 0; i < 5; i++) no_overlap(fn, "dx", dx, in_names[i], *ins[i]);
        no_overlap(fn, "dx", dx, "dgamma", dgamma), no_overlap(fn, "dx", dx, "dbeta", dbeta);
    }
    x.device().batchnorm_backward(dy, x, mean, var, gamma, eps, group, dgamma, dbeta, dx);
}

void random_shift(uint64_t seed, uint64_t step, int64_t shift, int64_t height, int64_t width, const Matrix& x,
                  const Matrix& y) {
    const char* fn = "random_shift";
    check_live(fn, "x", x);
    need_f32(fn, "x", x);
    operand(fn, "y", y, "x", x);
    if (height < 1 || width < 1)
        fail("%s: the image is %lld×%lld pixels but must be at least 1×1", fn, (long long)height, (long long)width);
    if (height > (int64_t(1) << 20) || width > (int64_t(1) << 20) || x.rows % (height * width) != 0)
        fail("%s: x has %lld rows, not a multiple of height·width = %lld×%lld (one image of channels·height·width "
             "pixels per column)",
             fn, (long long)x.rows, (long long)height, (long long)width);
    if (shift < 0 || shift > 255) fail("%s: shift is %lld but must be in 0..255 (pixels)", fn, (long long)shift);
    need_shape(fn, "y", y, x.rows, x.cols, "the shape of x");
    no_overlap(fn, "y", y, "x", x);
    x.device().random_shift(seed, step, shift, height, width, x, y);
}

}  // namespace vela

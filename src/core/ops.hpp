// The checked kernel API: what the Lua bindings and the tests call. Each
// function validates its arguments once, for every device (shapes, dtypes,
// one device for all operands, released buffers, forbidden aliasing, index
// ranges), throws vela::Error with a message that names the function, the
// argument and expected versus actual, e.g.
//   mm: a is 256×784 but b is 100×128 (a's columns must equal b's rows)
// and then makes one call into the operands' Device. Indices here are 0-based.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/device.hpp"
#include "core/matrix.hpp"

namespace vela {

// Construction on a device; contents uninitialised unless stated.
Matrix empty(Device& dev, int64_t rows, int64_t cols, DType dtype = DType::f32);
Matrix zeros(Device& dev, int64_t rows, int64_t cols, DType dtype = DType::f32);
// A uint8 matrix with every element v, uploaded in bounded pieces (no host copy of the whole).
Matrix filled_u8(Device& dev, int64_t rows, int64_t cols, uint8_t v);
// values: rows×cols dense column-major.
Matrix from_host(Device& dev, int64_t rows, int64_t cols, const float* values);
Matrix from_host_u8(Device& dev, int64_t rows, int64_t cols, const uint8_t* values);
std::vector<float> to_host(const Matrix& m);  // dense column-major logical order; u8 converted
Matrix to_device(const Matrix& m, Device& dev);  // a dense copy on dev
Matrix clone(const Matrix& m);                   // a dense copy on the same device
float get(const Matrix& m, int64_t i, int64_t j);
void set(const Matrix& m, int64_t i, int64_t j, float v);

// Checked views (0-based): errors name the function ("view", "row", "col", "cols").
Matrix view(const Matrix& m, int64_t i, int64_t j, int64_t rows, int64_t cols);
Matrix row(const Matrix& m, int64_t i);
Matrix col(const Matrix& m, int64_t j);
Matrix columns(const Matrix& m, int64_t j, int64_t n);

// Throws "fn: argument 'name' is a released matrix" etc. Used by every op.
void check_live(const char* fn, const char* arg, const Matrix& m);

// Kernels (see device.hpp for the math).
void mm(float alpha, const Matrix& a, const Matrix& b, float beta, const Matrix& c);
void mv(float alpha, const Matrix& a, const Matrix& x, float beta, const Matrix& y);
void rk(float alpha, const Matrix& x, const Matrix& y, const Matrix& a);
void axpy(float alpha, const Matrix& x, const Matrix& y);
void axpby(float alpha, const Matrix& x, float beta, const Matrix& y);
void scal(float alpha, const Matrix& x);
void copy(const Matrix& x, const Matrix& y);
void swap(const Matrix& x, const Matrix& y);
void fill(const Matrix& x, float v);
double dot(const Matrix& x, const Matrix& y);
double nrm2(const Matrix& x);
double asum(const Matrix& x);
double sum(const Matrix& x);
int64_t imax(const Matrix& x);  // 0-based
void unary(Unary op, const Matrix& x, const Matrix& y, const float* params = nullptr);
// c ← a ∘ b; a and b may broadcast (device.hpp), c must have the broadcast shape.
void binary(Binary op, const Matrix& a, const Matrix& b, const Matrix& c);
// The shape of a ∘ b: equal shapes, two vectors of one length (a's shape), or
// NumPy's broadcast in 2-D; otherwise throws "fn: a is .. but b is ..".
void broadcast_shape(const char* fn, const Matrix& a, const Matrix& b, int64_t& rows, int64_t& cols);
void softmax(const Matrix& x, const Matrix& y);
void softmax_xent(const Matrix& z, const Matrix& labels, const Matrix& loss, float scale, const Matrix& dz);
void argmax(const Matrix& x, const Matrix& idx);
void argmin(const Matrix& x, const Matrix& idx);
void arg_extreme(const Matrix& x, const Matrix& idx, Extreme e);  // argmax or argmin, by e
void gather_cols(const Matrix& src, const Matrix& idx, const Matrix& dst, float scale = 1.0f);
void add_bias(const Matrix& b, const Matrix& y);
void dense(const Matrix& w, const Matrix& x, const Matrix& b, Act act, const Matrix& y);
void act_backward(Act act, const Matrix& da, const Matrix& x, const Matrix& delta);
void random(Dist dist, uint64_t seed, const Matrix& x);
// The fused optimizer updates, one pass per parameter (src/core/ops_optim.cpp).
// The scalars are doubles: the ones derived from them (1 − β, 1 − lr·λ) are
// computed in double and rounded once to float. A hyperparameter outside its
// range (a NaN lr, β ≥ 1, a negative ε) is an error, nothing changed.
void sgd_step(const Matrix& w, const Matrix& g, const Matrix& v, double lr, double momentum, double weight_decay = 0,
              bool nesterov = false);
void adam_step(const Matrix& w, const Matrix& g, const Matrix& m, const Matrix& v, double lr, double beta1,
               double beta2, double eps, double weight_decay = 0);
void adamw_step(const Matrix& w, const Matrix& g, const Matrix& m, const Matrix& v, double lr, double beta1,
                double beta2, double eps, double decay);
// buf: the momentum buffer (null when momentum is 0); gavg: the mean
// gradient of the centered form (null: not centered).
void rmsprop_step(const Matrix& w, const Matrix& g, const Matrix& v, const Matrix* buf, const Matrix* gavg, double lr,
                  double alpha, double eps, double weight_decay = 0, double momentum = 0);
void adagrad_step(const Matrix& w, const Matrix& g, const Matrix& sum, double lr, double eps, double weight_decay = 0);
// g ← a·b, then sgd_step(w, g, v, ...), as one kernel (nn.fit's weight
// gradients): the same values as mm(1, a, b, 0, g) and sgd_step, bit for bit.
void mm_sgd_step(const Matrix& a, const Matrix& b, const Matrix& g, const Matrix& w, const Matrix& v, double lr,
                 double momentum, double weight_decay = 0, bool nesterov = false);

// Regularization and augmentation (core/ops_regularize.cpp; see Device for the equations).
// dropout: 0 ≤ p < 1; mask and y the shape of x; y may be x; mask overlaps neither.
void dropout(uint64_t seed, uint64_t step, double p, const Matrix& x, const Matrix& mask, const Matrix& y);
// group divides x.rows; mean, var, gamma, beta, dgamma, dbeta vectors of x.rows/group elements.
void batchnorm_stats(const Matrix& x, int64_t group, const Matrix& mean, const Matrix& var);
void batchnorm(const Matrix& x, const Matrix& mean, const Matrix& var, const Matrix& gamma, const Matrix& beta,
               float eps, int64_t group, const Matrix& y);
void batchnorm_backward(const Matrix& dy, const Matrix& x, const Matrix& mean, const Matrix& var, const Matrix& gamma,
                        float eps, int64_t group, const Matrix& dgamma, const Matrix& dbeta, const Matrix& dx);
void random_shift(uint64_t seed, uint64_t step, int64_t shift, int64_t height, int64_t width, const Matrix& x,
                  const Matrix& y);
// Convolution and pooling (core/conv.hpp; errors name im2col, col2im, maxpool, ...).
void im2col(const ConvGeom& g, const Matrix& x, const Matrix& cols);
void col2im(const ConvGeom& g, const Matrix& cols, const Matrix& x);
void maxpool(const ConvGeom& g, const Matrix& x, const Matrix& y, const Matrix& idx);
void maxpool_backward(const ConvGeom& g, const Matrix& dy, const Matrix& idx, const Matrix& dx);
void avgpool(const ConvGeom& g, const Matrix& x, const Matrix& y);
void avgpool_backward(const ConvGeom& g, const Matrix& dy, const Matrix& dx);
void to_images(const Matrix& u, const Matrix& b, const Matrix& y);  // b: an empty Matrix for none
void from_images(const Matrix& y, const Matrix& u);
void conv VELA_SIG_conv;              // b, db: an empty Matrix for none
void conv_wgrad VELA_SIG_conv_wgrad;
void conv_dgrad VELA_SIG_conv_dgrad;

// Sequence layers (core/ops_sequence.cpp; Device for the equations). x: m×n, one token per column;
// gamma, beta, dgamma, dbeta: m-vectors; mean, rstd: n-vectors; eps > 0; y may be x.
void layernorm(const Matrix& x, const Matrix& gamma, const Matrix& beta, float eps, const Matrix& mean,
               const Matrix& rstd, const Matrix& y);
void layernorm_backward(const Matrix& dy, const Matrix& x, const Matrix& mean, const Matrix& rstd,
                        const Matrix& gamma, const Matrix& dgamma, const Matrix& dbeta, const Matrix& dx);
// dE(:, idx[j]) += dy(:, j); idx: an n-vector of 1-based columns of dE (dim×vocab), dy: dim×n.
void embedding_backward(const Matrix& dy, const Matrix& idx, const Matrix& dE);
// y(i, j) ← Σ_{i' ≤ i} x(i', j), the prefix sums down each column; y the shape of x, may be x.
void cumsum VELA_SIG_cumsum;  // (the row's parameters: core/kernels.def)
// x, y, dy, dx: T×n with n a multiple of T (Device::softmax_causal); y may be x, dx may be dy.
void softmax_causal(const Matrix& x, const Matrix& y);
void softmax_causal_backward(const Matrix& y, const Matrix& dy, const Matrix& dx);
// Strided batched product (core/ops_bmm.cpp): for i = 1..count, C_i ← α·op(A_i)·op(B_i) + β·C_i, X_i
// the i-th of count equal column blocks of x; op(X_i) = X_iᵀ where ta (tb) is set. a: m×(k·count) (ta:
// k×(m·count)), b: k×(n·count) (tb: n×(k·count)), c: m×(n·count); c overlaps neither a nor b.
void bmm(float alpha, const Matrix& a, const Matrix& b, float beta, const Matrix& c, int64_t count, bool ta = false,
         bool tb = false);

// The default seed used by rand/randn when none is given; seed(n) sets it.
// Each call without a seed draws the next seed from a sequence started at it,
// so two calls give different numbers but a script is reproducible.
void set_default_seed(uint64_t s);
uint64_t next_seed();
// The whole state of that sequence (seed and calls made), for checkpoints:
// restoring it makes the next rand/randn draw what it would have drawn.
void seed_sequence(uint64_t& seed, uint64_t& count);
void set_seed_sequence(uint64_t seed, uint64_t count);

}  // namespace vela

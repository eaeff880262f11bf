// Device: the one seam between the Lua layer and the engines (cpu, vulkan:N).
// Every kernel of the kernel table is a virtual here. Callers go through
// core/ops.hpp, which checks shapes, devices and aliasing once for every
// device; a Device implementation may assume its arguments are valid:
// shapes agree, every matrix lives on this device, nothing released, outputs
// are float32 unless stated, and outputs do not alias inputs where the math
// forbids it.
//
// Asynchrony: a device may queue work. Kernels return at once; download(),
// the reductions that return numbers, and sync() are the points where the
// host waits. flush() starts queued work without waiting. On the CPU all
// three are trivially synchronous.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/conv.hpp"
#include "core/matrix.hpp"
#include "core/user_kernel.hpp"

namespace vela {

// The elementwise functions and activations: the rows of core/ops.def, then
// the derivative of each activation (name_prime). Activations: identity (no
// function), then the VELA_ACT rows in order (the code nn.save writes).
enum class Unary : uint8_t {
#define VELA_ACT(name, f, d, from, what) name,
#define VELA_FN(name, params, f, what) name,
#include "core/ops.def"
#undef VELA_ACT
#undef VELA_FN
#define VELA_ACT(name, f, d, from, what) name##_prime,
#define VELA_FN(name, params, f, what)
#include "core/ops.def"
#undef VELA_ACT
#undef VELA_FN
    count_
};
// c ← a ∘ b: the rows of core/binary.def.
enum class Binary : uint8_t {
#define VELA_BIN(name, f, what) name,
#include "core/binary.def"
#undef VELA_BIN
    count_
};
// The reductions of Device::reduce: the rows of core/reduce.def.
enum class Reduce : uint8_t {
#define VELA_REDUCE(name, what) name,
#include "core/reduce.def"
#undef VELA_REDUCE
    count_
};
// Which end of a column arg_extreme finds: argmax's largest or argmin's smallest value.
enum class Extreme : uint8_t { largest, smallest };
enum class Act : uint8_t {
    identity,
#define VELA_ACT(name, f, d, from, what) name,
#define VELA_FN(name, params, f, what)
#include "core/ops.def"
#undef VELA_ACT
#undef VELA_FN
    count_
};
enum class Dist : uint8_t { uniform, normal };
// The fused optimizer updates of Device::optim_step (src/core/ops_optim.cpp says the math).
enum class Optim : uint8_t { sgd, adam, adamw, rmsprop, rmsprop_centered, adagrad, count_ };
const char* optim_name(Optim);  // "sgd_step", "adam_step", ...

const char* unary_name(Unary);
const char* binary_name(Binary);
const char* reduce_name(Reduce);
const char* act_name(Act);
const char* act_backward_name(Act);  // "tanh_backward": the fused kernel δ ← da ∘ act′
bool parse_act(const std::string& s, Act& out);
// Table facts (core/ops.def): the parameters an op takes (0..4), whether an
// activation's derivative is computed from z (the pre-activation) rather than
// from a, the unary op of an activation and of its derivative (identity has
// neither: Unary::count_), and the help formula of an op.
int unary_params(Unary);
bool act_prime_from_z(Act);
Unary act_unary(Act);
Unary act_prime(Act);
const char* unary_formula(Unary);
const char* binary_formula(Binary);

struct DeviceStats {
    uint64_t dispatches = 0;   // kernels recorded (or run, on the cpu)
    uint64_t submissions = 0;  // command buffers submitted
    uint64_t host_waits = 0;   // times the host blocked on the device
    uint64_t batched = 0;      // kernels of `dispatches` that ran as steps of a batch (Vulkan)
    uint64_t uploads = 0, upload_bytes = 0;      // host → device transfers (upload())
    uint64_t downloads = 0, download_bytes = 0;  // device → host transfers (download())
    double wait_seconds = 0;   // time the host spent blocked on the device (0 on the cpu)
};

struct MemoryInfo {
    uint64_t used = 0;      // bytes held by live buffers
    uint64_t reserved = 0;  // bytes obtained from the system/driver (blocks)
    uint64_t total = 0;     // device memory size (0 when unknown)
};

struct KernelTime {
    std::string kernel;  // e.g. "mm", "tanh"
    double ms = 0;       // device time
    uint64_t call = 0;   // the user's call it belongs to (KernelCall::id; 0: none known)
};

// The call the front end is running, when it says so (profile sets it around
// each kernel it calls): devices name the kernels they time after it, so one
// call has one name on every device ("axpy", not "axpy" here and "axpby"
// there) and the kernels one call ran add up to one call.
struct KernelCall {
    const char* name = nullptr;  // nullptr: none; devices use their own names
    uint64_t id = 0;
};
KernelCall& current_call();

class Device {
public:
    virtual ~Device() = default;

    virtual std::string name() const = 0;  // "cpu", "vulkan:0"

    // Storage. alloc throws vela::Error on exhaustion (the session stays usable).
    virtual std::shared_ptr<Buffer> alloc(DType dtype, size_t count) = 0;
    // Host data is dense column-major rows×cols of the view's logical shape,
    // in the view's dtype. Views may be strided or transposed.
    virtual void upload(const Matrix& dst, const void* host) = 0;
    virtual void download(const Matrix& src, void* host) = 0;  // waits

    virtual void flush() = 0;  // start queued work, do not wait
    virtual void sync() = 0;   // wait for all queued work (polls interrupt_flag)
    // Kernels recorded or submitted and not yet seen complete (does not wait;
    // 0 on a device that runs each kernel as it is called).
    virtual uint64_t queued() { return 0; }

    // Level 3/2: c ← α·a·b + β·c ; y ← α·a·x + β·y ; a ← α·x·yᵀ + a.
    virtual void mm(float alpha, const Matrix& a, const Matrix& b, float beta, const Matrix& c) = 0;
    virtual void mv(float alpha, const Matrix& a, const Matrix& x, float beta, const Matrix& y) = 0;
    virtual void rk(float alpha, const Matrix& x, const Matrix& y, const Matrix& a) = 0;

    // Level 1 and elementwise, on vectors or whole matrices of equal shape.
    virtual void axpby(float alpha, const Matrix& x, float beta, const Matrix& y) = 0;  // y ← αx + βy
    virtual void scal(float alpha, const Matrix& x) = 0;
    virtual void copy(const Matrix& x, const Matrix& y) = 0;  // same dtype, or u8 → f32
    virtual void swap(const Matrix& x, const Matrix& y) = 0;
    virtual void fill(const Matrix& x, float v) = 0;
    virtual double reduce(Reduce op, const Matrix& x, const Matrix* y) = 0;  // y only for dot; waits
    virtual int64_t imax(const Matrix& x) = 0;  // 0-based index of max |x| (first on ties); waits

    virtual void unary(Unary op, const Matrix& x, const Matrix& y, const float* params) = 0;  // y ← f(x)
    // c ← a ∘ b. a and b are c's shape, or broadcast (NumPy's rule in 2-D): an
    // operand with one row (one column) where c has more is read with a row
    // (column) step of 0, so an m×1, 1×n or 1×1 operand serves every column,
    // row or element of an m×n c without a copy.
    virtual void binary(Binary op, const Matrix& a, const Matrix& b, const Matrix& c) = 0;

    // Fused.
    virtual void softmax(const Matrix& x, const Matrix& y) = 0;  // per column, stable
    // z: k×n logits; labels: n-vector of 1-based class indices (float or u8);
    // loss: n-vector of per-column −log softmax(z)[label], or an empty Matrix
    // (buf == nullptr) to skip it; dz ← (softmax(z) − onehot(labels)) · scale.
    virtual void softmax_xent(const Matrix& z, const Matrix& labels, const Matrix& loss, float scale,
                              const Matrix& dz) = 0;
    // idx(j) ← 1 + the first row of column j's largest (argmax) or smallest
    // (argmin) value; NaN never wins, a column of NaN gives 1. idx: an n-vector.
    virtual void arg_extreme(const Matrix& x, const Matrix& idx, Extreme e) = 0;
    // dst(:, j) ← scale · src(:, idx[j]); idx holds 1-based column indices; src f32 or u8.
    virtual void gather_cols(const Matrix& src, const Matrix& idx, const Matrix& dst, float scale) = 0;
    virtual void add_bias(const Matrix& b, const Matrix& y) = 0;  // y(:, j) += b, b an m-vector
    // y ← act(w·x + b·1ᵀ): the forward step of a fully connected layer.
    virtual void dense(const Matrix& w, const Matrix& x, const Matrix& b, Act act, const Matrix& y) = 0;
    // delta ← da ∘ act′(x), one pass: the backward step of an activation; x is
    // the activation a, or the pre-activation z where act_prime_from_z(act).
    virtual void act_backward(Act act, const Matrix& da, const Matrix& x, const Matrix& delta) = 0;

    // Counter-based Philox 4x32-10: element k of the view (column-major
    // logical order) gets a value that depends only on (seed, k); see core/philox.hpp.
    virtual void random(Dist dist, uint64_t seed, const Matrix& x) = 0;

    // Regularization and augmentation (checked in core/ops_regularize.cpp; the
    // cpu's in src/cpu/regularize.cpp, Vulkan's in src/vulkan/kernels_regularize.cpp).
    // The defaults throw, naming the device: a device without them says so.
    // Philox draws here use counter {c, 0, lo32(step), hi32(step)} and key seed.
    // Inverted dropout, one pass: mask(k) ← (u(k) ≥ p ? scale : 0), y(k) ← x(k)·mask(k),
    // u(k) = (w >> 8)·2^-24 for w word k mod 4 of the draw c = k div 4 (k the column-major
    // logical index: one draw serves four elements).
    virtual void dropout(uint64_t seed, uint64_t step, float p, float scale, const Matrix& x, const Matrix& mask,
                         const Matrix& y);
    // Batch normalization over features: x is (F·G)×n and feature f is rows f·G .. f·G+G−1 of
    // every column (G = 1: one feature per row; G = H·W: one per channel), N = G·n values each.
    //   mean(f) ← Σ x / N;  var(f) ← Σ (x − mean)² / N  (two passes)
    virtual void batchnorm_stats(const Matrix& x, int64_t group, const Matrix& mean, const Matrix& var);
    //   y ← γ(f)·(x − mean(f))·inv(f) + β(f),  inv = 1/√(var + eps)
    virtual void batchnorm(const Matrix& x, const Matrix& mean, const Matrix& var, const Matrix& gamma,
                           const Matrix& beta, float eps, int64_t group, const Matrix& y);
    //   dβ(f) ← Σ dy;  dγ(f) ← Σ dy·x̂  (x̂ = (x − mean)·inv);
    //   dx ← γ·inv/N · (N·dy − dβ − x̂·dγ)   (skipped when dx.buf is null)
    virtual void batchnorm_backward(const Matrix& dy, const Matrix& x, const Matrix& mean, const Matrix& var,
                                    const Matrix& gamma, float eps, int64_t group, const Matrix& dgamma,
                                    const Matrix& dbeta, const Matrix& dx);
    // Column j of x holds images of height×width pixels (row-major) in x.rows/(height·width) channels;
    // y(:, j) ← that image moved by (dr, dc) rows and columns, zero fill, with
    // dr = w0 mod (2s+1) − s, dc = w1 mod (2s+1) − s from the draw c = j.
    virtual void random_shift(uint64_t seed, uint64_t step, int64_t shift, int64_t height, int64_t width,
                              const Matrix& x, const Matrix& y);

    // Sequence layers (core/ops_sequence.cpp; docs/sequence.md: one token per column).
    // Layer norm of each column of x (m×n) over its m rows, mean(j) and rstd(j) saved:
    //   y ← γ ∘ (x − mean(j))·rstd(j) + β,  rstd = 1/√(var + eps), var = Σ (x − mean)² / m
    // Backward, x̂ = (x − mean)·rstd, g = dy ∘ γ (γ, β, dγ, dβ m-vectors):
    //   dβ ← Σⱼ dy;  dγ ← Σⱼ dy ∘ x̂;  dx ← rstd·(g − Σᵢ g / m − x̂ · Σᵢ (g ∘ x̂) / m)
    // The defaults compose the batch-normalization kernels on xᵀ (bounded on every device).
    virtual void layernorm_forward(const Matrix& x, const Matrix& gamma, const Matrix& beta, float eps,
                                   const Matrix& mean, const Matrix& rstd, const Matrix& y);
    virtual void layernorm_backward(const Matrix& dy, const Matrix& x, const Matrix& mean, const Matrix& rstd,
                                    const Matrix& gamma, const Matrix& dgamma, const Matrix& dbeta,
                                    const Matrix& dx);
    // dE(:, idx[j]) += dy(:, j) for every j, idx holding 1-based column numbers of dE (checked
    // as gather_cols checks them); the sum over repeated tokens is in a fixed order (same bits each run).
    virtual void embedding_backward(const Matrix& dy, const Matrix& idx, const Matrix& dE);
    // Causal softmax of attention scores, x: T×n, column j the query at position p = j mod T
    // (n/T sequences), row i the key at position i: rows i ≤ p take part, the others are 0:
    //   y(i, j) = exp(x(i, j) − m) / Σ_{i' ≤ p} exp(x(i', j) − m)  (i ≤ p), m the max over i ≤ p
    // backward: dx = y ∘ (dy − Σᵢ y ∘ dy) per column. The defaults throw.
    virtual void softmax_causal(const Matrix& x, const Matrix& y);
    virtual void softmax_causal_backward(const Matrix& y, const Matrix& dy, const Matrix& dx);
    // Strided batched product (core/ops_bmm.cpp; docs/sequence.md): for i = 0..count−1,
    //   C_i ← α·A_i·B_i + β·C_i
    // where X_i is the view x with its offset moved by i·sx elements (a and b may be
    // transposed views: op() travels in the view). Blocks of c do not overlap each other,
    // a or b. The default throws.
    virtual void bmm(float alpha, const Matrix& a, int64_t sa, const Matrix& b, int64_t sb, float beta,
                     const Matrix& c, int64_t sc, int64_t count);

    // A kernel written at the prompt (core/user_kernel.hpp), its operands
    // checked by the caller. Devices that cannot run SPIR-V throw, saying what to install.
    virtual void run_user(const UserCall& call);

    // Convolution and pooling (core/conv.hpp for the layout; the cpu and every
    // Vulkan device implement them; the defaults throw). cols: (C·kh·kw) ×
    // (oh·ow·N), column n·oh·ow + p holding the window of output position p of
    // sample n, row (c·kh + ky)·kw + kx; zeros where the window leaves the image.
    virtual void im2col(const ConvGeom& g, const Matrix& x, const Matrix& cols);
    virtual void col2im(const ConvGeom& g, const Matrix& cols, const Matrix& x);  // x ← x + the sum of cols' windows
    // y: (C·oh·ow)×N window maxima; idx: the 1-based row (in x's column) of each maximum (first on ties).
    virtual void maxpool(const ConvGeom& g, const Matrix& x, const Matrix& y, const Matrix& idx);
    virtual void maxpool_backward(const ConvGeom& g, const Matrix& dy, const Matrix& idx, const Matrix& dx);  // dx ←
    virtual void avgpool(const ConvGeom& g, const Matrix& x, const Matrix& y);                  // window sums / kh·kw
    virtual void avgpool_backward(const ConvGeom& g, const Matrix& dy, const Matrix& dx);      // dx ←
    // u: (P·N)×C, row n·P + p, column c (what colsᵀ·Wᵀ gives) ↔ y: (C·P)×N, the
    // image layout; to_images adds b(c) when b.buf is set.
    virtual void to_images(const Matrix& u, const Matrix& b, const Matrix& y);
    virtual void from_images(const Matrix& y, const Matrix& u);
    // One optimizer update per element in one pass over w, g and the state s1,
    // s2, s3 (what each kind reads and writes, and its six scalars p, are in
    // src/core/ops_optim.cpp; an unused state is s1 again), all one shape. A
    // device without it says so.
    virtual void optim_step(Optim kind, const Matrix& w, const Matrix& g, const Matrix& s1, const Matrix& s2,
                            const Matrix& s3, const float* p);

    // Introspection.
    virtual DeviceStats stats() const = 0;
    virtual MemoryInfo memory() const = 0;
    // Per-kernel device times, collected between profile_begin and profile_end.
    virtual void profile_begin() = 0;
    virtual std::vector<KernelTime> profile_end() = 0;  // waits

    // Settings by name (the cpu: "threads"); a name the device lacks is an error.
    virtual void set_option(const std::string& name, int64_t value);
    virtual int64_t option(const std::string& name) const;
};

}  // namespace vela

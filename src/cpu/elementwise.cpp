// Elementwise kernels of the CPU device: fill, the unary functions of the op
// table (core/ops.def) and their derivatives, the fused backward activation, the
// binary operations of core/binary.def (with broadcasting). Each is one loop over walk()'s runs,
// with a stride-1 version the compiler vectorises.
// No errno and no FP traps are ever observed here; without them GCC vectorises
// sqrt and if-converts the selects in vmath.hpp (4-5x faster tanh and exp).
// Without jump threading GCC keeps one copy of an expression after a select:
// with it, gelu's loop computed e^a twice, for a and for −a, before picking one
// (209 instructions per 8 floats on AVX2 instead of 111: 1.75x slower), and
// exp's clamps became selects after the polynomial (docs/results.md).
// vela_core is built with -ffp-contract=off (opmath's exact float pairs need
// every product rounded), so the x86-64-v3/v4 loops round exactly as the
// baseline and the strided loops do (tests/test_cpu.cpp); dense's epilogue
// (fused.cpp) calls these same loops (unary_run), so dense stays bit-identical
// to mm + add_bias + act (tests/test_ops.cpp).
#pragma GCC optimize("no-math-errno", "no-trapping-math", "no-thread-jumps")
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "cpu/cpu_kernels.hpp"
#include "cpu/isa.hpp"
#include "cpu/vmath.hpp"

namespace vela::cpu {

namespace {

// Every op of the table (core/ops.def) gets a dense stride-1 loop compiled
// three times (isa.hpp): x86-64-v4 with 512-bit vectors (AVX-512 + FMA, 16
// lanes), x86-64-v3 (AVX2 + FMA, 8 lanes) and the baseline x86-64 (SSE2), so
// the build runs on any x86-64; op_runs[isa()] is the one the process takes.
// On this project's Zen 5, tanh over 16M floats runs 2.3x faster than the
// AVX2-without-FMA loop it replaced (docs/cpu.md).
struct Params {
    float p0, p1, p2, p3;
};
using DenseRun = void (*)(const float* x, float* y, int64_t n, Params p);

#define VELA_RUN_AT(op, suffix, attr, expr)                                                      \
    attr void op##_run_##suffix(const float* in, float* out, int64_t n, Params p) {              \
        [[maybe_unused]] const float p0 = p.p0, p1 = p.p1, p2 = p.p2, p3 = p.p3;                \
        for (int64_t i = 0; i < n; i++) {                                                       \
            const float x = in[i];                                                              \
            out[i] = (expr);                                                                    \
        }                                                                                       \
    }
#define VELA_RUN(op, expr)                                                                      \
    VELA_RUN_AT(op, v4, VELA_V4, expr)                                                          \
    VELA_RUN_AT(op, v3, VELA_V3, expr)                                                          \
    VELA_RUN_AT(op, base, , expr)                                                               \
    const DenseRun op##_runs[kIsaCount] = {op##_run_base, op##_run_v3, op##_run_v4};
using namespace opmath;
#define VELA_ACT(name, f, d, from, what) VELA_RUN(name, f) VELA_RUN(name##_prime, d)
#define VELA_FN(name, params, f, what) VELA_RUN(name, f)
#include "core/ops.def"
#undef VELA_ACT
#undef VELA_FN
#undef VELA_RUN

// The fused backward δ ← da ∘ act′(x) of each activation, dispatched the same
// way: one stride-1 loop per ISA (the lambda of a plain loop would be built for
// the baseline only, and gelu's scalar SSE2 loop ran 4x slower than gelu_prime's v3 one).
using DenseRun2 = void (*)(const float* da, const float* x, float* delta, int64_t n);
#define VELA_RUN2_AT(op, suffix, attr, expr)                                                     \
    attr void op##_back_##suffix(const float* gin, const float* in, float* out, int64_t n) {     \
        for (int64_t i = 0; i < n; i++) {                                                       \
            const float g = gin[i], x = in[i];                                                  \
            out[i] = g * (expr);                                                                \
        }                                                                                       \
    }
#define VELA_ACT(op, f, d, from, what)                                                          \
    VELA_RUN2_AT(op, v4, VELA_V4, d)                                                            \
    VELA_RUN2_AT(op, v3, VELA_V3, d)                                                            \
    VELA_RUN2_AT(op, base, , d)                                                                 \
    const DenseRun2 op##_backs[kIsaCount] = {op##_back_base, op##_back_v3, op##_back_v4};
#define VELA_FN(name, params, f, what)
#include "core/ops.def"
#undef VELA_ACT
#undef VELA_FN
#undef VELA_RUN2_AT

// The binary ops of core/binary.def on equal-shape dense operands, the same
// way (they were one baseline loop: add ran at SSE2 width on every CPU).
#define VELA_BIN_AT(op, suffix, attr, fx)                                                        \
    attr void op##_bin_##suffix(const float* pa, const float* pb, float* out, int64_t n) {      \
        for (int64_t i = 0; i < n; i++) {                                                       \
            const float x = pa[i], y = pb[i];                                                   \
            out[i] = (fx);                                                                      \
        }                                                                                       \
    }
#define VELA_BIN(op, fx, what)                                                                  \
    VELA_BIN_AT(op, v4, VELA_V4, fx)                                                            \
    VELA_BIN_AT(op, v3, VELA_V3, fx)                                                            \
    VELA_BIN_AT(op, base, , fx)                                                                 \
    const DenseRun2 op##_bins[kIsaCount] = {op##_bin_base, op##_bin_v3, op##_bin_v4};
#include "core/binary.def"
#undef VELA_BIN
#undef VELA_BIN_AT

// add, sub, mul and div over large dense runs: the same expression on GCC's
// vector types, written straight out with streaming stores from the first
// output element aligned to a vector (a head and tail of less than one vector
// as plain scalar stores). Going through streamed()'s block in L1 costs these
// three-stream loops an extra store and load per element: on one thread of
// the Zen 5 a 16M-float add went from medians of 30-37 GB per cpu-second
// through the block to 43-44 written straight (docs/results.md). The
// expressions round exactly as the scalar ones (one IEEE operation each, no
// contraction).
#define VELA_BIN_DIRECT_AT(op, suffix, attr, width, store, vtype, fx)                              \
    attr void op##_bin_direct_##suffix(const float* pa, const float* pb, float* out, int64_t n) { \
        typedef float V __attribute__((vector_size(4 * (width)), aligned(4), may_alias));       \
        int64_t i = 0;                                                                          \
        for (; i < n && (reinterpret_cast<uintptr_t>(out + i) & (4 * (width) - 1)); i++) {      \
            const float x = pa[i], y = pb[i];                                                   \
            out[i] = (fx);                                                                      \
        }                                                                                       \
        for (; i + (width) <= n; i += (width)) {                                                \
            const V x = *reinterpret_cast<const V*>(pa + i), y = *reinterpret_cast<const V*>(pb + i); \
            const V r = (fx);                                                                   \
            store(out + i, __builtin_bit_cast(vtype, r));                                       \
        }                                                                                       \
        for (; i < n; i++) {                                                                    \
            const float x = pa[i], y = pb[i];                                                   \
            out[i] = (fx);                                                                      \
        }                                                                                       \
    }
#define VELA_BIN_DIRECT(op, fx)                                                                 \
    VELA_BIN_DIRECT_AT(op, v4, VELA_V4, 16, _mm512_stream_ps, __m512, fx)                       \
    VELA_BIN_DIRECT_AT(op, v3, VELA_V3, 8, _mm256_stream_ps, __m256, fx)                        \
    VELA_BIN_DIRECT_AT(op, base, , 4, _mm_stream_ps, __m128, fx)                                \
    const DenseRun2 op##_bin_directs[kIsaCount] = {op##_bin_direct_base, op##_bin_direct_v3, op##_bin_direct_v4};
VELA_BIN_DIRECT(add, x + y)
VELA_BIN_DIRECT(sub, x - y)
VELA_BIN_DIRECT(mul, x * y)
VELA_BIN_DIRECT(div, x / y)
#undef VELA_BIN_DIRECT
#undef VELA_BIN_DIRECT_AT

// relu the same way: one vector of signed integer compares and a mask, which
// clears what relu_f clears (every float whose bits read as an integer at or
// below −inf's: the negatives, −0 and −inf, not a NaN) and keeps the rest.
// On one thread of the Zen 5 it went from a median of 36 GB per cpu-second
// through the block to 45 written straight (docs/results.md).
using DenseRunNt = void (*)(const float* x, float* y, int64_t n);
#define VELA_RELU_DIRECT_AT(suffix, attr, width, store, vtype)                                  \
    attr void relu_direct_##suffix(const float* in, float* out, int64_t n) {                    \
        /* may_alias: the vector of int32 reads the floats' bits */                              \
        typedef int32_t Vi __attribute__((vector_size(4 * (width)), aligned(4), may_alias));    \
        int64_t i = 0;                                                                          \
        for (; i < n && (reinterpret_cast<uintptr_t>(out + i) & (4 * (width) - 1)); i++)        \
            out[i] = opmath::relu_f(in[i]);                                                     \
        for (; i + (width) <= n; i += (width)) {                                                \
            const Vi x = *reinterpret_cast<const Vi*>(in + i);                                  \
            const Vi r = x & ~(x <= -8388608);                                                  \
            store(out + i, __builtin_bit_cast(vtype, r));                                       \
        }                                                                                       \
        for (; i < n; i++) out[i] = opmath::relu_f(in[i]);                                      \
    }
VELA_RELU_DIRECT_AT(v4, VELA_V4, 16, _mm512_stream_ps, __m512)
VELA_RELU_DIRECT_AT(v3, VELA_V3, 8, _mm256_stream_ps, __m256)
VELA_RELU_DIRECT_AT(base, , 4, _mm_stream_ps, __m128)
#undef VELA_RELU_DIRECT_AT
const DenseRunNt relu_directs[kIsaCount] = {relu_direct_base, relu_direct_v3, relu_direct_v4};

// The direct streaming loop of a unary op, or null where it has none.
DenseRunNt unary_direct(Unary op, Isa path) { return op == Unary::relu ? relu_directs[int(path)] : nullptr; }

// The direct streaming loop of a binary op, or null where it has none.
DenseRun2 bin_direct(Binary op, Isa path) {
    switch (op) {
        case Binary::add: return add_bin_directs[int(path)];
        case Binary::sub: return sub_bin_directs[int(path)];
        case Binary::mul: return mul_bin_directs[int(path)];
        case Binary::div: return div_bin_directs[int(path)];
        default: return nullptr;
    }
}

// A dense run into its output through a block in L1 and streaming stores
// (isa.hpp, stream_min): block(i, m, tmp) computes elements i..i+m−1 into tmp.
// An in-place op is safe: each block is read whole before it is written.
constexpr int64_t kStreamBlock = 512;  // 2 KiB: 512 beat 256 and 2048 (docs/results.md)
template <class Block>
void streamed(float* out, int64_t n, Block block) {
    alignas(64) float tmp[kStreamBlock];
    const Isa path = isa();
    for (int64_t i = 0; i < n; i += kStreamBlock) {
        const int64_t m = std::min(kStreamBlock, n - i);
        block(i, m, tmp);
        stream_copy(path, tmp, out + i, m);
    }
    stream_fence();
}

// The ops whose loops run at memory speed, a few instructions per element:
// only they stream. A transcendental's loop is bound by its arithmetic, which
// hides the plain stores' extra traffic, and the copy through L1 cost tanh,
// exp and sigmoid 5-8% (docs/results.md). pow is the binary op of that kind.
bool memory_bound(Unary op) {
    switch (op) {
        case Unary::relu: case Unary::relu_prime: case Unary::leaky_relu: case Unary::leaky_relu_prime:
        case Unary::elu_prime: case Unary::tanh_prime: case Unary::sigmoid_prime: case Unary::sqr:
        case Unary::abs: case Unary::inv: case Unary::sqrt: case Unary::linear_frac:
            return true;
        default: return false;
    }
}

// direct: where the op has one, the loop that streams its results itself (unary_direct).
template <class F>
void map1(const Matrix& x, const Matrix& y, F f, DenseRun dense, Params params, bool cheap,
          DenseRunNt direct = nullptr) {
    const bool stream = cheap && y.size() >= stream_min();
    walk<2>({&x, &y}, [&](int64_t n, const std::array<float*, 2>& p, const std::array<int64_t, 2>& s) {
        const float* a = p[0];
        float* b = p[1];
        if (s[0] == 1 && s[1] == 1) {
            if (!stream) return dense(a, b, n, params);
            if (direct) {
                direct(a, b, n);
                return stream_fence();
            }
            streamed(b, n, [&](int64_t i, int64_t m, float* t) { dense(a + i, t, m, params); });
        } else {
            for (int64_t i = 0; i < n; i++) b[i * s[1]] = f(a[i * s[0]]);
        }
    });
}

// direct: where the op has one, the loop that streams its results itself (bin_direct).
template <class F>
void map2(const Matrix& x, const Matrix& y, const Matrix& z, F f, DenseRun2 dense = nullptr, bool cheap = false,
          int64_t grain = kGrain, DenseRun2 direct = nullptr) {
    const bool stream = cheap && dense && z.size() >= stream_min();
    walk<3>({&x, &y, &z}, [&](int64_t n, const std::array<float*, 3>& p, const std::array<int64_t, 3>& s) {
        const float* a = p[0];
        const float* b = p[1];
        float* c = p[2];
        if (s[0] == 1 && s[1] == 1 && s[2] == 1) {
            if (stream && direct) {
                direct(a, b, c, n);
                return stream_fence();
            }
            if (stream) return streamed(c, n, [&](int64_t i, int64_t m, float* t) { dense(a + i, b + i, t, m); });
            if (dense) return dense(a, b, c, n);
            for (int64_t i = 0; i < n; i++) c[i] = f(a[i], b[i]);
        } else {
            for (int64_t i = 0; i < n; i++) c[i * s[2]] = f(a[i * s[0]], b[i * s[1]]);
        }
    }, grain);
}

}  // namespace

void unary_run(Unary op, const float* x, float* y, int64_t n) { unary_run_at(isa(), op, x, y, n, nullptr); }

void fill_plain(const Matrix& x, float v) {
    walk<1>({&x}, [&](int64_t n, const std::array<float*, 1>& p, const std::array<int64_t, 1>& s) {
        float* a = p[0];
        if (s[0] == 1) {
            for (int64_t i = 0; i < n; i++) a[i] = v;
        } else {
            for (int64_t i = 0; i < n; i++) a[i * s[0]] = v;
        }
    });
}

void CpuDevice::fill(const Matrix& x, float v) {
    Timed t(this, Kernel::fill);
    fill_plain(x, v);
}

void CpuDevice::unary(Unary op, const Matrix& xm, const Matrix& ym, const float* params) {
    Timed t(this, unary_name(op));
    const Params q = params ? Params{params[0], params[1], params[2], params[3]} : Params{0, 0, 0, 0};
    [[maybe_unused]] const float p0 = q.p0, p1 = q.p1, p2 = q.p2, p3 = q.p3;
    const int path = int(isa());
    using namespace opmath;
    switch (op) {
#define VELA_CASE(op, expr)                                                                     \
    case Unary::op:                                                                             \
        return map1(xm, ym, [=](float x) { return (expr); }, op##_runs[path], q, memory_bound(Unary::op), \
                    unary_direct(Unary::op, isa()));
#define VELA_ACT(name, f, d, from, what) VELA_CASE(name, f) VELA_CASE(name##_prime, d)
#define VELA_FN(name, params, f, what) VELA_CASE(name, f)
#include "core/ops.def"
#undef VELA_ACT
#undef VELA_FN
#undef VELA_CASE
        case Unary::count_: break;
    }
}

// delta ← da ∘ act′(x), one pass over the three views.
// act_backward's runs are cut across the pool from half the pool's grain: it
// moves three floats an element (two read, one written) where kGrain was sized
// for the unary loops' two, and a hidden layer's δ (the MLP's 256×128: 32,768
// elements, one grain) then runs on both threads, each on the columns that the
// product before it (dx, cut in column halves) left in its cache.
constexpr int64_t kBackwardGrain = kGrain / 2;

void CpuDevice::act_backward(Act act, const Matrix& da, const Matrix& xm, const Matrix& delta) {
    Timed t(this, act_backward_name(act));
    using namespace opmath;
    switch (act) {
        case Act::identity: return map2(da, xm, delta, [](float g, float) { return g; });
#define VELA_ACT(name, f, d, from, what) \
    case Act::name: return map2(da, xm, delta, [](float g, float x) { return g * (d); }, name##_backs[int(isa())], \
                                   memory_bound(act_prime(Act::name)), kBackwardGrain);
#define VELA_FN(name, params, f, what)
#include "core/ops.def"
#undef VELA_ACT
#undef VELA_FN
        case Act::count_: break;
    }
}

namespace {

// The steps of operand m read as c's shape: 0 along a dimension m spans once (broadcast).
void bsteps(const Matrix& m, const Matrix& c, int64_t& rs, int64_t& cs) {
    rs = m.rows == 1 && c.rows != 1 ? 0 : m.row_step();
    cs = m.cols == 1 && c.cols != 1 ? 0 : m.col_step();
}

// c ← f(a, b) with a or b broadcast (device.hpp): one strided pass per column of c.
template <class F>
void map2_broadcast(const Matrix& a, const Matrix& b, const Matrix& c, F f) {
    if (c.empty()) return;
    int64_t ars, acs, brs, bcs;
    bsteps(a, c, ars, acs), bsteps(b, c, brs, bcs);
    const int64_t crs = c.row_step(), ccs = c.col_step(), rows = c.rows;
    const float *pa = fptr(a), *pb = fptr(b);
    float* pc = fptr(c);
    parallel_for(c.cols, rows >= kGrain ? 1 : kGrain / rows, [&](int64_t jb, int64_t je) {
        for (int64_t j = jb; j < je; j++) {
            const float *x = pa + j * acs, *y = pb + j * bcs;
            float* z = pc + j * ccs;
            for (int64_t i = 0; i < rows; i++) z[i * crs] = f(x[i * ars], y[i * brs]);
        }
    });
}

}  // namespace

void CpuDevice::binary(Binary op, const Matrix& a, const Matrix& b, const Matrix& c) {
    Timed t(this, binary_name(op));
    using namespace opmath;
    const bool same = a.rows == c.rows && a.cols == c.cols && b.rows == c.rows && b.cols == c.cols;
    const int path = int(isa());
    switch (op) {
#define VELA_BIN(name, fx, what)                                     \
    case Binary::name: {                                             \
        auto f = [](float x, float y) { return (fx); };              \
        if (!same) return map2_broadcast(a, b, c, f);                \
        return map2(a, b, c, f, name##_bins[path], Binary::name != Binary::pow, kGrain,   \
                    bin_direct(Binary::name, isa()));                                          \
    }
#include "core/binary.def"
#undef VELA_BIN
        case Binary::count_: break;
    }
}

void unary_run_at(Isa path, Unary op, const float* x, float* y, int64_t n, const float* params) {
    const Params q = params ? Params{params[0], params[1], params[2], params[3]} : Params{0, 0, 0, 0};
    switch (op) {
#define VELA_CASE(op) \
    case Unary::op: return op##_runs[int(path)](x, y, n, q);
#define VELA_ACT(name, f, d, from, what) VELA_CASE(name) VELA_CASE(name##_prime)
#define VELA_FN(name, params, f, what) VELA_CASE(name)
#include "core/ops.def"
#undef VELA_ACT
#undef VELA_FN
#undef VELA_CASE
        case Unary::count_: break;
    }
}

void binary_run_at(Isa path, Binary op, const float* a, const float* b, float* c, int64_t n) {
    switch (op) {
#define VELA_BIN(name, fx, what) \
    case Binary::name: return name##_bins[int(path)](a, b, c, n);
#include "core/binary.def"
#undef VELA_BIN
        case Binary::count_: break;
    }
}

bool unary_stream_run_at(Isa path, Unary op, const float* x, float* y, int64_t n) {
    const DenseRunNt direct = unary_direct(op, path);
    if (!direct) return false;
    direct(x, y, n);
    stream_fence();
    return true;
}

bool binary_stream_run_at(Isa path, Binary op, const float* a, const float* b, float* c, int64_t n) {
    const DenseRun2 direct = bin_direct(op, path);
    if (!direct) return false;
    direct(a, b, c, n);
    stream_fence();
    return true;
}

void act_backward_run_at(Isa path, Act act, const float* da, const float* x, float* delta, int64_t n) {
    switch (act) {
        case Act::identity:
            for (int64_t i = 0; i < n; i++) delta[i] = da[i];
            return;
#define VELA_ACT(name, f, d, from, what) \
    case Act::name: return name##_backs[int(path)](da, x, delta, n);
#define VELA_FN(name, params, f, what)
#include "core/ops.def"
#undef VELA_ACT
#undef VELA_FN
        case Act::count_: break;
    }
}

}  // namespace vela::cpu

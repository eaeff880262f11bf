// The instruction-set paths of the cpu device's own elementwise loops
// (elementwise.cpp): each loop is compiled three times, for x86-64-v4
// (AVX-512 + FMA, 512-bit vectors, 16 lanes), x86-64-v3 (AVX2 + FMA, 8 lanes)
// and the baseline x86-64 (SSE2, 4 lanes), and the process runs one of them:
// the best the CPU supports, or the one VELA_CPU_ISA names (base, v3 or v4),
// refused when the CPU lacks it. docs/cpu.md, "Which loops run".
#pragma once
#include <string>

#include "core/device.hpp"

namespace vela::cpu {

enum class Isa : int { base = 0, v3 = 1, v4 = 2 };
constexpr int kIsaCount = 3;

bool isa_supported(Isa isa);       // this CPU and its OS run the path's instructions
const char* isa_name(Isa isa);     // VELA_CPU_ISA's word: "base", "v3", "v4"
const char* isa_arch(Isa isa);     // "x86-64", "x86-64-v3", "x86-64-v4"
std::string isa_describe(Isa isa); // "x86-64-v3 (AVX2 + FMA, 8 lanes)"

struct IsaChoice {
    Isa isa = Isa::base;  // the path the loops take
    std::string how;      // "detected" or "VELA_CPU_ISA=base"
    std::string error;    // non-empty when VELA_CPU_ISA asks for what cannot run (isa is then the detected one)
};
// From the variable's value (null or empty: unset) and the CPU's support; the tests' entry.
IsaChoice choose_isa(const char* env, bool v3_ok, bool v4_ok);
// Decided once per process from VELA_CPU_ISA and this CPU. The cpu device
// refuses to open when .error is set (init_threads).
const IsaChoice& isa_choice();
inline Isa isa() {
    static const Isa i = isa_choice().isa;
    return i;
}

// The function attributes that compile a loop for the v4 and v3 paths (the
// baseline takes none): elementwise.cpp's and fused.cpp's loops use them.
// (GCC's target_clones cannot ask for 512-bit vectors: its v4 clone used 256.)
#define VELA_V4 __attribute__((target("arch=x86-64-v4,prefer-vector-width=512")))
#define VELA_V3 __attribute__((target("arch=x86-64-v3")))

// One dense stride-1 loop of a given path, whatever the process runs: the
// tests check every path this CPU supports against the float64 references.
// params: linear_frac's p0..p3 (null: zeros).
void unary_run_at(Isa isa, Unary op, const float* x, float* y, int64_t n, const float* params);
void binary_run_at(Isa isa, Binary op, const float* a, const float* b, float* c, int64_t n);
// The loops that write a large result of relu, add, sub, mul or div straight
// out with streaming stores (elementwise.cpp), on the given path; false, and
// nothing written, for the ops without one. Fenced before they return.
bool unary_stream_run_at(Isa isa, Unary op, const float* x, float* y, int64_t n);
bool binary_stream_run_at(Isa isa, Binary op, const float* a, const float* b, float* c, int64_t n);
void act_backward_run_at(Isa isa, Act act, const float* da, const float* x, float* delta, int64_t n);
// softmax of one dense column of n floats (fused.cpp), y ← e^(x − max) / Σ.
void softmax_col_at(Isa isa, const float* x, float* y, int64_t n);

// The results of memory-bound elementwise ops (elementwise.cpp, memory_bound)
// of at least stream_min() floats (8M: 32 MiB) are computed into a block in
// L1 and written with non-temporal stores (elementwise_stream.cpp says why). set_stream_min returns the previous
// value: the tests' way to take that path at small sizes.
int64_t stream_min();
int64_t set_stream_min(int64_t floats);
// dst ← src (n floats) with streaming stores where dst is vector-aligned; then
// stream_fence() before the results are handed to another thread.
void stream_copy(Isa isa, const float* src, float* dst, int64_t n);
void stream_fence();

}  // namespace vela::cpu

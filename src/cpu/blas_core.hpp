// Which OpenBLAS kernels (its "core": Prescott, Haswell, Zen, SkylakeX, ...)
// the cpu device runs, and making them the best ones this OpenBLAS has for the
// processor's features. A DYNAMIC_ARCH OpenBLAS picks its core from the
// processor's model numbers when it loads; a model it does not know (Debian's
// 0.3.21 on Emerald Rapids) gets the SSE3 "Prescott" kernels, 18% of the FMA
// peak. vela reads the features themselves (cpuid, and xgetbv for what the
// operating system saves) and, when OpenBLAS's pick underuses them and
// OPENBLAS_CORETYPE is unset, re-selects the core before the first BLAS call,
// keeping it only if a small product still agrees with a float64 reference.
// VELA_BLAS_CORE=off turns this off. docs/cpu.md, "BLAS kernels".
#pragma once
#include <cblas.h>

#include <string>

namespace vela::cpu {

struct CpuFeatures {
    bool amd = false;  // vendor AuthenticAMD (Zen kernels rather than Haswell's for AVX2)
    bool avx = false, fma = false, avx2 = false;  // each with the OS saving the YMM state
    bool avx512 = false;                          // F, DQ, CD, BW and VL, with the OS saving the ZMM state
    bool avx512_bf16 = false;                     // Cooperlake's addition
};

CpuFeatures cpu_features();
// "AVX-512 (F, DQ, CD, BW, VL), BF16" / "AVX2, FMA" / "AVX" / "SSE only".
std::string describe(const CpuFeatures& f);

// The core this OpenBLAS should use for `f` when it picked `picked`, or "" to
// keep `picked`: only when the pick's vector width is below what the features
// offer, and never for a core name this table does not know (a newer OpenBLAS's).
std::string better_blas_core(const CpuFeatures& f, const std::string& picked);

// Runs a few products (all four transpose cases, a small and a blocked size)
// and a dot and an axpy through the current core against float64 references;
// false with the first failure in *why. `gemm` replaces cblas_sgemm in tests.
using SgemmFn = decltype(&cblas_sgemm);
bool blas_self_check(std::string* why, SgemmFn gemm = &cblas_sgemm);

// What ensure_blas_core() did, for devices() and the benchmarks.
struct BlasCore {
    std::string core;    // openblas_get_corename() now
    std::string picked;  // what OpenBLAS picked by itself
    std::string how;     // one line: who chose `core` and why
};

// Decides once per process (later calls return the first answer); the shell
// calls it first thing in main, the cpu device on first use. Single-threaded
// callers only: it sets and clears OPENBLAS_CORETYPE around OpenBLAS's own
// gotoblas_dynamic_init.
const BlasCore& ensure_blas_core();
// The decision itself, made anew (switching the core when it decides to): the tests' entry.
BlasCore decide_blas_core();

// Re-selects OpenBLAS's core by name (as OPENBLAS_CORETYPE takes it); true when
// openblas_get_corename() then names it. For ensure_blas_core and the tests.
bool switch_blas_core(const std::string& name);

}  // namespace vela::cpu

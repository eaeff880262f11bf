#include "cpu/blas_core.hpp"

#include <cblas.h>
#include <dlfcn.h>
#include <strings.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace vela::cpu {

namespace {

#if defined(__x86_64__) || defined(__i386__)
uint64_t xgetbv0() {
    uint32_t lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (uint64_t(hi) << 32) | lo;
}
#endif

// The vector width a core's sgemm kernels use: 0 SSE, 1 AVX, 2 AVX2+FMA,
// 3 AVX-512; -1 for a name not in this table (left alone).
int core_level(const std::string& name) {
    static const struct {
        const char* name;
        int level;
    } table[] = {
        {"sapphirerapids", 3}, {"cooperlake", 3}, {"skylakex", 3},
        {"haswell", 2}, {"zen", 2}, {"excavator", 2},
        {"sandybridge", 1}, {"bulldozer", 1}, {"piledriver", 1}, {"steamroller", 1},
        {"prescott", 0}, {"core2", 0}, {"penryn", 0}, {"dunnington", 0}, {"nehalem", 0}, {"atom", 0},
        {"nano", 0}, {"opteron", 0}, {"opteron(sse3)", 0}, {"opteron_sse3", 0}, {"barcelona", 0},
        {"bobcat", 0}, {"katmai", 0}, {"coppermine", 0}, {"northwood", 0}, {"banias", 0}, {"athlon", 0},
        {"unknown", 0},
    };
    for (const auto& t : table)
        if (strcasecmp(t.name, name.c_str()) == 0) return t.level;
    return -1;
}

int feature_level(const CpuFeatures& f) {
    if (f.avx512 && f.avx2 && f.fma) return 3;
    if (f.avx2 && f.fma) return 2;
    return f.avx ? 1 : 0;
}

// OpenBLAS's own entry points for (re)selecting the core, exported by its
// DYNAMIC_ARCH builds but declared in no header: looked up, not linked, so a
// build without them (one fixed core) still runs, with the choice left alone.
using VoidFn = void (*)();
VoidFn openblas_fn(const char* name) { return reinterpret_cast<VoidFn>(dlsym(RTLD_DEFAULT, name)); }

// OpenBLAS's pthreads build starts its worker threads as it loads, one fewer
// than the cores, and each spins (sched_yield) for about 2^28 cycles waiting
// for work before it sleeps: 0.1 s of a core in every vela process, at start-up,
// while the dynamic loader, a Vulkan driver's first use and the pool want it
// (measured: a 0.3 s script took 0.46 s of processor time, 0.33 s with
// OPENBLAS_NUM_THREADS=1). vela runs OpenBLAS on one thread (cpu_device.cpp,
// init_threads), so the workers go as soon as this program's own initialisers
// run, which is after every shared library's. openblas_set_num_threads starts
// the server again when it finds none, with blas_num_threads − 1 workers, so
// that count (an exported int) becomes 1 too; asking for more threads later
// (the native benchmarks' comparisons) adds workers as OpenBLAS always does.
const bool blas_workers_stopped = [] {
    openblas_set_num_threads(1);
    using ShutdownFn = int (*)();
    auto stop = reinterpret_cast<ShutdownFn>(openblas_fn("blas_thread_shutdown_"));
    auto workers = static_cast<int*>(dlsym(RTLD_DEFAULT, "blas_num_threads"));
    if (stop && workers) {
        stop();
        *workers = 1;
    }
    return true;
}();

// Deterministic inputs in [-1, 1).
void fill_inputs(std::vector<float>& v, uint32_t seed) {
    for (float& x : v) {
        seed = seed * 1664525u + 1013904223u;
        x = float(seed >> 8) / float(1u << 23) - 1.0f;
    }
}

// c ← α·op(a)·op(b) + β·c in float32 through cblas, compared with float64.
bool check_gemm(SgemmFn gemm, int m, int n, int k, bool ta, bool tb, std::string* why) {
    const int lda = ta ? k : m, ldb = tb ? n : k;
    std::vector<float> a(size_t(lda) * (ta ? m : k)), b(size_t(ldb) * (tb ? k : n)), c(size_t(m) * n);
    fill_inputs(a, 1u + uint32_t(m)), fill_inputs(b, 2u + uint32_t(n)), fill_inputs(c, 3u + uint32_t(k));
    std::vector<float> c0 = c;
    const float alpha = 1.5f, beta = 0.5f;
    gemm(CblasColMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, alpha,
                a.data(), lda, b.data(), ldb, beta, c.data(), m);
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i) {
            double s = 0, mag = 0;
            for (int l = 0; l < k; ++l) {
                double x = ta ? a[size_t(i) * lda + l] : a[size_t(l) * lda + i];
                double y = tb ? b[size_t(l) * ldb + j] : b[size_t(j) * ldb + l];
                s += x * y, mag += std::fabs(x * y);
            }
            double want = alpha * s + beta * double(c0[size_t(j) * m + i]);
            // float32 accumulation over k terms: a few k·ε of the magnitudes summed.
            double tol = 4.0 * (k + 2) * 6e-8 * (std::fabs(alpha) * mag + std::fabs(beta * c0[size_t(j) * m + i])) + 1e-6;
            double got = c[size_t(j) * m + i];
            if (!(std::fabs(got - want) <= tol)) {
                char buf[200];
                std::snprintf(buf, sizeof buf, "sgemm %c%c %d×%d×%d: c(%d,%d) = %.9g, float64 says %.9g", ta ? 'T' : 'N',
                              tb ? 'T' : 'N', m, n, k, i + 1, j + 1, got, want);
                *why = buf;
                return false;
            }
        }
    return true;
}

bool check_level1(std::string* why) {
    const int n = 1003;
    std::vector<float> x(n), y(n);
    fill_inputs(x, 7), fill_inputs(y, 8);
    double dot = 0, mag = 0;
    for (int i = 0; i < n; ++i) dot += double(x[i]) * y[i], mag += std::fabs(double(x[i]) * y[i]);
    double got = cblas_sdot(n, x.data(), 1, y.data(), 1);
    if (!(std::fabs(got - dot) <= 4.0 * n * 6e-8 * mag + 1e-6)) {
        *why = "sdot of 1003 elements: " + std::to_string(got) + ", float64 says " + std::to_string(dot);
        return false;
    }
    std::vector<float> y0 = y;
    cblas_saxpy(n, 0.75f, x.data(), 1, y.data(), 1);
    for (int i = 0; i < n; ++i) {
        double want = 0.75 * double(x[i]) + y0[i];
        if (!(std::fabs(y[i] - want) <= 2.4e-7 * (std::fabs(0.75 * x[i]) + std::fabs(y0[i])) + 1e-7)) {
            *why = "saxpy of 1003 elements: element " + std::to_string(i + 1) + " off";
            return false;
        }
    }
    return true;
}

bool env_off(const char* v) {
    return v && (strcasecmp(v, "off") == 0 || strcmp(v, "0") == 0 || strcasecmp(v, "no") == 0 ||
                 strcasecmp(v, "false") == 0);
}

}  // namespace

BlasCore decide_blas_core() {
    BlasCore r;
    r.picked = r.core = openblas_get_corename();
    const CpuFeatures f = cpu_features();
    if (const char* set = std::getenv("OPENBLAS_CORETYPE"); set && *set) {
        r.how = std::string("OPENBLAS_CORETYPE=") + set + " (the environment's choice, respected)";
        // Respected even where it underuses the processor (a workplace may set it because an
        // OpenBLAS build failed on this CPU), but said: on an AVX-512 CPU Haswell's kernels run
        // at half the FMA peak of SkylakeX's (docs/results.md, Zen 5).
        if (const std::string best = better_blas_core(f, r.core); !best.empty())
            r.how += "; this processor has " + describe(f) + ", which " + best +
                     "'s kernels would use: unset OPENBLAS_CORETYPE to let vela choose";
        return r;
    }
    if (env_off(std::getenv("VELA_BLAS_CORE"))) {
        r.how = "OpenBLAS's pick (VELA_BLAS_CORE=off; the processor has " + describe(f) + ")";
        return r;
    }
    const std::string want = better_blas_core(f, r.picked);
    if (want.empty()) {
        r.how = "OpenBLAS's pick, the best it has for " + describe(f);
        return r;
    }
    std::string why;
    if (!switch_blas_core(want)) {
        switch_blas_core(r.picked);
        r.core = openblas_get_corename();
        r.how = "OpenBLAS's pick: this OpenBLAS cannot switch to " + want + " (for " + describe(f) + ")";
    } else if (!blas_self_check(&why)) {
        switch_blas_core(r.picked);
        r.core = openblas_get_corename();
        std::fprintf(stderr, "vela: OpenBLAS's %s kernels failed a self-check (%s); keeping %s\n", want.c_str(),
                     why.c_str(), r.core.c_str());
        r.how = "OpenBLAS's pick: " + want + " failed vela's self-check";
    } else {
        r.core = openblas_get_corename();
        r.how = "chosen by vela for " + describe(f) + " (OpenBLAS picked " + r.picked + "; VELA_BLAS_CORE=off keeps it)";
    }
    return r;
}

CpuFeatures cpu_features() {
    CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return f;
    const unsigned max_leaf = a;
    f.amd = b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163;  // "AuthenticAMD"
    __get_cpuid(1, &a, &b, &c, &d);
    const bool osxsave = c & (1u << 27);
    const uint64_t xcr0 = osxsave ? xgetbv0() : 0;
    const bool ymm = (xcr0 & 0x6) == 0x6, zmm = (xcr0 & 0xe6) == 0xe6;
    f.avx = ymm && (c & (1u << 28));
    f.fma = ymm && (c & (1u << 12));
    if (max_leaf >= 7) {
        __cpuid_count(7, 0, a, b, c, d);
        f.avx2 = f.avx && (b & (1u << 5));
        const unsigned need = (1u << 16) | (1u << 17) | (1u << 28) | (1u << 30) | (1u << 31);  // F DQ CD BW VL
        f.avx512 = zmm && f.avx2 && (b & need) == need;
        const unsigned subleaves = a;
        if (f.avx512 && subleaves >= 1) {
            __cpuid_count(7, 1, a, b, c, d);
            f.avx512_bf16 = a & (1u << 5);
        }
    }
#endif
    return f;
}

std::string describe(const CpuFeatures& f) {
    if (f.avx512) return std::string("AVX-512 (F, DQ, CD, BW, VL)") + (f.avx512_bf16 ? ", BF16" : "");
    if (f.avx2 && f.fma) return "AVX2, FMA";
    if (f.avx) return "AVX";
    return "SSE only";
}

std::string better_blas_core(const CpuFeatures& f, const std::string& picked) {
    const int have = core_level(picked), can = feature_level(f);
    if (have < 0 || have >= can) return "";
    switch (can) {
    case 3: return f.avx512_bf16 ? "Cooperlake" : "SkylakeX";
    case 2: return f.amd ? "Zen" : "Haswell";
    default: return "Sandybridge";
    }
}

bool blas_self_check(std::string* why, SgemmFn gemm) {
    std::string ignored;
    if (!why) why = &ignored;
    static const int shapes[][3] = {{13, 7, 11}, {67, 45, 53}, {100, 60, 90}};
    for (const auto& s : shapes)
        for (int t = 0; t < 4; ++t)
            if (!check_gemm(gemm, s[0], s[1], s[2], t & 1, t & 2, why)) return false;
    return check_level1(why);
}

bool switch_blas_core(const std::string& name) {
    VoidFn quit = openblas_fn("gotoblas_dynamic_quit"), init = openblas_fn("gotoblas_dynamic_init");
    if (!quit || !init) return false;
    // gotoblas_dynamic_init reads OPENBLAS_CORETYPE, as it does at load time;
    // the variable is cleared again so that child processes decide for themselves.
    const char* before = std::getenv("OPENBLAS_CORETYPE");
    std::string saved = before ? before : "";
    setenv("OPENBLAS_CORETYPE", name.c_str(), 1);
    quit();
    init();
    if (before) setenv("OPENBLAS_CORETYPE", saved.c_str(), 1);
    else unsetenv("OPENBLAS_CORETYPE");
    return strcasecmp(openblas_get_corename(), name.c_str()) == 0;
}

const BlasCore& ensure_blas_core() {
    static const BlasCore r = decide_blas_core();
    return r;
}

}  // namespace vela::cpu

// sgemm at vela's shapes through one library, chosen at compile time
// (-DPEER_OPENBLAS, -DPEER_BLIS or -DPEER_DNNL): one binary per library, since
// OpenBLAS and BLIS both export cblas_sgemm. Built and run by run.sh.
//
//   gemm_<lib> SHAPES THREADS MODE [ms_per_rep] [reps]
//
// SHAPES: a file of "name N|T N|T m n k" lines (shapes.txt: vela's calls).
// MODE lib:   one call on the library's own THREADS threads.
// MODE split: vela's cut (src/cpu/blas.cpp): THREADS column pieces of c, each a
//             one-thread library call; the caller takes piece 0, spinning workers
//             claim the others, and the caller takes any piece still unclaimed
//             (vela's pool does the same; it also puts idle workers to sleep).
// For every shape: one line "gemm LIB THREADS MODE SHAPE gflops_wall gflops_cpu",
// each the median of `reps` timings of back-to-back calls lasting >= ms_per_rep.
// cpu = process cpu time (every thread, CLOCK_PROCESS_CPUTIME_ID).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#if defined(PEER_OPENBLAS)
extern "C" {
enum { ColMajor = 102, NoTrans = 111, Trans = 112 };
void cblas_sgemm(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
void openblas_set_num_threads(int);
char* openblas_get_corename();
char* openblas_get_config();
}
static const char* kLib = "openblas";
static void set_threads(int n) { openblas_set_num_threads(n); }
static std::string kernels() { return std::string(openblas_get_corename()) + " (" + openblas_get_config() + ")"; }
#elif defined(PEER_BLIS)
#include <cstdint>
extern "C" {
enum { ColMajor = 102, NoTrans = 111, Trans = 112 };
void cblas_sgemm(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
void bli_thread_set_num_threads(int64_t);
int bli_arch_query_id();
const char* bli_arch_string(int);
const char* bli_info_get_version_str();
}
static const char* kLib = "blis";
static void set_threads(int n) { bli_thread_set_num_threads(n); }
static std::string kernels() {
    return std::string(bli_arch_string(bli_arch_query_id())) + " (BLIS " + bli_info_get_version_str() + ")";
}
#elif defined(PEER_DNNL)
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
enum { ColMajor = 102, NoTrans = 111, Trans = 112 };
static const char* kLib = "dnnl";
static void set_threads(int n) { omp_set_num_threads(n); }
#include "dnnl_isa.hpp"
static std::string kernels() { return dnnl_isa_line() + ", dnnl_sgemm"; }
// dnnl_sgemm is row-major: column-major C = op(A)·op(B) is row-major Cᵀ = op(B)ᵀ·op(A)ᵀ.
static void cblas_sgemm(int, int ta, int tb, int m, int n, int k, float alpha, const float* a, int lda,
                        const float* b, int ldb, float beta, float* c, int ldc) {
    dnnl_sgemm(tb == Trans ? 'T' : 'N', ta == Trans ? 'T' : 'N', n, m, k, alpha, b, ldb, a, lda, beta, c, ldc);
}
#else
#error "define PEER_OPENBLAS, PEER_BLIS or PEER_DNNL"
#endif

#include "timing.hpp"

namespace {

// One line of shapes.txt: c (m×n) = op(a)·op(b), column-major.
struct Shape {
    std::string name;
    int ta, tb, m, n, k;
};

std::vector<Shape> read_shapes(const char* path) {
    std::vector<Shape> out;
    std::ifstream in(path);
    if (!in) {
        std::fprintf(stderr, "gemm_bench: cannot read %s\n", path);
        std::exit(2);
    }
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream f(line);
        Shape s;
        std::string ta, tb;
        if (!(f >> s.name >> ta >> tb >> s.m >> s.n >> s.k) || s.m < 1 || s.n < 1 || s.k < 1) {
            std::fprintf(stderr, "gemm_bench: %s: bad line '%s' (name N|T N|T m n k)\n", path, line.c_str());
            std::exit(2);
        }
        s.ta = ta == "T" ? Trans : NoTrans, s.tb = tb == "T" ? Trans : NoTrans;
        out.push_back(s);
    }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: %s SHAPES THREADS lib|split [ms_per_rep=60] [reps=5]\n", argv[0]);
        return 2;
    }
    const std::vector<Shape> shapes = read_shapes(argv[1]);
    const int threads = std::atoi(argv[2]);
    const std::string mode = argv[3];
    const double ms = argc > 4 ? std::atof(argv[4]) : 60;
    const int reps = argc > 5 ? std::atoi(argv[5]) : 5;
    if (threads < 1 || (mode != "lib" && mode != "split")) {
        std::fprintf(stderr, "%s: THREADS >= 1 and MODE lib or split\n", argv[0]);
        return 2;
    }
    set_threads(mode == "lib" ? threads : 1);
    std::printf("kernels %s %s\n", kLib, kernels().c_str());

    // Split mode's workers spin for a job, then claim its pieces as the caller
    // does (vela's pool: a descheduled worker's piece is taken by the caller).
    std::vector<std::thread> pool;
    std::atomic<long> gen{0};
    std::atomic<int> claim{0}, finished{0};
    std::atomic<bool> quit{false};
    std::function<void(int)> piece;
    auto work = [&] {  // claims and runs pieces of the current job until none is left
        for (int p; (p = claim.fetch_add(1, std::memory_order_acq_rel)) < threads;) {
            piece(p);
            finished.fetch_add(1, std::memory_order_acq_rel);
        }
    };
    if (mode == "split")
        for (int t = 1; t < threads; ++t)
            pool.emplace_back([&] {
                set_threads(1);
                long seen = 0;
                for (;;) {
                    long g;
                    while ((g = gen.load(std::memory_order_acquire)) == seen && !quit.load()) __builtin_ia32_pause();
                    if (quit.load()) return;
                    seen = g;
                    work();
                }
            });

    for (const Shape& s : shapes) {
        const int lda = s.ta == Trans ? s.k : s.m, ldb = s.tb == Trans ? s.n : s.k, ldc = s.m;
        std::vector<float> a(size_t(s.m) * s.k), b(size_t(s.k) * s.n), c(size_t(s.m) * s.n);
        for (size_t i = 0; i < a.size(); ++i) a[i] = float((i * 7919) % 1000) / 1000.f - 0.5f;
        for (size_t i = 0; i < b.size(); ++i) b[i] = float((i * 104729) % 1000) / 1000.f - 0.5f;
        // vela's piece_step(n, parts, 8): column pieces starting at multiples of 8
        const int step = ((s.n + threads - 1) / threads + 7) / 8 * 8;
        auto gemm_cols = [&](int c0, int c1) {
            if (c1 <= c0) return;
            const float* bp = b.data() + (s.tb == Trans ? size_t(c0) : size_t(c0) * ldb);
            cblas_sgemm(ColMajor, s.ta, s.tb, s.m, c1 - c0, s.k, 1.f, a.data(), lda, bp, ldb, 0.f,
                        c.data() + size_t(c0) * ldc, ldc);
        };
        piece = [&](int t) { gemm_cols(t * step, std::min(s.n, (t + 1) * step)); };
        auto call = [&] {
            if (mode == "lib" || threads == 1) return gemm_cols(0, s.n);
            // the caller takes piece 0 before publishing (as vela's pool), then any left
            finished.store(0, std::memory_order_relaxed);
            claim.store(1, std::memory_order_release);
            gen.fetch_add(1, std::memory_order_acq_rel);
            piece(0);
            finished.fetch_add(1, std::memory_order_acq_rel);
            work();
            while (finished.load(std::memory_order_acquire) < threads) __builtin_ia32_pause();
        };
        call();
        // check one column against a double reference (a wrong transpose or ld shows here)
        double worst = 0;
        for (int j : {0, s.n - 1})
            for (int i = 0; i < s.m; i += std::max(1, s.m / 64)) {
                double r = 0, mag = 0;
                for (int p = 0; p < s.k; ++p) {
                    const double x = s.ta == Trans ? a[size_t(i) * lda + p] : a[size_t(p) * lda + i];
                    const double y = s.tb == Trans ? b[size_t(p) * ldb + j] : b[size_t(j) * ldb + p];
                    r += x * y, mag += std::fabs(x * y);
                }
                worst = std::max(worst, std::fabs(c[size_t(j) * ldc + i] - r) / (mag + 1e-30));
            }
        if (worst > 1e-5) {
            std::printf("gemm %s %d %s %s WRONG (relative error %.2g)\n", kLib, threads, mode.c_str(), s.name.c_str(), worst);
            continue;
        }
        const double flops = 2.0 * s.m * s.n * s.k;
        const auto [wall, cpu] = time_it(call, flops, ms, reps);
        std::printf("gemm %s %d %s %s %.1f %.1f\n", kLib, threads, mode.c_str(), s.name.c_str(), wall, cpu);
        std::fflush(stdout);
    }
    quit = true;
    for (auto& t : pool) t.join();
    return 0;
}

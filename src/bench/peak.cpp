// native.fma_peak([threads [, seconds [, bits]]]) -> GFLOP/s, isa, GFLOP per processor second of
// one thread: the float32 FMA peak this process reaches, measured: `threads` threads (default vela's) each run
// independent chains of fused multiply-adds in the widest vectors the CPU and
// OS offer (cpu::cpu_features: AVX-512, else AVX2+FMA, else SSE multiply+add),
// or in vectors of at most `bits` (512, 256 or 128: issue 29 measures the
// software Vulkan drivers against the 256-bit peak, which is half the 512-bit
// one on a Zen 5), for about `seconds` (default 0.3). 2 flops per lane per FMA. The third result
// (the median thread's flops over its own processor time) is the steady one on
// a machine shared with other work. The bound
// scripts/bench/bound.lua divides a training rate by.
#include <immintrin.h>

#include <algorithm>

#include <atomic>
#include <ctime>
#include <thread>
#include <vector>

#include "bench/native.hpp"
#include "cpu/blas_core.hpp"
#include "cpu/cpu_device.hpp"
#include "lua/text.hpp"
#include "lua/vela.hpp"

namespace vela::lua {

namespace {

// 12 independent accumulators hide the FMA latency (4-5 cycles on 2 ports).
// One body per instruction set (a lambda would not inherit the target).
#define VELA_CHAINS(V, SET1, FMA)                                                        \
    V acc[12];                                                                         \
    const V mul = SET1(0.9999999f), add = SET1(1e-7f);                                 \
    for (int k = 0; k < 12; k++) acc[k] = SET1(1.0f + float(k));                       \
    for (int64_t i = 0; i < iters; i++)                                                \
        for (int k = 0; k < 12; k++) acc[k] = FMA(acc[k], mul, add);                   \
    for (int k = 1; k < 12; k++) acc[0] = FMA(acc[0], mul, acc[k]);
constexpr int kChains = 12;

__attribute__((target("avx512f"))) double run_avx512(int64_t iters) {
    VELA_CHAINS(__m512, _mm512_set1_ps, _mm512_fmadd_ps)
    float f[16];
    _mm512_storeu_ps(f, acc[0]);  // keeps the chains live
    return double(f[0] + f[15]);
}

__attribute__((target("avx2,fma"))) double run_avx2(int64_t iters) {
    VELA_CHAINS(__m256, _mm256_set1_ps, _mm256_fmadd_ps)
    float f[8];
    _mm256_storeu_ps(f, acc[0]);
    return double(f[0] + f[7]);
}

inline __m128 mul_add(__m128 a, __m128 b, __m128 c) { return _mm_add_ps(_mm_mul_ps(a, b), c); }
double run_sse(int64_t iters) {  // a multiply and an add: 2 flops, as an FMA's
    VELA_CHAINS(__m128, _mm_set1_ps, mul_add)
    return double(_mm_cvtss_f32(acc[0]));
}
#undef VELA_CHAINS

double thread_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

}  // namespace

int native_fma_peak(lua_State* L) {
    const lua_Integer threads = luaL_optinteger(L, 1, cpu::threads());
    luaL_argcheck(L, threads >= 1 && threads <= 1024, 1, "threads must be 1..1024");
    const double seconds = luaL_optnumber(L, 2, 0.3);
    luaL_argcheck(L, seconds > 0 && seconds <= 60, 2, "seconds must be in (0, 60]");
    const lua_Integer bits = luaL_optinteger(L, 3, 512);
    luaL_argcheck(L, bits == 512 || bits == 256 || bits == 128, 3, "bits must be 512, 256 or 128");
    const cpu::CpuFeatures f = cpu::cpu_features();
    int lanes = 4;
    const char* isa = "SSE (multiply + add)";
    double (*run)(int64_t) = run_sse;
    if (f.avx512 && bits >= 512) run = run_avx512, lanes = 16, isa = "AVX-512 FMA";
    else if (f.avx2 && f.fma && bits >= 256) run = run_avx2, lanes = 8, isa = "AVX2 FMA";
    // Calibrate one thread to ~20 ms, then every thread runs the scaled count at once.
    int64_t iters = 1 << 16;
    double t = 0;
    for (;;) {
        const double t0 = now();
        volatile double sink = run(iters);
        (void)sink;
        t = now() - t0;
        if (t > 0.02 || iters > (int64_t(1) << 40)) break;
        iters *= 4;
    }
    iters = std::max<int64_t>(iters, int64_t(double(iters) * seconds / t));
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> pool;
    std::vector<double> busy(size_t(threads), 0.0);  // each thread's processor seconds
    for (lua_Integer k = 0; k < threads; k++)
        pool.emplace_back([&, k] {
            ready.fetch_add(1);
            while (!go.load()) std::this_thread::yield();
            const double c0 = thread_seconds();
            volatile double sink = run(iters);
            (void)sink;
            busy[size_t(k)] = thread_seconds() - c0;
        });
    while (ready.load() < threads) std::this_thread::yield();
    const double t0 = now();
    go.store(true);
    for (auto& th : pool) th.join();
    const double elapsed = now() - t0;
    const double flops = double(iters) * kChains * lanes * 2;  // per thread
    std::sort(busy.begin(), busy.end());
    lua_pushnumber(L, double(threads) * flops / elapsed / 1e9);
    lua_pushstring(L, isa);
    lua_pushnumber(L, flops / busy[busy.size() / 2] / 1e9);
    return 3;
}

}  // namespace vela::lua

// Timing shared by gemm_bench.cpp and conv_dnnl.cpp.
#pragma once
#include <algorithm>
#include <ctime>
#include <functional>
#include <utility>
#include <vector>

inline double now(clockid_t id) {
    timespec t;
    clock_gettime(id, &t);
    return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

// Median GFLOP/s (wall, per cpu-second of the whole process) over `reps` timings of
// back-to-back calls of f lasting >= ms each (the count from one timed call after a warm-up).
inline std::pair<double, double> time_it(const std::function<void()>& f, double flops, double ms, int reps) {
    f();
    const double t0 = now(CLOCK_MONOTONIC);
    f();
    const int calls = std::max(1, int(ms / 1e3 / std::max(now(CLOCK_MONOTONIC) - t0, 1e-6)));
    std::vector<double> wall, cpu;
    for (int r = 0; r < reps; ++r) {
        const double w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
        for (int i = 0; i < calls; ++i) f();
        const double c1 = now(CLOCK_PROCESS_CPUTIME_ID), w1 = now(CLOCK_MONOTONIC);
        wall.push_back(flops * calls / (w1 - w0) / 1e9);
        cpu.push_back(flops * calls / (c1 - c0) / 1e9);
    }
    std::sort(wall.begin(), wall.end());
    std::sort(cpu.begin(), cpu.end());
    return {wall[reps / 2], cpu[reps / 2]};
}

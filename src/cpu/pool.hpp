// A small persistent thread pool for the CPU device's loops and products (the
// only one: OpenBLAS runs on one thread, called from each). Work is a
// range [0, n) cut into chunks; the calling thread takes chunks too, so a pool
// of t threads has t − 1 workers. Jobs below a size threshold run inline:
// waking a worker costs microseconds, more than a small kernel.
#pragma once
#include <cstdint>

namespace vela::cpu {

using RangeFn = void (*)(void* ctx, int64_t begin, int64_t end);

void pool_resize(int threads);  // total threads, ≥ 1, the caller included
int pool_threads();
// Runs fn over [0, n) in chunks of at least `grain` items.
void pool_run(int64_t n, int64_t grain, RangeFn fn, void* ctx);

// The length of each of `parts` pieces of [0, n) whose starts are multiples of
// `align` (blas.cpp cuts a product's columns so; gather_cols cuts a batch the
// same way, so that each thread then multiplies the columns it gathered).
inline int64_t piece_step(int64_t n, int64_t parts, int64_t align) {
    return ((n + parts - 1) / parts + align - 1) / align * align;
}

// parallel_for(n, grain, [&](int64_t b, int64_t e) { ... }) without allocation.
template <class F>
void parallel_for(int64_t n, int64_t grain, F&& f) {
    if (n <= 0) return;
    if (n <= grain || pool_threads() == 1) {
        f(int64_t(0), n);
        return;
    }
    pool_run(n, grain, [](void* ctx, int64_t b, int64_t e) { (*static_cast<F*>(ctx))(b, e); }, &f);
}

}  // namespace vela::cpu

// The thread pool behind parallel_for, and the only pool of the process:
// OpenBLAS runs on one thread and the products are cut across this pool
// (blas.cpp), so two pools never wake, spin and yield against each other.
//
// One job at a time. A job is published as one 64-bit word `next` = job tag
// (24 bits) | chunk count (20 bits) | next chunk (20 bits); a thread claims a
// chunk with a compare-and-swap on that word, so a claim succeeds only while
// the job still has chunks, i.e. while the caller is still waiting for it and
// the job's fields are stable. Whoever claimed a chunk reads the fields after
// the claim, runs it and counts it in `finished`; the caller returns when every
// chunk is counted. A worker that sleeps through a job cannot touch it.
//
// Waking: a worker spins (pause) for kSpin (50 µs) after its last chunk, since the next
// kernel of a training step follows within microseconds, then sleeps on a futex
// (std::atomic::wait). The caller only makes the futex call when a worker sleeps.
#include "cpu/pool.hpp"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace vela::cpu {

namespace {

using Clock = std::chrono::steady_clock;

// How long an idle worker spins before it sleeps. A training step's kernels
// come tens of microseconds apart; waking a sleeping thread costs about as much.
// 50 µs: the MLP's gaps are mostly shorter (it sleeps as often as with 200),
// and in the CNN's step the ~6 gaps a step longer than 200 µs (Lua between
// layers, the serial parts) cost 50 µs of spinning each instead of 200: the
// worker's spin per step 1.5 → 0.35 ms of a ~56 ms step (docs/results.md,
// helper cnnwg).
constexpr auto kSpin = std::chrono::microseconds(50);

constexpr int kIdxBits = 20;
constexpr uint64_t kIdxMask = (uint64_t(1) << kIdxBits) - 1;
constexpr int64_t kMaxChunks = int64_t(kIdxMask);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

inline uint64_t pack(uint64_t tag, uint64_t nchunks, uint64_t idx) {
    return (tag << (2 * kIdxBits)) | (nchunks << kIdxBits) | idx;
}

struct Pool {
    std::vector<std::thread> workers;
    std::mutex job_mutex;  // one job at a time (a second host thread, or a nested loop, runs inline)
    int threads = 1;

    // The job: written by the caller before it publishes `next`, read by a thread after it claims a chunk.
    RangeFn fn = nullptr;
    void* ctx = nullptr;
    int64_t n = 0, chunk = 1;
    uint64_t tag = 0;

    std::atomic<uint64_t> next{0};
    std::atomic<int64_t> finished{0};
    std::atomic<uint32_t> wake_seq{0};  // bumped on every job; sleeping workers wait on it
    std::atomic<int> sleepers{0};
    std::atomic<bool> stop{false};

    // Claims and runs chunks of the job in `next` until none is left; returns how many it ran.
    void work() {
        for (;;) {
            uint64_t v = next.load(std::memory_order_acquire);
            uint64_t nchunks = (v >> kIdxBits) & kIdxMask, idx = v & kIdxMask;
            if (idx >= nchunks) return;
            if (!next.compare_exchange_weak(v, v + 1, std::memory_order_acq_rel, std::memory_order_relaxed)) continue;
            int64_t b = int64_t(idx) * chunk, e = std::min(n, b + chunk);
            fn(ctx, b, e);
            finished.fetch_add(1, std::memory_order_acq_rel);
        }
    }

    bool has_work() const {
        uint64_t v = next.load(std::memory_order_relaxed);
        return (v & kIdxMask) < ((v >> kIdxBits) & kIdxMask);
    }

    void worker_loop() {
        while (!stop.load(std::memory_order_relaxed)) {
            work();
            // Spin a while for the next job, then sleep until one is published.
            auto t0 = Clock::now();
            for (int i = 0; !has_work() && !stop.load(std::memory_order_relaxed); i++) {
                cpu_relax();
                if ((i & 63) == 63 && Clock::now() - t0 > kSpin) {
                    uint32_t s = wake_seq.load();
                    sleepers.fetch_add(1);
                    if (!has_work() && !stop.load()) wake_seq.wait(s);
                    sleepers.fetch_sub(1);
                    t0 = Clock::now();
                }
            }
        }
    }

    void stop_workers() {
        stop.store(true);
        wake_seq.fetch_add(1);
        wake_seq.notify_all();
        for (auto& w : workers) w.join();
        workers.clear();
        stop.store(false);
    }

    void resize(int t) {
        std::lock_guard<std::mutex> jl(job_mutex);
        stop_workers();
        threads = std::max(1, t);
        for (int i = 1; i < threads; i++) workers.emplace_back([this] { worker_loop(); });
    }

    void run(int64_t total, int64_t grain, RangeFn f, void* c) {
        // A few chunks per thread balance uneven speeds without much overhead.
        int64_t target = int64_t(threads) * 4;
        int64_t ch = std::max(grain, (total + target - 1) / target);
        int64_t nchunks = (total + ch - 1) / ch;
        if (nchunks > kMaxChunks) {
            ch = (total + kMaxChunks - 1) / kMaxChunks;
            nchunks = (total + ch - 1) / ch;
        }
        fn = f;
        ctx = c;
        n = total;
        chunk = ch;
        tag = (tag + 1) & ((uint64_t(1) << (64 - 2 * kIdxBits)) - 1);
        finished.store(0, std::memory_order_relaxed);
        // The caller keeps chunk 0 for itself: it is claimed before the job is
        // published, so a spinning worker cannot take it first. A product cut
        // in one piece per thread then has the same piece on the same thread
        // in every step, and the data a piece writes (a weight's columns, its
        // momentum) stays in that core's caches for the next step.
        next.store(pack(tag, uint64_t(nchunks), 1));  // seq_cst: ordered before the sleepers check
        wake_seq.fetch_add(1);
        if (sleepers.load() > 0) wake_seq.notify_all();
        fn(ctx, 0, std::min(n, ch));
        finished.fetch_add(1, std::memory_order_acq_rel);
        work();
        // Only chunks a worker claimed and is running are left: wait for them.
        for (int i = 0; finished.load(std::memory_order_acquire) != nchunks; i++) {
            cpu_relax();
            if (i > 4096) sched_yield();  // that worker lost its core: let it have ours
        }
    }

    ~Pool() {
        std::lock_guard<std::mutex> jl(job_mutex);
        stop_workers();
    }
};

Pool& pool() {
    static Pool p;
    return p;
}

}  // namespace

void pool_resize(int threads) { pool().resize(threads); }
int pool_threads() { return pool().threads; }

void pool_run(int64_t n, int64_t grain, RangeFn fn, void* ctx) {
    Pool& p = pool();
    std::unique_lock<std::mutex> jl(p.job_mutex, std::try_to_lock);
    if (!jl.owns_lock() || p.threads == 1) {
        fn(ctx, 0, n);
        return;
    }
    p.run(n, grain, fn, ctx);
}

}  // namespace vela::cpu

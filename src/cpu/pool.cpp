// The thread pool behind parallel_for. One job at a time: a job is published
// under the mutex with a new generation number, workers and the caller claim
// chunks with an atomic counter, and the caller waits until every chunk is done
// and every worker has left the job (so the next job may rewrite its fields).
#include "cpu/pool.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace vela::cpu {

namespace {

struct Pool {
    std::mutex m;
    std::condition_variable wake, done;
    std::vector<std::thread> workers;
    std::mutex job_mutex;  // one job at a time (a second host thread runs inline)
    uint64_t generation = 0;
    bool stop = false;

    RangeFn fn = nullptr;
    void* ctx = nullptr;
    int64_t n = 0, chunk = 1, nchunks = 0;
    std::atomic<int64_t> next{0};
    std::atomic<int64_t> finished{0};

    int threads = 1;
    int active = 0;  // workers inside work(); job fields change only when 0

    void work() {
        for (;;) {
            int64_t c = next.fetch_add(1, std::memory_order_relaxed);
            if (c >= nchunks) return;
            int64_t b = c * chunk, e = std::min(n, b + chunk);
            fn(ctx, b, e);
            if (finished.fetch_add(1, std::memory_order_acq_rel) + 1 == nchunks) {
                std::lock_guard<std::mutex> lock(m);
                done.notify_all();
            }
        }
    }

    void worker_loop() {
        uint64_t seen = 0;
        for (;;) {
            {
                std::unique_lock<std::mutex> lock(m);
                wake.wait(lock, [&] { return stop || generation != seen; });
                if (stop) return;
                seen = generation;
                active++;
            }
            work();
            std::lock_guard<std::mutex> lock(m);
            if (--active == 0) done.notify_all();
        }
    }

    void resize(int t) {
        std::lock_guard<std::mutex> jl(job_mutex);
        {
            std::lock_guard<std::mutex> lock(m);
            stop = true;
        }
        wake.notify_all();
        for (auto& w : workers) w.join();
        workers.clear();
        stop = false;
        threads = std::max(1, t);
        for (int i = 1; i < threads; i++) workers.emplace_back([this] { worker_loop(); });
    }

    ~Pool() {
        {
            std::lock_guard<std::mutex> lock(m);
            stop = true;
        }
        wake.notify_all();
        for (auto& w : workers) w.join();
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
    // A few chunks per thread balance uneven speeds without much overhead.
    int64_t target = int64_t(p.threads) * 4;
    int64_t chunk = std::max(grain, (n + target - 1) / target);
    {
        std::unique_lock<std::mutex> lock(p.m);
        p.done.wait(lock, [&] { return p.active == 0; });  // a late worker leaves the last job first
        p.fn = fn;
        p.ctx = ctx;
        p.n = n;
        p.chunk = chunk;
        p.nchunks = (n + chunk - 1) / chunk;
        p.next.store(0, std::memory_order_relaxed);
        p.finished.store(0, std::memory_order_relaxed);
        p.generation++;
    }
    p.wake.notify_all();
    p.work();
    std::unique_lock<std::mutex> lock(p.m);
    p.done.wait(lock, [&] { return p.finished.load(std::memory_order_acquire) == p.nchunks && p.active == 0; });
}

}  // namespace vela::cpu

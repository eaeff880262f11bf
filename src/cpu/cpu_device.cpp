// CpuDevice's storage, transfers, statistics and run_user (its other kernels
// are in the topic files: cpu/cpu_device.hpp lists them). What the machine offers (memory available, model name, OpenBLAS build) is
// read in machine.cpp.
#include "cpu/cpu_device.hpp"

#include <cblas.h>
#include <sys/mman.h>

#include <cerrno>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/user_kernel.hpp"
#include "cpu/blas_core.hpp"
#include "cpu/cpu_kernels.hpp"
#include "cpu/isa.hpp"

namespace vela::cpu {
void run_map(const MapProgram& prog, const UserCall& call);  // user_map.cpp
}

namespace vela::cpu {

namespace {

// How run_user runs general kernels (set at registration; null: the clear error).
std::atomic<HostRunner>& host_runner() {
    static std::atomic<HostRunner> runner{nullptr};
    return runner;
}

// Buffers of at least this many bytes are mapped pages committed up front
// (see commit()) and ask for huge pages (map_pages); smaller ones come from
// malloc, whose heap vela keeps (core/host_memory.hpp), so a new result of
// under 2 MiB reuses pages already touched. From 1 MiB, as before 2026-11-28,
// a new 1 MiB result cost 2 ms of first touches on a VM whose host maps each
// 4 KiB page at its first use (docs/results.md, "IDX files read into huge
// pages").
constexpr size_t kMapped = size_t(2) << 20;

class CpuBuffer final : public Buffer {
public:
    CpuBuffer(Device* dev, DType dtype, size_t count, void* data, size_t mapped, std::atomic<uint64_t>& used)
        : Buffer(dev, dtype, count), data_(data), mapped_(mapped), used_(used) {
        used_ += bytes();
    }
    ~CpuBuffer() override { release(); }
    void* data() const { return data_; }

protected:
    void free_storage() override {
        if (mapped_)
            munmap(data_, mapped_);
        else
            std::free(data_);
        data_ = nullptr;
        used_ -= bytes();
    }

private:
    void* data_;
    size_t mapped_;  // the mapping's length; 0 for malloc'd memory
    std::atomic<uint64_t>& used_;
};

// "N MiB available (source)" for an error message.
std::string limits_note(uint64_t avail, const char* which) {
    return format("%.1f MiB available (%s)", double(avail) / double(1 << 20), which);
}

// Commits the pages of a fresh mapping now, so that exhaustion is an error
// here and not the OOM killer at the first touch later (overcommit lets an
// untouched mapping succeed on paper). MADV_POPULATE_WRITE (Linux 5.14) fails
// with ENOMEM instead of faulting; MAP_POPULATE would ignore the failure. On
// older kernels (EINVAL) the checks of available_memory() before allocating
// are the guard. Committed pages also count in MemAvailable and the cgroup,
// so the next allocation's check sees them: a loop of lazily faulted buffers
// would pass every check and be killed later.
bool commit(void* p, size_t len) {
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
    if (madvise(p, len, MADV_POPULATE_WRITE) == 0) return true;
    return errno == EINVAL;
}

// A mapping of len bytes (a multiple of 4 KiB, at least kMapped = 2 MiB); it
// starts at a 2 MiB boundary and asks for transparent huge pages (THP
// "madvise" mode, the Debian default, gives them only on request), as NumPy
// does for its arrays:
// a 16M-float add touches 48 MiB, 12,288 pages of 4 KiB, and the page walks of
// its TLB misses cost it 15-20% per cpu-second (docs/results.md, "Elementwise
// beside NumPy and PyTorch"). Its whole 2 MiB pages are huge, a tail past the
// last is not (nothing is rounded up). On a VM whose host maps each 4 KiB page
// at its first touch, a new 2 MiB result cost 2.2 ms in small pages and 0.4 ms
// in one huge page (docs/results.md, "IDX files read into huge pages").
// Refused advice changes nothing.
void* map_pages(size_t len) {
    constexpr size_t kHuge = size_t(2) << 20;
    const size_t over = len + kHuge - 4096;
    void* q = mmap(nullptr, over, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    // The alignment's slack refused (an address-space limit): the plain mapping, as before.
    if (q == MAP_FAILED) return mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    const uintptr_t at = (uintptr_t(q) + kHuge - 1) / kHuge * kHuge;
    if (at > uintptr_t(q)) munmap(q, at - uintptr_t(q));
    const uintptr_t end = uintptr_t(q) + over;
    if (end > at + len) munmap(reinterpret_cast<void*>(at + len), end - (at + len));
    madvise(reinterpret_cast<void*>(at), len, MADV_HUGEPAGE);
    return reinterpret_cast<void*>(at);
}

}  // namespace

// Large requests are checked against what is available now (not the
// machine's RAM), then mapped and committed; either step failing is an
// error and nothing is kept. Small ones come from malloc, whose failure is clean.
std::shared_ptr<Buffer> CpuDevice::alloc(DType dtype, size_t count) {
    size_t bytes = count * dtype_size(dtype);
    auto out_of_memory = [&](const std::string& why) {
        fail("out of memory on cpu: %zu %s elements (%.1f MiB) requested, %s; %.1f MiB in live matrices", count,
             dtype_name(dtype), double(bytes) / double(1 << 20), why.c_str(),
             double(used_.load()) / double(1 << 20));
    };
    if (bytes >= kMapped) {
        MemoryLimit limit = available_memory();
        if (bytes > limit.bytes) out_of_memory(limits_note(limit.bytes, limit.source));
        size_t len = (bytes + 4095) / 4096 * 4096;
        void* p = map_pages(len);
        if (p == MAP_FAILED) out_of_memory(format("mmap failed: %s", std::strerror(errno)));
        if (!commit(p, len)) {
            int e = errno;
            munmap(p, len);
            out_of_memory(format("committing its pages failed: %s", std::strerror(e)));
        }
        return std::make_shared<CpuBuffer>(this, dtype, count, p, len, used_);
    }
    void* p = nullptr;
    if (bytes > 0) {
        // 64-byte aligned (a cache line, an AVX-512 vector), size rounded up as aligned_alloc requires.
        p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
        if (!p) out_of_memory("malloc failed");
    }
    return std::make_shared<CpuBuffer>(this, dtype, count, p, 0, used_);
}

void CpuDevice::sync() { check_interrupt(); }

// Between dense column-major host data and a view of any layout.
void CpuDevice::transfer(const Matrix& m, void* host, bool to_device) {
    if (m.empty()) return;
    const size_t es = dtype_size(m.dtype());
    if (to_device) {
        ++uploads_, upload_bytes_ += uint64_t(m.size()) * es;
    } else {  // a read of results: on the cpu a wait of zero cost
        ++downloads_, download_bytes_ += uint64_t(m.size()) * es;
        ++waits_;
    }
    char* dev = static_cast<char*>(base(m));
    char* h = static_cast<char*>(host);
    auto move = [&](char* d, const char* s, size_t n) { std::memcpy(d, s, n); };
    if (m.contiguous()) {
        char* p = dev + m.offset * es;
        size_t n = size_t(m.size()) * es;
        to_device ? move(p, h, n) : move(h, p, n);
        return;
    }
    const int64_t rs = m.row_step();
    for (int64_t j = 0; j < m.cols; j++) {
        char* col = dev + m.index(0, j) * es;
        char* hc = h + size_t(j * m.rows) * es;
        if (rs == 1) {
            to_device ? move(col, hc, size_t(m.rows) * es) : move(hc, col, size_t(m.rows) * es);
            continue;
        }
        for (int64_t i = 0; i < m.rows; i++)
            to_device ? move(col + i * rs * es, hc + i * es, es) : move(hc + i * es, col + i * rs * es, es);
    }
}


DeviceStats CpuDevice::stats() const {
    DeviceStats s;
    s.dispatches = dispatches_;
    s.host_waits = waits_;
    s.uploads = uploads_, s.upload_bytes = upload_bytes_;
    s.downloads = downloads_, s.download_bytes = download_bytes_;
    return s;
}

MemoryInfo CpuDevice::memory() const {
    MemoryInfo m;
    m.used = m.reserved = used_.load();
    m.total = physical_memory();
    return m;
}

void CpuDevice::set_option(const std::string& name, int64_t value) {
    if (name != "threads") return Device::set_option(name, value);
    if (value < 1 || value > 1024) fail("threads: n is %lld (must be 1..1024)", (long long)value);
    set_threads(int(value));
}

int64_t CpuDevice::option(const std::string& name) const {
    if (name != "threads") return Device::option(name);
    return threads();
}


// Kernels written at the prompt: map expressions natively where
// core/map_expr.hpp can (user_map.cpp), else their SPIR-V through a software
// Vulkan driver, on these buffers' own memory: the runner received at registration
// (src/userk/host_runner.cpp, wired in by src/backends.cpp).
void CpuDevice::run_user(const UserCall& call) {
    Timed t(this, call.kernel->name);  // profile() names it like any kernel
    if (call.kernel->program) return cpu::run_map(*call.kernel->program, call);
    std::vector<void*> host;
    std::vector<size_t> bytes;
    for (const Matrix& m : call.mats) {
        host.push_back(static_cast<CpuBuffer*>(m.buf.get())->data());
        bytes.push_back(m.buf->bytes());
    }
    HostRunner run = host_runner().load();
    if (!run) fail_no_host_runner(call.kernel->name, "none was given to the cpu device at registration");
    run(call, host.data(), bytes.data());
}


namespace {

int default_threads() {
    unsigned n = std::thread::hardware_concurrency();
    return n == 0 ? 1 : int(n);
}

}  // namespace

void* base(const Matrix& m) { return static_cast<CpuBuffer*>(m.buf.get())->data(); }

// The pool starts with one thread per core, on first use of either the device
// or threads(). OpenBLAS stays on one thread: blas.cpp cuts the products across
// the pool, the one pool of the process (pool.cpp says why).
void init_threads() {
    // VELA_CPU_ISA naming loops this CPU cannot run: no device (isa.hpp).
    if (const std::string& why = isa_choice().error; !why.empty()) throw Error("cpu: " + why);
    static const bool done = [] {
        ensure_blas_core();  // before any BLAS call (blas_core.hpp)
        pool_resize(default_threads());
        openblas_set_num_threads(1);
        return true;
    }();
    (void)done;
}

void set_host_runner(HostRunner runner) { host_runner().store(runner); }

Device& device() {
    init_threads();
    static CpuDevice* d = new CpuDevice;  // never destroyed: buffers may outlive static destruction
    return *d;
}

void set_threads(int n) {
    if (n < 1 || n > 1024) fail("threads: n is %d (must be 1..1024)", n);
    init_threads();
    pool_resize(n);
}

int threads() {
    init_threads();
    return pool_threads();
}

}  // namespace vela::cpu

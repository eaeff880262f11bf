// The CPU device: storage in host memory, OpenBLAS (cblas) for levels 1–3,
// own threaded loops for the rest (src/cpu/*.cpp, one file per kernel group).
// Everything here is synchronous: flush() and sync() have nothing to wait for.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "core/device.hpp"
#include "core/host_memory.hpp"
#include "core/user_kernel.hpp"

namespace vela::cpu {

// CpuDevice: host-memory buffers and the kernels of core/kernels.def, each
// defined in the topic file of its group (blas.cpp, elementwise.cpp, fused.cpp,
// random.cpp, regularize.cpp, sequence.cpp, bmm.cpp, conv.cpp, pooling.cpp,
// optim.cpp; run_user and the storage in cpu_device.cpp). Kernels
// run at once on the calling thread (and the pool), so flush and sync are
// no-ops and every buffer can be freed the moment it is released.
class CpuDevice final : public Device {
public:
    std::string name() const override { return "cpu"; }
    std::shared_ptr<Buffer> alloc(DType dtype, size_t count) override;
    void upload(const Matrix& dst, const void* host) override { transfer(dst, const_cast<void*>(host), true); }
    void download(const Matrix& src, void* host) override { transfer(src, host, false); }
    void flush() override {}
    void sync() override;

#define VELA_KERNEL(ret, name, params, area, labels) ret name params override;
#include "core/kernels.def"
#undef VELA_KERNEL

    DeviceStats stats() const override;
    MemoryInfo memory() const override;
    void profile_begin() override {
        profile_.clear();
        profiling_ = true;
    }
    std::vector<KernelTime> profile_end() override {
        profiling_ = false;
        return std::move(profile_);
    }
    // "threads": of the pool and OpenBLAS, 1..1024.
    void set_option(const std::string& name, int64_t value) override;
    int64_t option(const std::string& name) const override;

private:
    // Counts every kernel; times it only while profiling (a branch otherwise),
    // named after the front end's call when it gave one (current_call()), else
    // after the kernel's label (kernels.def) or the name given.
    struct Timed {
        CpuDevice* d;
        const char* kernel;
        std::chrono::steady_clock::time_point start;
        Timed(CpuDevice* dev, Kernel k) : Timed(dev, kernel_label(k)) {}
        Timed(CpuDevice* dev, const char* k) : d(dev), kernel(k) {
            d->dispatches_++;
            if (d->profiling_) start = std::chrono::steady_clock::now();
        }
        ~Timed() {
            if (!d->profiling_ || d->profile_.size() >= kMaxProfile) return;
            double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
            const KernelCall& c = current_call();
            d->profile_.push_back({c.name ? c.name : kernel, ms, c.id});
        }
    };
    static constexpr size_t kMaxProfile = 1 << 20;

    // Between dense column-major host data and a view of any layout.
    void transfer(const Matrix& m, void* host, bool to_device);

    uint64_t dispatches_ = 0, waits_ = 0;
    uint64_t uploads_ = 0, upload_bytes_ = 0, downloads_ = 0, download_bytes_ = 0;
    std::atomic<uint64_t> used_{0};
    bool profiling_ = false;
    std::vector<KernelTime> profile_;
};

Device& device();  // the one CpuDevice, made on first use

// Threads used by both the own loops and OpenBLAS; 1 ≤ n ≤ 1024 (threads(n) in Lua).
void set_threads(int n);
int threads();

// For devices(): the processor's model name, the OpenBLAS build, RAM in bytes.
std::string description();
std::string blas_version();  // "0.3.21"
std::string blas_config();   // OpenBLAS's build line: version, kernel (Haswell, ...), threads
uint64_t physical_memory();

// What this process may still allocate: the least of MemAvailable, the
// headroom of its cgroup and each ancestor (v2 memory.max, else v1's
// memory.limit_in_bytes; VELA_CGROUP_DIR names a directory of such files
// instead, for tests) and RLIMIT_AS less the address space in use; `source`
// names the one that decided. register_backend() hands it to the core
// (core/host_memory.hpp), where the other layers read it.
using MemoryLimit = HostMemory;
MemoryLimit available_memory();

// Registers "cpu" with the device registry (src/cpu/backend.cpp). runner: how the cpu runs
// general user kernels (core/user_kernel.hpp; src/backends.cpp passes the software-driver
// runner); without one such a kernel fails with fail_no_host_runner's message.
void register_backend(HostRunner runner = nullptr);
void set_host_runner(HostRunner runner);

}  // namespace vela::cpu

namespace vela {
// The cpu device, through the registry: get_device("cpu").
Device& cpu_device();
}  // namespace vela

// CpuDevice: host-memory buffers and the kernel table of the CPU device.
// Kernels run at once on the calling thread (and the pool), so flush and
// sync are no-ops and every buffer can be freed the moment it is released.
// What the machine offers (memory available, model name, OpenBLAS build) is
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
#include "cpu/conv.hpp"
#include "cpu/cpu_kernels.hpp"

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
// (see commit()); smaller ones come from malloc.
constexpr size_t kMapped = size_t(1) << 20;

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

class CpuDevice final : public Device {
public:
    std::string name() const override { return "cpu"; }

    // Large requests are checked against what is available now (not the
    // machine's RAM), then mapped and committed; either step failing is an
    // error and nothing is kept. Small ones come from malloc, whose failure is clean.
    std::shared_ptr<Buffer> alloc(DType dtype, size_t count) override {
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
            void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
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

    void upload(const Matrix& dst, const void* host) override { transfer(dst, const_cast<void*>(host), true); }
    void download(const Matrix& src, void* host) override { transfer(src, host, false); }

    void flush() override {}
    void sync() override { check_interrupt(); }

    void mm(float alpha, const Matrix& a, const Matrix& b, float beta, const Matrix& c) override {
        Timed t(this, "mm");
        cpu::mm(alpha, a, b, beta, c);
    }
    void bmm(float alpha, const Matrix& a, int64_t sa, const Matrix& b, int64_t sb, float beta, const Matrix& c,
             int64_t sc, int64_t count) override {
        Timed t(this, "bmm");
        cpu::bmm(alpha, a, sa, b, sb, beta, c, sc, count);
    }
    void mv(float alpha, const Matrix& a, const Matrix& x, float beta, const Matrix& y) override {
        Timed t(this, "mv");
        cpu::mv(alpha, a, x, beta, y);
    }
    void rk(float alpha, const Matrix& x, const Matrix& y, const Matrix& a) override {
        Timed t(this, "rk");
        cpu::rk(alpha, x, y, a);
    }
    void axpby(float alpha, const Matrix& x, float beta, const Matrix& y) override {
        Timed t(this, beta == 1.0f ? "axpy" : "axpby");
        cpu::axpby(alpha, x, beta, y);
    }
    void scal(float alpha, const Matrix& x) override {
        Timed t(this, "scal");
        cpu::scal(alpha, x);
    }
    void copy(const Matrix& x, const Matrix& y) override {
        Timed t(this, "copy");
        cpu::copy(x, y);
    }
    void swap(const Matrix& x, const Matrix& y) override {
        Timed t(this, "swap");
        cpu::swap(x, y);
    }
    void fill(const Matrix& x, float v) override {
        Timed t(this, "fill");
        cpu::fill(x, v);
    }
    double reduce(Reduce op, const Matrix& x, const Matrix* y) override {
        Timed t(this, reduce_name(op));
        ++waits_;  // a number read by the host: a wait of zero cost
        return cpu::reduce(op, x, y);
    }
    int64_t imax(const Matrix& x) override {
        Timed t(this, "imax");
        ++waits_;
        return cpu::imax(x);
    }
    void unary(Unary op, const Matrix& x, const Matrix& y, const float* params) override {
        Timed t(this, unary_name(op));
        cpu::unary(op, x, y, params);
    }
    void binary(Binary op, const Matrix& a, const Matrix& b, const Matrix& c) override {
        Timed t(this, binary_name(op));
        cpu::binary(op, a, b, c);
    }
    void act_backward(Act act, const Matrix& da, const Matrix& x, const Matrix& delta) override {
        Timed t(this, act_backward_name(act));
        cpu::act_backward(act, da, x, delta);
    }
    void softmax(const Matrix& x, const Matrix& y) override {
        Timed t(this, "softmax");
        cpu::softmax(x, y);
    }
    void softmax_xent(const Matrix& z, const Matrix& labels, const Matrix& loss, float scale,
                      const Matrix& dz) override {
        Timed t(this, "softmax_xent");
        cpu::softmax_xent(z, labels, loss, scale, dz);
    }
    void arg_extreme(const Matrix& x, const Matrix& idx, Extreme e) override {
        Timed t(this, e == Extreme::smallest ? "argmin" : "argmax");
        cpu::arg_extreme(x, idx, e);
    }
    void gather_cols(const Matrix& src, const Matrix& idx, const Matrix& dst, float scale) override {
        Timed t(this, "gather_cols");
        cpu::gather_cols(src, idx, dst, scale);
    }
    void add_bias(const Matrix& b, const Matrix& y) override {
        Timed t(this, "add_bias");
        cpu::add_bias(b, y);
    }
    void dense(const Matrix& w, const Matrix& x, const Matrix& b, Act act, const Matrix& y) override {
        Timed t(this, "dense");
        cpu::dense(w, x, b, act, y);
    }
    void random(Dist dist, uint64_t seed, const Matrix& x) override {
        Timed t(this, dist == Dist::normal ? "randn" : "rand");
        cpu::random(dist, seed, x);
    }
    void dropout(uint64_t seed, uint64_t step, float p, float scale, const Matrix& x, const Matrix& mask,
                 const Matrix& y) override {
        Timed t(this, "dropout");
        cpu::dropout(seed, step, p, scale, x, mask, y);
    }
    void batchnorm_stats(const Matrix& x, int64_t group, const Matrix& mean, const Matrix& var) override {
        Timed t(this, "batchnorm_stats");
        cpu::batchnorm_stats(x, group, mean, var);
    }
    void batchnorm(const Matrix& x, const Matrix& mean, const Matrix& var, const Matrix& gamma, const Matrix& beta,
                   float eps, int64_t group, const Matrix& y) override {
        Timed t(this, "batchnorm");
        cpu::batchnorm(x, mean, var, gamma, beta, eps, group, y);
    }
    void batchnorm_backward(const Matrix& dy, const Matrix& x, const Matrix& mean, const Matrix& var,
                            const Matrix& gamma, float eps, int64_t group, const Matrix& dgamma, const Matrix& dbeta,
                            const Matrix& dx) override {
        Timed t(this, "batchnorm_backward");
        cpu::batchnorm_backward(dy, x, mean, var, gamma, eps, group, dgamma, dbeta, dx);
    }
    void layernorm_forward(const Matrix& x, const Matrix& gamma, const Matrix& beta, float eps, const Matrix& mean,
                           const Matrix& rstd, const Matrix& y) override {
        Timed t(this, "layernorm");
        cpu::layernorm_forward(x, gamma, beta, eps, mean, rstd, y);
    }
    void layernorm_backward(const Matrix& dy, const Matrix& x, const Matrix& mean, const Matrix& rstd,
                            const Matrix& gamma, const Matrix& dgamma, const Matrix& dbeta, const Matrix& dx) override {
        Timed t(this, "layernorm_backward");
        cpu::layernorm_backward(dy, x, mean, rstd, gamma, dgamma, dbeta, dx);
    }
    void embedding_backward(const Matrix& dy, const Matrix& idx, const Matrix& dE) override {
        Timed t(this, "embedding_backward");
        cpu::embedding_backward(dy, idx, dE);
    }
    void softmax_causal(const Matrix& x, const Matrix& y) override {
        Timed t(this, "softmax_causal");
        cpu::softmax_causal(x, y);
    }
    void softmax_causal_backward(const Matrix& y, const Matrix& dy, const Matrix& dx) override {
        Timed t(this, "softmax_causal_backward");
        cpu::softmax_causal_backward(y, dy, dx);
    }
    void random_shift(uint64_t seed, uint64_t step, int64_t shift, int64_t height, int64_t width, const Matrix& x,
                      const Matrix& y) override {
        Timed t(this, "random_shift");
        cpu::random_shift(seed, step, shift, height, width, x, y);
    }
    void optim_step(Optim kind, const Matrix& w, const Matrix& g, const Matrix& s1, const Matrix& s2,
                    const Matrix& s3, const float* p) override {
        Timed t(this, optim_name(kind));
        cpu::optim_step(kind, w, g, s1, s2, s3, p);
    }

    // Convolution and pooling (cpu/conv.cpp, cpu/pooling.cpp).
    void im2col(const ConvGeom& g, const Matrix& x, const Matrix& cols) override {
        Timed t(this, "im2col");
        cpu::im2col(g, x, cols);
    }
    void col2im(const ConvGeom& g, const Matrix& cols, const Matrix& x) override {
        Timed t(this, "col2im");
        cpu::col2im(g, cols, x);
    }
    void maxpool(const ConvGeom& g, const Matrix& x, const Matrix& y, const Matrix& idx) override {
        Timed t(this, "maxpool");
        cpu::maxpool(g, x, y, idx);
    }
    void maxpool_backward(const ConvGeom& g, const Matrix& dy, const Matrix& idx, const Matrix& dx) override {
        Timed t(this, "maxpool_backward");
        cpu::maxpool_backward(g, dy, idx, dx);
    }
    void avgpool(const ConvGeom& g, const Matrix& x, const Matrix& y) override {
        Timed t(this, "avgpool");
        cpu::avgpool(g, x, y);
    }
    void avgpool_backward(const ConvGeom& g, const Matrix& dy, const Matrix& dx) override {
        Timed t(this, "avgpool_backward");
        cpu::avgpool_backward(g, dy, dx);
    }
    void to_images(const Matrix& u, const Matrix& b, const Matrix& y) override {
        Timed t(this, "to_images");
        cpu::to_images(u, b, y);
    }
    void from_images(const Matrix& y, const Matrix& u) override {
        Timed t(this, "from_images");
        cpu::from_images(y, u);
    }

    // Kernels written at the prompt: map expressions natively where
    // core/map_expr.hpp can (user_map.cpp), else their SPIR-V through a software
    // Vulkan driver, on these buffers' own memory: the runner received at registration
    // (src/userk/host_runner.cpp, wired in by src/backends.cpp).
    void run_user(const UserCall& call) override {
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

    DeviceStats stats() const override {
        DeviceStats s;
        s.dispatches = dispatches_;
        s.host_waits = waits_;
        s.uploads = uploads_, s.upload_bytes = upload_bytes_;
        s.downloads = downloads_, s.download_bytes = download_bytes_;
        return s;
    }
    MemoryInfo memory() const override {
        MemoryInfo m;
        m.used = m.reserved = used_.load();
        m.total = physical_memory();
        return m;
    }
    void profile_begin() override {
        profile_.clear();
        profiling_ = true;
    }
    std::vector<KernelTime> profile_end() override {
        profiling_ = false;
        return std::move(profile_);
    }

    // "threads": of the pool and OpenBLAS, 1..1024.
    void set_option(const std::string& name, int64_t value) override {
        if (name != "threads") return Device::set_option(name, value);
        if (value < 1 || value > 1024) fail("threads: n is %lld (must be 1..1024)", (long long)value);
        set_threads(int(value));
    }
    int64_t option(const std::string& name) const override {
        if (name != "threads") return Device::option(name);
        return threads();
    }

private:
    // Counts every kernel; times it only while profiling (a branch otherwise),
    // named after the front end's call when it gave one (current_call()).
    struct Timed {
        CpuDevice* d;
        const char* kernel;
        std::chrono::steady_clock::time_point start;
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
    void transfer(const Matrix& m, void* host, bool to_device) {
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

    uint64_t dispatches_ = 0, waits_ = 0;
    uint64_t uploads_ = 0, upload_bytes_ = 0, downloads_ = 0, download_bytes_ = 0;
    std::atomic<uint64_t> used_{0};
    bool profiling_ = false;
    std::vector<KernelTime> profile_;
};

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

#include "vulkan/device.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/error.hpp"

namespace vela::vk {

namespace {

// Host data is dense column-major in the view's logical shape; the view may be strided or transposed.
void host_to_view(const Matrix& m, uint8_t* base, const uint8_t* host) {
    size_t es = dtype_size(m.dtype());
    if (m.contiguous()) {
        std::memcpy(base + size_t(m.offset) * es, host, size_t(m.size()) * es);
        return;
    }
    for (int64_t j = 0; j < m.cols; ++j) {
        if (m.row_step() == 1) {
            std::memcpy(base + size_t(m.index(0, j)) * es, host + size_t(j * m.rows) * es, size_t(m.rows) * es);
            continue;
        }
        for (int64_t i = 0; i < m.rows; ++i)
            std::memcpy(base + size_t(m.index(i, j)) * es, host + size_t(i + j * m.rows) * es, es);
    }
}

void view_to_host(const Matrix& m, const uint8_t* base, uint8_t* host) {
    size_t es = dtype_size(m.dtype());
    if (m.contiguous()) {
        std::memcpy(host, base + size_t(m.offset) * es, size_t(m.size()) * es);
        return;
    }
    for (int64_t j = 0; j < m.cols; ++j) {
        if (m.row_step() == 1) {
            std::memcpy(host + size_t(j * m.rows) * es, base + size_t(m.index(0, j)) * es, size_t(m.rows) * es);
            continue;
        }
        for (int64_t i = 0; i < m.rows; ++i)
            std::memcpy(host + size_t(i + j * m.rows) * es, base + size_t(m.index(i, j)) * es, es);
    }
}

// Largest power of two <= v.
uint32_t floor_pow2(uint32_t v) {
    uint32_t p = 1;
    while (p * 2 <= v) p *= 2;
    return p;
}

}  // namespace

VulkanDevice::VulkanDevice(const PhysicalInfo& phys, std::string name, bool force_staging)
    : phys_(phys),
      name_(std::move(name)),
      gpu_(std::make_unique<Gpu>(phys)),
      memory_(*gpu_, name_, force_staging),
      pipelines_(*gpu_),
      stream_(*gpu_, pipelines_, memory_, phys.caps, name_) {
    memory_.set_reclaim([this] { return stream_.reclaim(); });
    wg_ = std::min<uint32_t>(256, floor_pow2(std::min(phys.caps.max_workgroup_invocations,
                                                       phys.caps.max_workgroup_size[0])));
}

VulkanDevice::~VulkanDevice() {
    scratch_.reset();
    for (auto& b : conv_scratch_) b.reset();
    try {
        stream_.sync();
    } catch (...) {
        // Interrupted or lost at exit: the stream's destructor waits for the device regardless.
    }
}

std::shared_ptr<Buffer> VulkanDevice::alloc(DType dtype, size_t count) {
    // Sizes the device cannot hold fail here first, as out of memory.
    Allocation a = memory_.alloc(VkDeviceSize(count) * dtype_size(dtype), Pool::device);
    // Shaders index elements with 32-bit integers (addresses are 64-bit), and a grid
    // rounded up to whole workgroups must not wrap: just under 16 GiB of floats per matrix.
    constexpr size_t kMaxElements = 0xffffffffull - 4096;
    if (count > kMaxElements) {
        memory_.free(a);
        fail("%s: %zu elements in one matrix; a Vulkan matrix holds at most %zu", name_.c_str(), count, kMaxElements);
    }
    return std::make_shared<VulkanBuffer>(this, dtype, count, stream_, a);
}

View VulkanDevice::view(const Matrix& m) const {
    View v;
    v.addr = buffer(m).alloc.address + uint64_t(m.offset) * dtype_size(m.dtype());
    v.rows = m.contiguous() ? 0 : uint32_t(m.rows);
    v.rstep = uint32_t(m.row_step());
    v.cstep = uint32_t(m.col_step());
    return v;
}

void VulkanDevice::grid(uint64_t invocations, uint32_t wg, uint32_t out[3]) const {
    const uint32_t* maxc = phys_.caps.max_workgroup_count;
    uint64_t groups = (invocations + wg - 1) / wg;
    uint64_t x = std::min<uint64_t>(groups, maxc[0]);
    uint64_t rest = x ? (groups + x - 1) / x : 0;
    uint64_t y = std::min<uint64_t>(rest, maxc[1]);
    uint64_t z = y ? (rest + y - 1) / y : 0;
    if (z > maxc[2]) fail("%s: %llu workgroups exceed the device's grid", name_.c_str(), (unsigned long long)groups);
    out[0] = uint32_t(x);
    out[1] = uint32_t(y);
    out[2] = uint32_t(z);
}

void VulkanDevice::upload(const Matrix& dst, const void* host) {
    if (dst.empty()) return;
    stream_.count_transfer(true, uint64_t(dst.size()) * dtype_size(dst.dtype()));
    if (!mapped()) return staged_upload(dst, host);
    VulkanBuffer& b = buffer(dst);
    stream_.before_host_write(b);
    host_to_view(dst, b.alloc.mapped, static_cast<const uint8_t*>(host));
}

void VulkanDevice::download(const Matrix& src, void* host) {
    if (src.empty()) return;
    stream_.count_transfer(false, uint64_t(src.size()) * dtype_size(src.dtype()));
    if (!mapped()) {
        staged_download(src, host);
    } else {
        VulkanBuffer& b = buffer(src);
        stream_.before_host_read(b);
        view_to_host(src, b.alloc.mapped, static_cast<uint8_t*>(host));
    }
    stream_.report_checks();  // a bad index that finished kernels found (vulkan/stream.hpp)
}

// A dense staging matrix in host-visible memory, copied to or from the view by the level1 copy shader.
static Matrix staging_like(VulkanDevice& dev, Memory& memory, Stream& stream, const Matrix& m) {
    Allocation a = memory.alloc(VkDeviceSize(m.size()) * dtype_size(m.dtype()), Pool::host);
    Matrix s;
    s.buf = std::make_shared<VulkanBuffer>(&dev, m.dtype(), size_t(m.size()), stream, a);
    s.rows = m.rows;
    s.cols = m.cols;
    s.ld = std::max<int64_t>(1, m.rows);
    return s;
}

void VulkanDevice::staged_upload(const Matrix& dst, const void* host) {
    Matrix s = staging_like(*this, memory_, stream_, dst);
    std::memcpy(buffer(s).alloc.mapped, host, size_t(dst.size()) * dtype_size(dst.dtype()));
    copy(s, dst);  // the staging memory is retired, not freed, until this copy has run
}

void VulkanDevice::staged_download(const Matrix& src, void* host) {
    Matrix s = staging_like(*this, memory_, stream_, src);
    copy(src, s);
    stream_.before_host_read(buffer(s));
    std::memcpy(host, buffer(s).alloc.mapped, size_t(src.size()) * dtype_size(src.dtype()));
}

Matrix VulkanDevice::scratch(size_t floats) {
    if (!scratch_ || scratch_->released() || scratch_->count() < floats) {
        scratch_.reset();
        Allocation a = memory_.alloc(std::max<size_t>(floats, 4096) * 4, Pool::host);
        scratch_ = std::make_shared<VulkanBuffer>(this, DType::f32, std::max<size_t>(floats, 4096), stream_, a);
    }
    Matrix m;
    m.buf = scratch_;
    m.rows = int64_t(floats);
    m.cols = 1;
    m.ld = std::max<int64_t>(1, m.rows);
    return m;
}

void VulkanDevice::flush() { stream_.flush(); }
void VulkanDevice::sync() {
    stream_.sync();
    stream_.report_checks();
}

}  // namespace vela::vk

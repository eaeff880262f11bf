// VulkanDevice: the Device interface on one Vulkan physical device. Owns, in
// this order, the logical device, memory, pipelines and the stream; each is a
// separate file. Every kernel member (a row of core/kernels.def) is defined in
// a kernels_<topic>.cpp beside this file (blas, level1, elementwise, columns,
// reduce, random, regularize, sequence, layernorm, bmm, conv, optim, user) and records
// through the helpers under "Recording" (see vulkan/kernel.hpp).
#pragma once
#include <memory>
#include <string>

#include "core/device.hpp"
#include "vulkan/backend.hpp"
#include "vulkan/buffer.hpp"
#include "vulkan/context.hpp"
#include "vulkan/kernel.hpp"
#include "vulkan/memory.hpp"
#include "vulkan/pipelines.hpp"
#include "vulkan/stream.hpp"

namespace vela::vk {

class VulkanDevice final : public Device {
public:
    // force_staging: use staging transfers even where device memory is host-visible
    // (VELA_VK_STAGING=1 does the same for opened devices; tests use it on lavapipe).
    VulkanDevice(const PhysicalInfo& phys, std::string name, bool force_staging);
    ~VulkanDevice() override;

    // Device
    std::string name() const override { return name_; }
    std::shared_ptr<Buffer> alloc(DType dtype, size_t count) override;
    void upload(const Matrix& dst, const void* host) override;
    void download(const Matrix& src, void* host) override;
    void flush() override;
    void sync() override;
    uint64_t queued() override { return stream_.queued(); }

    // The kernels of core/kernels.def, each defined in a kernels_<topic>.cpp.
#define VELA_KERNEL(ret, name, params, area, labels) ret name params override;
#include "core/kernels.def"
#undef VELA_KERNEL

    DeviceStats stats() const override { return stream_.stats(); }
    MemoryInfo memory() const override { return memory_.info(); }
    void profile_begin() override { stream_.profile_begin(); }
    std::vector<KernelTime> profile_end() override {
        auto times = stream_.profile_end();
        stream_.report_checks();
        return times;
    }

    // Recording, for the kernel files.
    const Caps& caps() const { return phys_.caps; }
    // Device address of the buffer's element 0 (add offset·element size yourself, or pass offset in push constants).
    uint64_t address(const Matrix& m) const { return buffer(m).alloc.address; }
    void dispatch(const Dispatch& d) { stream_.dispatch(d); }

    const PhysicalInfo& physical() const { return phys_; }
    Stream& stream() { return stream_; }
    bool mapped() const { return memory_.device_mapped(); }

    static VulkanBuffer& buffer(const Matrix& m) { return *static_cast<VulkanBuffer*>(m.buf.get()); }
    View view(const Matrix& m) const;  // the view of m, with the dense fast path where it applies
    // Workgroups covering `invocations` invocations in groups of `wg`, split over y and z when needed.
    void grid(uint64_t invocations, uint32_t wg, uint32_t out[3]) const;
    uint32_t wg() const { return wg_; }  // workgroup size of the elementwise shaders
    // Workgroup size of the shaders with one invocation per column or row (softmax, argmax, mv, rk):
    // at most 64, so a batch of 64 columns fills one.
    uint32_t small_wg() const { return wg_ < 64 ? wg_ : 64; }

private:
    // Reductions finish on the host from per-workgroup partials written to this scratch buffer.
    Matrix scratch(size_t floats);
    // Elementwise transfer through a host-visible staging buffer (devices whose memory is not mapped).
    void staged_upload(const Matrix& dst, const void* host);
    void staged_download(const Matrix& src, void* host);

    const PhysicalInfo& phys_;
    std::string name_;
    std::unique_ptr<Gpu> gpu_;
    Memory memory_;
    Pipelines pipelines_;
    Stream stream_;
    uint32_t wg_ = 256;
    std::shared_ptr<Buffer> scratch_;
    // conv and conv_wgrad's windows, GEMM matrix and ones vector, kept between calls (kernels_conv.cpp).
    std::shared_ptr<Buffer> conv_scratch_[3];
};

}  // namespace vela::vk

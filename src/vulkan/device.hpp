// VulkanDevice: the Device interface on one Vulkan physical device. Owns, in
// this order, the logical device, memory, pipelines and the stream; each is a
// separate file. Every kernel member is defined in a kernels_<topic>.cpp beside
// this file (blas, level1, elementwise, columns, reduce, random) and records
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

    void mm(float alpha, const Matrix& a, const Matrix& b, float beta, const Matrix& c) override;
    void mv(float alpha, const Matrix& a, const Matrix& x, float beta, const Matrix& y) override;
    void rk(float alpha, const Matrix& x, const Matrix& y, const Matrix& a) override;
    void dense(const Matrix& w, const Matrix& x, const Matrix& b, Act act, const Matrix& y) override;

    void axpby(float alpha, const Matrix& x, float beta, const Matrix& y) override;
    void scal(float alpha, const Matrix& x) override;
    void copy(const Matrix& x, const Matrix& y) override;
    void swap(const Matrix& x, const Matrix& y) override;
    void fill(const Matrix& x, float v) override;
    double reduce(Reduce op, const Matrix& x, const Matrix* y) override;
    int64_t imax(const Matrix& x) override;
    void unary(Unary op, const Matrix& x, const Matrix& y, const float* params) override;
    void binary(Binary op, const Matrix& a, const Matrix& b, const Matrix& c) override;
    void act_backward(Act act, const Matrix& da, const Matrix& x, const Matrix& delta) override;
    void softmax(const Matrix& x, const Matrix& y) override;
    void softmax_xent(const Matrix& z, const Matrix& labels, const Matrix& loss, float scale,
                      const Matrix& dz) override;
    void arg_extreme(const Matrix& x, const Matrix& idx, Extreme e) override;
    void gather_cols(const Matrix& src, const Matrix& idx, const Matrix& dst, float scale) override;
    void add_bias(const Matrix& b, const Matrix& y) override;
    void random(Dist dist, uint64_t seed, const Matrix& x) override;
    void run_user(const UserCall& call) override;  // kernels_user.cpp
    // kernels_regularize.cpp
    void dropout(uint64_t seed, uint64_t step, float p, float scale, const Matrix& x, const Matrix& mask,
                 const Matrix& y) override;
    void batchnorm_stats(const Matrix& x, int64_t group, const Matrix& mean, const Matrix& var) override;
    void batchnorm(const Matrix& x, const Matrix& mean, const Matrix& var, const Matrix& gamma, const Matrix& beta,
                   float eps, int64_t group, const Matrix& y) override;
    void batchnorm_backward(const Matrix& dy, const Matrix& x, const Matrix& mean, const Matrix& var,
                            const Matrix& gamma, float eps, int64_t group, const Matrix& dgamma, const Matrix& dbeta,
                            const Matrix& dx) override;
    void random_shift(uint64_t seed, uint64_t step, int64_t shift, int64_t height, int64_t width, const Matrix& x,
                      const Matrix& y) override;
    void embedding_backward(const Matrix& dy, const Matrix& idx, const Matrix& dE) override;  // kernels_sequence.cpp
    void softmax_causal(const Matrix& x, const Matrix& y) override;
    void softmax_causal_backward(const Matrix& y, const Matrix& dy, const Matrix& dx) override;
    // kernels_layernorm.cpp
    void layernorm_forward(const Matrix& x, const Matrix& gamma, const Matrix& beta, float eps, const Matrix& mean,
                           const Matrix& rstd, const Matrix& y) override;
    void layernorm_backward(const Matrix& dy, const Matrix& x, const Matrix& mean, const Matrix& rstd,
                            const Matrix& gamma, const Matrix& dgamma, const Matrix& dbeta, const Matrix& dx) override;
    void bmm(float alpha, const Matrix& a, int64_t sa, const Matrix& b, int64_t sb, float beta, const Matrix& c,
             int64_t sc, int64_t count) override;
    // kernels_conv.cpp
    void im2col(const ConvGeom& g, const Matrix& x, const Matrix& cols) override;
    void col2im(const ConvGeom& g, const Matrix& cols, const Matrix& x) override;
    void maxpool(const ConvGeom& g, const Matrix& x, const Matrix& y, const Matrix& idx) override;
    void maxpool_backward(const ConvGeom& g, const Matrix& dy, const Matrix& idx, const Matrix& dx) override;
    void avgpool(const ConvGeom& g, const Matrix& x, const Matrix& y) override;
    void avgpool_backward(const ConvGeom& g, const Matrix& dy, const Matrix& dx) override;
    void to_images(const Matrix& u, const Matrix& b, const Matrix& y) override;
    void from_images(const Matrix& y, const Matrix& u) override;
    void optim_step(Optim kind, const Matrix& w, const Matrix& g, const Matrix& s1, const Matrix& s2, const Matrix& s3,
                    const float* p) override;  // kernels_optim.cpp

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
};

}  // namespace vela::vk

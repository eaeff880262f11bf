// The GEMM family on Vulkan: tiled, register-blocked shaders with variants
// chosen from the device's Caps (shaders/mm*.comp, mv.comp, rk.comp, dense.comp).
// VulkanDevice::mm/mv/rk/dense forward here; arguments are already validated
// by core/ops.cpp (shapes agree, one device, no forbidden aliasing).
#pragma once
#include "core/device.hpp"
#include "vulkan/kernel.hpp"

namespace vela::vk {

void record_mm(Recorder& r, float alpha, const Matrix& a, const Matrix& b, float beta, const Matrix& c);
void record_mv(Recorder& r, float alpha, const Matrix& a, const Matrix& x, float beta, const Matrix& y);
void record_rk(Recorder& r, float alpha, const Matrix& x, const Matrix& y, const Matrix& a);
void record_dense(Recorder& r, const Matrix& w, const Matrix& x, const Matrix& b, Act act, const Matrix& y);

// The shader family used: chosen from Caps (regblock where Caps::software,
// tiled otherwise) unless forced, so the tests run both variants on one
// device. mv follows: regblock = one invocation per row, tiled = one
// workgroup per row with a shared-memory reduction.
enum class GemmVariant : uint8_t { automatic, regblock, tiled };
void force_gemm_variant(GemmVariant v);

}  // namespace vela::vk

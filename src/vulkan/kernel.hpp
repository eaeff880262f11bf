// What a Vulkan kernel records. The one convention: every kernel is a
// VulkanDevice member (src/vulkan/device.hpp) defined in a kernels_<topic>.cpp
// file beside it, which fills the push constants and a Dispatch (below) and
// hands it to VulkanDevice::dispatch, using only the device's recording
// helpers (caps, address, view, grid, wg, dispatch); the context, memory,
// pipelines and stream behind them are the device's business.
//
// Shaders address buffers by buffer device address: every matrix operand is
// passed in push constants as the 64-bit address of its buffer's first element
// plus the view's offset, ld and trans flag (see shaders/common.glsl). No
// descriptor sets, no per-call allocation, no maxStorageBufferRange limit.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>

#include "core/device.hpp"
#include "core/index_check.hpp"
#include "core/matrix.hpp"

namespace vela::vk {

// What kernels may read of the device: limits that choose variants and grids.
struct Caps {
    uint32_t subgroup_size = 32;
    uint32_t max_workgroup_invocations = 128;
    uint32_t max_workgroup_size[3] = {128, 1, 1};
    uint32_t max_workgroup_count[3] = {65535, 65535, 65535};
    uint32_t max_shared_memory = 16384;  // bytes
    uint32_t max_push_constants = 128;   // bytes
    bool software = false;               // lavapipe/SwiftShader: barriers are costly, prefer barrier-free variants
    bool subgroup_arithmetic = false;    // subgroupAdd/Max available in compute
    bool subgroup_ballot = false;        // subgroupBroadcast available in compute (mm_regblock.comp)
    bool int64 = false;                  // shaderInt64 (enabled): mm_regblock_i64.comp may run
    uint32_t vendor_id = 0;
};

// A matrix operand as shaders see it: mirrors `struct View` in shaders/common.glsl.
struct View {
    uint64_t addr = 0;  // address of logical element (0, 0)
    uint32_t rows = 0;  // logical rows, 0 when the view is one dense column-major run
    uint32_t rstep = 0;
    uint32_t cstep = 0;
    uint32_t pad = 0;
};
static_assert(sizeof(View) == 24);

// The push block of the elementwise shaders (level1, unary, binary, backward,
// add_bias, gather_cols), declared once on the GLSL side in
// shaders/element_push.glsl: up to three views, an element count and four
// scalars. It is also one step of shaders/batch.comp, with `step` saying
// which kernel it is.
struct ElementPush {
    View x, y, z;
    uint32_t n = 0;
    float a = 0, b = 0, c = 0, d = 0;
    uint32_t step = 0;  // for batch.comp only: the kernel's step code (see namespace step)
};
static_assert(sizeof(ElementPush) == 96);

// The level-1 kernels of shaders/level1.comp (its OP specialization constant).
// The shaders' L1_* constants are generated from this enum (cmake/opgen.cpp).
enum class Level1 : uint32_t { fill, scal, copy, swap, axpby, count_ };

// Step codes of shaders/batch.comp: family | operation (the shader's own OP
// specialization constant: vela::Unary, Binary, Act or Level1) | flags. The
// shaders' STEP_* constants are generated from these (cmake/opgen.cpp).
namespace step {
constexpr uint32_t family_shift = 8, family_mask = 15, op_mask = 255;
constexpr uint32_t level1 = 1u << family_shift, unary = 2u << family_shift, binary = 3u << family_shift,
                   bias = 4u << family_shift, backward = 5u << family_shift;
constexpr uint32_t vec4 = 1u << 12;  // dense 16-byte aligned operands: four elements per invocation
constexpr uint32_t sync = 1u << 13;  // set by the stream: a workgroup barrier before this step
static_assert(uint32_t(Unary::count_) <= op_mask + 1 && uint32_t(Binary::count_) <= op_mask + 1 &&
              uint32_t(Act::count_) <= op_mask + 1);
}  // namespace step

// One dispatch. `reads` and `writes` list the operands so the stream can put
// a barrier exactly where a hazard exists (RAW, WAR, WAW on the same buffer)
// and keep the buffers alive until the work completes.
struct Dispatch {
    const char* shader;                       // shaders/<shader>.comp
    const void* push = nullptr;               // push-constant block
    uint32_t push_size = 0;                   // ≤ Caps::max_push_constants
    uint32_t groups[3] = {1, 1, 1};           // workgroup counts, within Caps::max_workgroup_count
    const uint32_t* spec = nullptr;           // specialization constants, constant_id 0..spec_count-1
    uint32_t spec_count = 0;                  // (pipelines are cached per shader + spec values)
    std::initializer_list<const Matrix*> reads;
    std::initializer_list<const Matrix*> writes;
    const char* label = nullptr;              // kernel name for profile(); defaults to shader
    // Nonzero: `push` is an ElementPush and the kernel may also run as one step
    // of a batch (shaders/batch.comp) with this step code; the stream decides.
    uint32_t step = 0;
    // Non-null: the kernel checks an index operand (labels, column numbers;
    // core/index_check.hpp). The stream gives the call a status word in
    // host-visible memory of its command buffer and writes its 64-bit address
    // at byte `check_at` of the push block; the shader atomicMin's the 0-based
    // position of each bad index into it (report_bad_index in common.glsl), and
    // the host reads it once the command buffer has completed (no extra wait).
    const IndexCheck* check = nullptr;
    uint32_t check_at = 0;
    // A user kernel with the loop probe (vulkan/loop_probe.hpp): when its
    // command buffer completes, the stream reads the loop status word
    // (Stream::loop_status_address) and reports a cut loop like a bad index.
    bool loop_probe = false;
};

}  // namespace vela::vk

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
#include <vulkan/vulkan.h>

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>

#include "core/device.hpp"
#include "core/error.hpp"
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
    bool subgroup_shuffle = false;       // subgroupShuffle in compute (mm_regblock_i64.comp needs it too)
    // VK_KHR_push_descriptor (enabled) and uniform and storage texel buffers
    // of R32_SFLOAT and R32G32B32A32_SFLOAT: memory blocks of at most
    // max_texel_elements floats get texel views, which mm_regblock_tex_i64.comp
    // and optim_tex.comp read and write (docs/gemm.md).
    bool texel_views = false;
    uint32_t max_texel_elements = 0;     // maxTexelBufferElements
    uint32_t vendor_id = 0;
};

// Set 0 where Caps::texel_views (push descriptors, Pipelines' layout):
// R32 and R32G32B32A32 uniform texel buffers at bindings 0, 1 and 2, 3
// (mm_regblock_tex's a and b; optim_tex's g), and the same as storage texel
// buffers at 4, 5 and 6, 7 (mm_regblock_tex's c at 4; optim_tex's w and its
// velocity). A dispatch pushes only the bindings it names.
constexpr uint32_t kTexelBindings = 8;
constexpr VkDescriptorType texel_binding_type(uint32_t i) {
    return i >= 4 ? VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER : VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
}

// A matrix operand as shaders see it: mirrors `struct View` in shaders/common.glsl.
struct View {
    uint64_t addr = 0;  // address of logical element (0, 0)
    uint32_t rows = 0;  // logical rows, 0 when the view is one dense column-major run
    uint32_t rstep = 0;
    uint32_t cstep = 0;
    uint32_t pad = 0;
};
static_assert(sizeof(View) == 24);

// True when m, seen through v, is one dense run starting on a 16-byte
// boundary: the shaders' four-elements-per-invocation (VEC4) path applies.
inline bool dense16(const Matrix& m, const View& v) { return m.contiguous() && v.addr % 16 == 0; }

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

// The mode numbers of the GEMM epilogue, the column passes and batchnorm's
// passes, layer norm's, pooling's and mv's (specialization constants): the
// rows of src/vulkan/modes.def, whose GLSL constants (EPI_*, COLSTATS_*,
// COLAPPLY_*, BN_*, BN_APPLY_*, LN_*, POOL_*, MV_*)
// cmake/opgen.cpp generates from these enums.
enum class Epi : uint32_t {
#define VELA_EPI(name, what) name,
#include "vulkan/modes.def"
#undef VELA_EPI
    count_
};
enum class ColStats : uint32_t {
#define VELA_COLSTATS(name, what) name,
#include "vulkan/modes.def"
#undef VELA_COLSTATS
    count_
};
enum class ColApply : uint32_t {
#define VELA_COLAPPLY(name, what) name,
#include "vulkan/modes.def"
#undef VELA_COLAPPLY
    count_
};
enum class Bn : uint32_t {
#define VELA_BN(name, what) name,
#include "vulkan/modes.def"
#undef VELA_BN
    count_
};
enum class BnApply : uint32_t {
#define VELA_BN_APPLY(name, what) name,
#include "vulkan/modes.def"
#undef VELA_BN_APPLY
    count_
};
enum class Ln : uint32_t {
#define VELA_LN(name, what) name,
#include "vulkan/modes.def"
#undef VELA_LN
    count_
};
enum class Pooling : uint32_t {
#define VELA_POOL(name, what) name,
#include "vulkan/modes.def"
#undef VELA_POOL
    count_
};
enum class Mv : uint32_t {
#define VELA_MV(name, what) name,
#include "vulkan/modes.def"
#undef VELA_MV
    count_
};

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

// The matrices a dispatch reads or writes, copied into a fixed array (so a
// Dispatch may be built in one statement and recorded in a later one). A null
// entry, an absent optional operand, is left out.
class Operands {
public:
    static constexpr size_t kMax = 6;  // the most any kernel has (user kernels: five)
    Operands() = default;
    Operands(std::initializer_list<const Matrix*> ms) {
        for (const Matrix* m : ms) add(m);
    }
    void add(const Matrix* m) {
        if (!m) return;
        if (n_ == kMax) throw Error("vulkan: a dispatch with more than 6 operands");
        m_[n_++] = m;
    }
    const Matrix* const* begin() const { return m_.data(); }
    const Matrix* const* end() const { return m_.data() + n_; }

private:
    std::array<const Matrix*, kMax> m_{};
    uint8_t n_ = 0;
};

// A shader's specialization constants, given as a struct of uint32_t fields
// named after its constants, constant_id 0, 1, ... in field order (each
// kernel's struct names the shader whose layout(constant_id) lines it
// mirrors). The struct must outlive the dispatch call.
struct SpecConstants {
    const uint32_t* data = nullptr;
    uint32_t count = 0;
    SpecConstants() = default;
    template <class S>
    SpecConstants(const S& s) : data(reinterpret_cast<const uint32_t*>(&s)), count(sizeof(S) / sizeof(uint32_t)) {
        static_assert(std::is_class_v<S> && std::is_standard_layout_v<S> && std::is_trivially_copyable_v<S> &&
                          alignof(S) == alignof(uint32_t) && sizeof(S) % sizeof(uint32_t) == 0,
                      "specialization constants: a struct of uint32_t fields, one per constant_id");
    }
};

// The constants shared by several shaders: the workgroup size alone (add_bias,
// dropout, random_shift, general kernels written at the prompt), and the
// workgroup size, the operation and the four-element path (unary, binary,
// backward, reduce: WG, OP, VEC4; optim: WG, KIND, VEC4).
struct WgSpec {
    uint32_t wg;
};
struct OpSpec {
    uint32_t wg, op, vec4;
};
// The workgroup size and a mode: bn_finish, bn_apply, pool, pool_backward,
// pool_scatter (MODE), images (DIR); im2col and col2im ignore the mode.
struct ModeSpec {
    uint32_t wg, mode;
};
// Kernels written at the prompt (vulkan/loop_probe.hpp): WG, VEC4 (map kernels only), the loop
// probe's status word address (low, high; 0: no probe) and CHUNKED (the cpu's runner: id() adds the
// part's first invocation, the word after the status word).
struct UserSpec {
    uint32_t wg, vec4, status_lo, status_hi, chunked, loop_check;  // loop_check: loop_probe.hpp's checks_loops
};

// One dispatch. `reads` and `writes` list the operands so the stream can put
// a barrier exactly where a hazard exists (RAW, WAR, WAW on the same buffer)
// and keep the buffers alive until the work completes.
struct Dispatch {
    const char* shader;                       // shaders/<shader>.comp
    const void* push = nullptr;               // push-constant block
    uint32_t push_size = 0;                   // ≤ Caps::max_push_constants
    uint32_t groups[3] = {1, 1, 1};           // workgroup counts, within Caps::max_workgroup_count
    SpecConstants spec;                       // pipelines are cached per shader + spec values
    Operands reads;
    Operands writes;
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
    // Non-null views: pushed as descriptor set 0 before the dispatch
    // (mm_regblock_tex, optim_tex: the operands' texel views, Caps::texel_views).
    VkBufferView texels[kTexelBindings] = {};
};

}  // namespace vela::vk

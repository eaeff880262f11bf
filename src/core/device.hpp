// Device: the one seam between the Lua layer and the engines (cpu, vulkan:N).
// Every row of the kernel table (core/kernels.def) is a pure virtual here, so
// a device without one of them does not build. Callers go through
// core/ops.hpp, which checks shapes, devices and aliasing once for every
// device; a Device implementation may assume its arguments are valid (kernels.def
// says what that means).
//
// Asynchrony: a device may queue work. Kernels return at once; download(),
// the reductions that return numbers, and sync() are the points where the
// host waits. flush() starts queued work without waiting. On the CPU all
// three are trivially synchronous.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/conv.hpp"
#include "core/matrix.hpp"
#include "core/user_kernel.hpp"

namespace vela {

// The elementwise functions and activations: the rows of core/ops.def, then
// the derivative of each activation (name_prime). Activations: identity (no
// function), then the VELA_ACT rows in order (the code nn.save writes).
enum class Unary : uint8_t {
#define VELA_ACT(name, f, d, from, what) name,
#define VELA_FN(name, params, f, what) name,
#include "core/ops.def"
#undef VELA_ACT
#undef VELA_FN
#define VELA_ACT(name, f, d, from, what) name##_prime,
#define VELA_FN(name, params, f, what)
#include "core/ops.def"
#undef VELA_ACT
#undef VELA_FN
    count_
};
// c ← a ∘ b: the rows of core/binary.def.
enum class Binary : uint8_t {
#define VELA_BIN(name, f, what) name,
#include "core/binary.def"
#undef VELA_BIN
    count_
};
// The reductions of Device::reduce: the rows of core/reduce.def.
enum class Reduce : uint8_t {
#define VELA_REDUCE(name, what) name,
#include "core/reduce.def"
#undef VELA_REDUCE
    count_
};
// Which end of a column arg_extreme finds: argmax's largest or argmin's smallest value.
enum class Extreme : uint8_t { largest, smallest };
enum class Act : uint8_t {
    identity,
#define VELA_ACT(name, f, d, from, what) name,
#define VELA_FN(name, params, f, what)
#include "core/ops.def"
#undef VELA_ACT
#undef VELA_FN
    count_
};
enum class Dist : uint8_t { uniform, normal };
// The fused optimizer updates of Device::optim_step (src/core/ops_optim.cpp says the math),
// one X(name) per kind: the enum, and shaders/optim.comp's KIND constants OPTIM_*
// (modes.glsl, written by cmake/opgen.cpp).
#define VELA_OPTIMS(X) X(sgd) X(adam) X(adamw) X(rmsprop) X(rmsprop_centered) X(adagrad)
enum class Optim : uint8_t {
#define VELA_OPTIM_ROW(name) name,
    VELA_OPTIMS(VELA_OPTIM_ROW)
#undef VELA_OPTIM_ROW
        count_
};
const char* optim_name(Optim);  // "sgd_step", "adam_step", ...

const char* unary_name(Unary);
const char* binary_name(Binary);
const char* reduce_name(Reduce);
const char* act_name(Act);
const char* act_backward_name(Act);  // "tanh_backward": the fused kernel δ ← da ∘ act′
bool parse_act(const std::string& s, Act& out);
// Table facts (core/ops.def): the parameters an op takes (0..4), whether an
// activation's derivative is computed from z (the pre-activation) rather than
// from a, the unary op of an activation and of its derivative (identity has
// neither: Unary::count_), and the help formula of an op.
int unary_params(Unary);
bool act_prime_from_z(Act);
Unary act_unary(Act);
Unary act_prime(Act);
const char* unary_formula(Unary);
const char* binary_formula(Binary);

// The rows of core/kernels.def: Kernel::mm, ... and what the table says of each.
enum class Kernel : uint8_t {
#define VELA_KERNEL(ret, name, params, area, labels) name,
#include "core/kernels.def"
#undef VELA_KERNEL
    count_
};
struct KernelInfo {
    const char* name;    // "axpby"
    const char* area;    // help()'s section: "level 1" ("" for none)
    const char* labels;  // profile()'s names, space-separated: "axpy axpby" ("" when named elsewhere)
};
const KernelInfo& kernel_info(Kernel k);
// The profile label of a kernel with one label ("mm"); a kernel with several
// picks one by its arguments itself.
inline const char* kernel_label(Kernel k) { return kernel_info(k).labels; }

struct DeviceStats {
    uint64_t dispatches = 0;   // kernels recorded (or run, on the cpu)
    uint64_t submissions = 0;  // command buffers submitted
    uint64_t host_waits = 0;   // times the host blocked on the device
    uint64_t batched = 0;      // kernels of `dispatches` that ran as steps of a batch (Vulkan)
    uint64_t uploads = 0, upload_bytes = 0;      // host → device transfers (upload())
    uint64_t downloads = 0, download_bytes = 0;  // device → host transfers (download())
    double wait_seconds = 0;   // time the host spent blocked on the device (0 on the cpu)
};

struct MemoryInfo {
    uint64_t used = 0;      // bytes held by live buffers
    uint64_t reserved = 0;  // bytes obtained from the system/driver (blocks)
    uint64_t total = 0;     // device memory size (0 when unknown)
};

struct KernelTime {
    std::string kernel;  // e.g. "mm", "tanh"
    double ms = 0;       // device time
    uint64_t call = 0;   // the user's call it belongs to (KernelCall::id; 0: none known)
};

// The call the front end is running, when it says so (profile sets it around
// each kernel it calls): devices name the kernels they time after it, so one
// call has one name on every device ("axpy", not "axpy" here and "axpby"
// there) and the kernels one call ran add up to one call.
struct KernelCall {
    const char* name = nullptr;  // nullptr: none; devices use their own names
    uint64_t id = 0;
};
KernelCall& current_call();

class Device {
public:
    virtual ~Device() = default;

    virtual std::string name() const = 0;  // "cpu", "vulkan:0"

    // Storage. alloc throws vela::Error on exhaustion (the session stays usable).
    virtual std::shared_ptr<Buffer> alloc(DType dtype, size_t count) = 0;
    // Host data is dense column-major rows×cols of the view's logical shape,
    // in the view's dtype. Views may be strided or transposed.
    virtual void upload(const Matrix& dst, const void* host) = 0;
    virtual void download(const Matrix& src, void* host) = 0;  // waits

    virtual void flush() = 0;  // start queued work, do not wait
    virtual void sync() = 0;   // wait for all queued work (polls interrupt_flag)
    // Kernels recorded or submitted and not yet seen complete (does not wait;
    // 0 on a device that runs each kernel as it is called).
    virtual uint64_t queued() { return 0; }

    // The kernels: one pure virtual per row of core/kernels.def (the math is there).
#define VELA_KERNEL(ret, name, params, area, labels) virtual ret name params = 0;
#include "core/kernels.def"
#undef VELA_KERNEL

    // Introspection.
    virtual DeviceStats stats() const = 0;
    virtual MemoryInfo memory() const = 0;
    // Per-kernel device times, collected between profile_begin and profile_end.
    virtual void profile_begin() = 0;
    virtual std::vector<KernelTime> profile_end() = 0;  // waits

    // Settings by name (the cpu: "threads"); a name the device lacks is an error.
    virtual void set_option(const std::string& name, int64_t value);
    virtual int64_t option(const std::string& name) const;
};

}  // namespace vela

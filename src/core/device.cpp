// Names and facts of the kernel enums, as the user types them (help, profile,
// errors). The elementwise ones come from the op table, core/ops.def.
#include "core/device.hpp"

#include <iterator>
#include <mutex>
#include <unordered_set>

#include "core/error.hpp"

namespace vela {

KernelCall& current_call() {
    static KernelCall c;
    return c;
}

namespace {

struct UnaryRow {
    const char* name;
    int params;
    const char* formula;
};
constexpr UnaryRow kUnaryRows[] = {
#define VELA_ACT(name, f, d, from, what) {#name, 0, what},
#define VELA_FN(name, params, f, what) {#name, params, what},
#include "core/ops.def"
#undef VELA_ACT
#undef VELA_FN
#define VELA_ACT(name, f, d, from, what) {#name "_prime", 0, "the derivative of " #name ", from " #from},
#define VELA_FN(name, params, f, what)
#include "core/ops.def"
#undef VELA_ACT
#undef VELA_FN
};
static_assert(sizeof kUnaryRows / sizeof *kUnaryRows == size_t(Unary::count_));

struct ActRow {
    const char* name;
    const char* backward;
    bool from_z;
    Unary op, prime;
};
#define VELA_FROM_a false
#define VELA_FROM_z true
constexpr ActRow kActRows[] = {
    {"identity", "identity_backward", false, Unary::count_, Unary::count_},
#define VELA_ACT(name, f, d, from, what) {#name, #name "_backward", VELA_FROM_##from, Unary::name, Unary::name##_prime},
#define VELA_FN(name, params, f, what)
#include "core/ops.def"
#undef VELA_ACT
#undef VELA_FN
};
#undef VELA_FROM_a
#undef VELA_FROM_z
static_assert(sizeof kActRows / sizeof *kActRows == size_t(Act::count_));

}  // namespace

const char* unary_name(Unary op) { return op < Unary::count_ ? kUnaryRows[size_t(op)].name : "unary"; }
int unary_params(Unary op) { return op < Unary::count_ ? kUnaryRows[size_t(op)].params : 0; }
const char* unary_formula(Unary op) { return op < Unary::count_ ? kUnaryRows[size_t(op)].formula : ""; }

const char* binary_name(Binary op) {
    static const char* const names[] = {
#define VELA_BIN(name, f, what) #name,
#include "core/binary.def"
#undef VELA_BIN
    };
    static_assert(sizeof names / sizeof *names == size_t(Binary::count_));
    return op < Binary::count_ ? names[size_t(op)] : "binary";
}

const char* binary_formula(Binary op) {
    static const char* const formulas[] = {
#define VELA_BIN(name, f, what) what,
#include "core/binary.def"
#undef VELA_BIN
    };
    return op < Binary::count_ ? formulas[size_t(op)] : "";
}

const char* reduce_name(Reduce op) {
    static const char* const names[] = {
#define VELA_REDUCE(name, what) #name,
#include "core/reduce.def"
#undef VELA_REDUCE
    };
    static_assert(sizeof names / sizeof *names == size_t(Reduce::count_));
    return op < Reduce::count_ ? names[size_t(op)] : "reduce";
}

const char* act_name(Act a) { return a < Act::count_ ? kActRows[size_t(a)].name : "act"; }
const char* act_backward_name(Act a) { return a < Act::count_ ? kActRows[size_t(a)].backward : "act_backward"; }
bool act_prime_from_z(Act a) { return a < Act::count_ && kActRows[size_t(a)].from_z; }
Unary act_unary(Act a) { return a < Act::count_ ? kActRows[size_t(a)].op : Unary::count_; }
Unary act_prime(Act a) { return a < Act::count_ ? kActRows[size_t(a)].prime : Unary::count_; }

bool parse_act(const std::string& s, Act& out) {
    for (uint8_t i = 0; i < uint8_t(Act::count_); i++) {
        if (s == act_name(Act(i))) {
            out = Act(i);
            return true;
        }
    }
    if (s == "linear" || s == "none") {  // common synonyms of identity
        out = Act::identity;
        return true;
    }
    return false;
}

const char* intern(const std::string& s) {
    static std::mutex mu;
    static auto* strings = new std::unordered_set<std::string>;  // never freed: pointers outlive statics
    std::lock_guard<std::mutex> lock(mu);
    return strings->insert(s).first->c_str();
}

void fail_no_host_runner(const char* kernel, const char* why) {
    fail("cpu: %s: kernels written at the prompt run on the cpu through a software Vulkan driver, and %s "
         "(Debian: apt install mesa-vulkan-drivers, whose lavapipe 22.3 or later has it); or move the "
         "matrices to a Vulkan device with :to(\"vulkan:0\")",
         kernel, why);
}

const char* optim_name(Optim kind) {
    static const char* const names[] = {"sgd_step", "adam_step", "adamw_step", "rmsprop_step", "rmsprop_step",
                                        "adagrad_step"};
    static_assert(std::size(names) == size_t(Optim::count_));
    return names[size_t(kind)];
}

const KernelInfo& kernel_info(Kernel k) {
    static const KernelInfo rows[] = {
#define VELA_KERNEL(ret, name, params, area, labels) {#name, area, labels},
#include "core/kernels.def"
#undef VELA_KERNEL
    };
    static_assert(std::size(rows) == size_t(Kernel::count_));
    return rows[k < Kernel::count_ ? size_t(k) : 0];
}

}  // namespace vela

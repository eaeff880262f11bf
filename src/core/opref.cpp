// The float64 references of core/ops.def and core/binary.def (their VELA_REF and
// VELA_BIN_REF rows): switches without default under -Werror=switch, so an op
// added without its reference does not build. This file includes <cmath> and
// the enums only, never core/opmath.h: a reference cannot call a kernel's code.
#include "core/opref.hpp"

#include <cmath>
#include <numbers>

namespace vela {

namespace {

// The double helpers a reference row may call (add one only where the
// expression would otherwise repeat itself).
const double kSqrt2OverPi = std::sqrt(2 / std::numbers::pi);
// gelu(x) = ½x(1 + tanh u) = x·σ(2u), u = √(2/π)(x + 0.044715x³): σ(2u), without
// the cancellation of 1 + tanh u, and d(2u)/dx.
double gelu_s64(double x) { return 1 / (1 + std::exp(-2 * kSqrt2OverPi * (x + 0.044715 * x * x * x))); }
double gelu_du64(double x) { return 2 * kSqrt2OverPi * (1 + 3 * 0.044715 * x * x); }

}  // namespace

#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wswitch"

double unary_ref(Unary op, double x, const double* p) {
    [[maybe_unused]] const double p0 = p ? p[0] : 0, p1 = p ? p[1] : 0, p2 = p ? p[2] : 0, p3 = p ? p[3] : 0;
    switch (op) {
#define VELA_ACT(name, f, d, from, what)
#define VELA_FN(name, params, f, what)
#define VELA_REF(op, ref) \
    case Unary::op: return ref;
#include "core/ops.def"
#undef VELA_ACT
#undef VELA_FN
#undef VELA_REF
    case Unary::count_: break;
    }
    return NAN;
}

double binary_ref(Binary op, double x, double y) {
    switch (op) {
#define VELA_BIN(name, f, what)
#define VELA_BIN_REF(name, ref) \
    case Binary::name: return ref;
#include "core/binary.def"
#undef VELA_BIN
#undef VELA_BIN_REF
    case Binary::count_: break;
    }
    return NAN;
}

#pragma GCC diagnostic pop

double act_ref(Act act, double z) { return act == Act::identity ? z : unary_ref(act_unary(act), z); }

double act_dref(Act act, double z) {
    if (act == Act::identity) return 1;
    return unary_ref(act_prime(act), act_prime_from_z(act) ? z : act_ref(act, z));
}

}  // namespace vela

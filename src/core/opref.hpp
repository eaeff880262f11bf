// The float64 reference of every op of the elementwise tables: the VELA_REF rows
// of core/ops.def and the VELA_BIN_REF rows of core/binary.def, in double with
// <cmath>, sharing no code with any device's kernels. The C++ tests read them
// through tests/kernel_reference.hpp; Lua as vela.ops[name].ref and .dref
// (src/lua/kernels.cpp), which nn.gradcheck and the Lua tests use.
#pragma once
#include "core/device.hpp"

namespace vela {

// op at x; p the parameters p0..p3 (all 0 when null: only linear_frac reads them).
// A derivative (name_prime) takes what its row's `from` says: a or z.
double unary_ref(Unary op, double x, const double* p = nullptr);
// An activation at the pre-activation z (identity: z), and its derivative da/dz at z
// (the name_prime reference at act(z) or at z, as `from` says; identity: 1).
double act_ref(Act act, double z);
double act_dref(Act act, double z);
double binary_ref(Binary op, double x, double y);

}  // namespace vela

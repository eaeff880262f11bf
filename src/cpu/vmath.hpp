// The branch-free float exp, tanh and sigmoid the CPU loops vectorise (libm's
// are scalar calls): the op table's math, core/opmath.h, shared with the shaders.
#pragma once
#include "core/opmath.hpp"

namespace vela::cpu {

using opmath::exp_f;
using opmath::sigmoid_f;
using opmath::tanh_f;

}  // namespace vela::cpu

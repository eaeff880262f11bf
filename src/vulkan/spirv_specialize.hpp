// Specialization constants applied to SPIR-V on the host, before the driver
// sees the module: each OpSpecConstant{,True,False} whose SpecId has a value
// becomes the plain constant of that value (OpConstant{,True,False}) and its
// SpecId decoration goes. That is what specialization means (Vulkan spec,
// "Specialization Constants"), done early, so every driver's compiler sees
// constants it can fold.
//
// Why: SwiftShader runs spirv-opt's performance passes after it sets the
// specialization values as the spec constants' defaults, but does not freeze
// them, so a branch or `switch` on a specialization constant (the op of the
// elementwise shaders, OP in unary.comp) stays in the code; and its JIT emits
// every block of a selection under a lane mask, taken or not. The unary
// kernel then evaluated all of the op table's functions for every element
// (about 27× the cost of the one it needs). Frozen, the passes fold the
// branch away as lavapipe's compiler always did.
//
// Only 32-bit scalars (one value word) and booleans are frozen; anything else
// is left to the VkSpecializationInfo, which the caller still passes (map
// entries whose constant the module no longer has are ignored, as the spec says).
//
// Then every OpSpecConstantOp whose operands are all plain 32-bit integer or
// boolean constants after that (integer arithmetic, shifts, bitwise and
// logical operations, comparisons, select) becomes the constant of its value:
// spirv-opt's performance passes, which SwiftShader runs, fold none of them.
// mm_regblock's accumulators, `float acc[MR * NR]`, stayed an array in memory
// and its branches on `PAIR != 0 && TA == 0` stayed in the unrolled loop, so
// SwiftShader's mm ran at a third of the speed (docs/gemm.md, "SwiftShader").
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace vela::vk {

// code: a SPIR-V module of `words` words; spec[i] the value of constant_id i
// for i < count. Returns the module with those constants frozen. A module too
// short or malformed to walk is returned unchanged (the driver then reports it).
std::vector<uint32_t> specialize_spirv(const uint32_t* code, size_t words, const uint32_t* spec, uint32_t count);

}  // namespace vela::vk

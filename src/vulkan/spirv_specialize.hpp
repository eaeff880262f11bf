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

// Branches on constants, taken away: each OpBranchConditional on a boolean
// constant and each OpSwitch on an integer constant (what freezing leaves of
// a branch on a specialization constant) goes to its one target, and the
// blocks no longer reachable go, with the OpPhi operands, decorations and
// names of what they defined. An if becomes an OpBranch without its
// OpSelectionMerge; a switch keeps its merge (its cases may break to it) and
// only the case it takes; loop headers are left as they are, and so is a
// function where a kept header's merge block or continue target would go
// unreached.
//
// Why: lavapipe turns the whole module into NIR at vkCreateComputePipelines
// and only then removes dead code. mm_regblock_tex_i64 frozen is 12,208
// words, most of them branches its variants do not take (loads in pairs,
// transposes, the dense epilogue's activations); pruned, the 1×1 block of a
// process's first mm is a quarter of that, and lavapipe makes its pipeline
// in half the time (docs/results.md, "Constant branches pruned"). What runs
// is the same instructions in the same order.
//
// A module that does not parse (SPIRV-Tools' parser), or has decoration
// groups or non-semantic debug information, is returned unchanged.
std::vector<uint32_t> prune_constant_branches(const std::vector<uint32_t>& module);

}  // namespace vela::vk

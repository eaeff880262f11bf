// Many small elementwise kernels in one dispatch. A dispatch has a fixed cost
// (lavapipe: ~30 µs, handing the grid to its thread pool and joining it; a
// GPU: a few µs of launch and drain), which dominates a kernel over a few
// thousand elements. The stream (src/vulkan/stream.cpp) therefore records runs
// of small level-1, unary, binary, backward and bias kernels as steps of one dispatch of
// this shader: one workgroup walks the steps in order, each invocation taking
// elements lid, lid + WG, ... of a step, and a workgroup barrier separates a
// step from the previous ones only where it touches a buffer they wrote (or
// writes one they read), as the host decided when it recorded the step.
// The element work is elementwise.glsl, the same code as the kernels' own shaders.
#version 450
#include "common.glsl"
#include "elementwise.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(local_size_x_id = 0) in;

// What the batch holds, per step family (constant_id = the family's number,
// STEP_LEVEL1 ... STEP_BACKWARD): BATCH_ABSENT (no step of that family: its
// branch folds away), one operation (every step of the family does it: its
// comparisons fold), or BATCH_ANY (read each step's operation from memory).
// On CPU implementations (lavapipe, SwiftShader) every branch of the step is
// executed under a lane mask whichever the step is, so a step costs the code of
// all the families and operations compiled in: the host (Stream::add_step)
// picks the variant that holds only what the batch needs.
const uint BATCH_ABSENT = 0xfffffffeu, BATCH_ANY = 0xffffffffu;
layout(constant_id = 1) const uint BATCH_LEVEL1 = BATCH_ANY;
layout(constant_id = 2) const uint BATCH_UNARY = BATCH_ANY;
layout(constant_id = 3) const uint BATCH_BINARY = BATCH_ANY;
layout(constant_id = 4) const uint BATCH_BIAS = BATCH_ANY;
layout(constant_id = 5) const uint BATCH_BACKWARD = BATCH_ANY;

uint batch_op(uint only, uint op) { return only == BATCH_ANY ? op : only; }

// The step list: a 16-byte header (the step count, written by the host up to
// the submission of the command buffer), then one 96-byte step per kernel:
// the push block of the elementwise shaders (element_push.glsl, struct
// ElementPush of src/vulkan/kernel.hpp), View x, y, z, n, a, b, c, d, code.
// Read as six 16-byte loads: on CPU implementations every load instruction is
// a loop over the lanes, whatever its width.
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer Steps { uvec4 w[]; };

layout(push_constant) uniform Push {
    Addr steps;
} p;

// The step codes (STEP_*: family, operation, flags) are in the generated ops.glsl.

void main() {
    Steps list = Steps(p.steps);
    uint count = list.w[0].x;
    for (uint i = 0u; i < count; ++i) {
        uint at = 1u + 6u * i;
        uvec4 w0 = list.w[at], w1 = list.w[at + 1u], w2 = list.w[at + 2u];
        uvec4 w3 = list.w[at + 3u], w4 = list.w[at + 4u], w5 = list.w[at + 5u];
        uint code = w5.w;  // the same for every invocation: uniform control flow
        if ((code & STEP_SYNC) != 0u) {
            memoryBarrierBuffer();
            barrier();
        }
        uint family = (code >> STEP_FAMILY_SHIFT) & STEP_FAMILY_MASK, op = code & STEP_OP_MASK;
        View x = View(addr_make(w0.x, w0.y), w0.z, w0.w, w1.x, 0u);
        View y = View(addr_make(w1.z, w1.w), w2.x, w2.y, w2.z, 0u);
        View z = View(addr_make(w3.x, w3.y), w3.z, w3.w, w4.x, 0u);
        uint n = w4.z;
        vec4 q = uintBitsToFloat(uvec4(w4.w, w5.x, w5.y, w5.z));
        uint per = (code & STEP_VEC4) != 0u ? 4u : 1u;
        // One element loop for every kind of step (Stream::kBatchLoops and
        // kBatchTailLoops in src/vulkan/stream.hpp count the loops: keep them current).
        for (uint k = gl_LocalInvocationID.x * per; k < n; k += WG * per) {
            if (BATCH_LEVEL1 != BATCH_ABSENT && family == STEP_LEVEL1) {
                op = batch_op(BATCH_LEVEL1, op);
                if (per == 4u)
                    level1_vec4(op, x, y, k, n, q.x, q.y);
                else
                    level1_element(op, x, y, k, q.x, q.y);
            } else if (BATCH_UNARY != BATCH_ABSENT && family == STEP_UNARY) {
                unary_element(batch_op(BATCH_UNARY, op), x, y, k, q);  // never vec4: the host does not ask
            } else if (BATCH_BINARY != BATCH_ABSENT && family == STEP_BINARY) {
                op = batch_op(BATCH_BINARY, op);
                if (per == 4u)
                    binary_vec4(op, x, y, z, k, n);
                else
                    binary_element(op, x, y, z, k);
            } else if (BATCH_BACKWARD != BATCH_ABSENT && family == STEP_BACKWARD) {
                op = batch_op(BATCH_BACKWARD, op);
                if (per == 4u)
                    backward_vec4(op, x, y, z, k, n);
                else
                    backward_element(op, x, y, z, k);
            } else if (BATCH_BIAS != BATCH_ABSENT && family == STEP_BIAS) {
                add_bias_element(x, y, k);
            }
        }
    }
}

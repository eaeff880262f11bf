// Many small elementwise kernels in one dispatch. A dispatch has a fixed cost
// (lavapipe: ~30 µs, handing the grid to its thread pool and joining it; a
// GPU: a few µs of launch and drain), which dominates a kernel over a few
// thousand elements. The stream (src/vulkan/stream.cpp) therefore records runs
// of small level-1, unary, binary and bias kernels as steps of one dispatch of
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

// The step list: a 16-byte header (the step count, written by the host up to
// the submission of the command buffer), then one 96-byte step per kernel,
// struct ElementPush of src/vulkan/kernel.hpp:
//   View x, y, z (24 bytes each: address, rows, rstep, cstep, pad), n, a, b, c, d, code.
// Read as six 16-byte loads: on CPU implementations every load instruction is
// a loop over the lanes, whatever its width.
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer Steps { uvec4 w[]; };

uint64_t addr64(uint lo, uint hi) { return uint64_t(lo) | (uint64_t(hi) << 32); }

layout(push_constant) uniform Push {
    uint64_t steps;
} p;

const uint FAMILY_SHIFT = 8u, FAMILY_MASK = 15u;
const uint LEVEL1 = 1u, UNARY = 2u, BINARY = 3u, BIAS = 4u;
const uint VEC4_BIT = 1u << 12, SYNC_BIT = 1u << 13;

void main() {
    Steps list = Steps(p.steps);
    uint count = list.w[0].x;
    for (uint i = 0u; i < count; ++i) {
        uint at = 1u + 6u * i;
        uvec4 w0 = list.w[at], w1 = list.w[at + 1u], w2 = list.w[at + 2u];
        uvec4 w3 = list.w[at + 3u], w4 = list.w[at + 4u], w5 = list.w[at + 5u];
        uint code = w5.w;  // the same for every invocation: uniform control flow
        if ((code & SYNC_BIT) != 0u) {
            memoryBarrierBuffer();
            barrier();
        }
        uint family = (code >> FAMILY_SHIFT) & FAMILY_MASK, op = code & 255u;
        View x = View(addr64(w0.x, w0.y), w0.z, w0.w, w1.x, 0u);
        View y = View(addr64(w1.z, w1.w), w2.x, w2.y, w2.z, 0u);
        View z = View(addr64(w3.x, w3.y), w3.z, w3.w, w4.x, 0u);
        uint n = w4.z;
        vec4 q = uintBitsToFloat(uvec4(w4.w, w5.x, w5.y, w5.z));
        uint per = (code & VEC4_BIT) != 0u ? 4u : 1u;
        // One element loop for every kind of step (Stream::kBatchLoops and
        // kBatchTailLoops in src/vulkan/stream.hpp count the loops: keep them current).
        for (uint k = gl_LocalInvocationID.x * per; k < n; k += WG * per) {
            if (family == LEVEL1) {
                if (per == 4u)
                    level1_vec4(op, x, y, k, n, q.x, q.y);
                else
                    level1_element(op, x, y, k, q.x, q.y);
            } else if (family == UNARY) {
                unary_element(op, x, y, k, q);  // never vec4: the host does not ask
            } else if (family == BINARY) {
                if (per == 4u)
                    binary_vec4(op, x, y, z, k, n);
                else
                    binary_element(op, x, y, z, k);
            } else {
                add_bias_element(x, y, k);
            }
        }
    }
}

// sgd_step (optim.comp's OPTIM_SGD, the same float operations in the same
// order) with its operands read and written through the texel views of their
// memory blocks (push descriptors, Caps::texel_views; kernel.hpp's bindings):
// on lavapipe a buffer access is a loop over the lanes (~240 ns of processor
// time per vec4 of 8 lanes), a texel fetch or store one gather or scatter
// (~9 ns; docs/results.md, "lavapipe's GEMM through texel buffers"). The host
// runs it only where w, g and the velocity are dense, start on a multiple of
// four floats in their blocks and lie in blocks with texel views; four
// elements per invocation, the last invocation's 1-3 through the R32 views.
#version 450
#include "common.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0) uniform samplerBuffer g1;  // g: R32, R32G32B32A32
layout(set = 0, binding = 1) uniform samplerBuffer g4;
layout(set = 0, binding = 4, r32f) uniform imageBuffer w1;  // w
layout(set = 0, binding = 5, rgba32f) uniform imageBuffer w4;
layout(set = 0, binding = 6, r32f) uniform imageBuffer v1;  // the velocity
layout(set = 0, binding = 7, rgba32f) uniform imageBuffer v4;

// struct OptimPush of src/vulkan/kernels_optim.cpp: each operand's first
// word is its first element's float index in its block (a multiple of 4),
// its last the scalar (lr, μ, λ, nesterov for w, g, s1, s2).
struct Operand {
    uint at, unused0, rows, rstep, cstep;
    float q;
};
layout(push_constant) uniform Push {
    Operand w;
    Operand g;
    Operand s1;
    Operand s2;
    Operand s3;
    uint n;
    float q5;
} p;

void update(inout vec4 w, vec4 g, inout vec4 v) {  // optim.comp's update for OPTIM_SGD
    vec4 gg = g + p.s1.q * w;
    v = p.g.q * v + gg;
    w = w - p.w.q * (p.s2.q != 0.0 ? gg + p.g.q * v : v);
}

void main() {
    uint k = global_index(WG) * 4u;
    if (k >= p.n) return;
    if (p.n - k < 4u) {  // the last 1-3 elements
        for (; k < p.n; ++k) {
            int iw = int(p.w.at + k), iv = int(p.s1.at + k);
            vec4 w = vec4(imageLoad(w1, iw).x), v = vec4(imageLoad(v1, iv).x);
            update(w, vec4(texelFetch(g1, int(p.g.at + k)).x), v);
            imageStore(v1, iv, v);
            imageStore(w1, iw, w);
        }
        return;
    }
    int iw = int((p.w.at + k) >> 2), iv = int((p.s1.at + k) >> 2);
    vec4 w = imageLoad(w4, iw), v = imageLoad(v4, iv);
    update(w, texelFetch(g4, int((p.g.at + k) >> 2)), v);
    imageStore(v4, iv, v);
    imageStore(w4, iw, w);
}

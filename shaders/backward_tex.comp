// backward.comp's four-element path (delta ← da ∘ act′(x), the same float
// operations) with its operands read and written through the texel views of
// their memory blocks (Caps::texel_views, kernel.hpp's bindings; see
// optim_tex.comp for why): da at bindings 0/1, x at 2/3, delta at 4/5. The
// host runs it only where all three are dense from a multiple of four floats
// in blocks with texel views; the push block is ElementPush with each view's
// first word its first element's float index in its block.
#version 450
#include "common.glsl"
#include "ops.glsl"

layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint OP = 0;  // vela::Act
layout(local_size_x_id = 0) in;

layout(set = 0, binding = 0) uniform samplerBuffer da1;
layout(set = 0, binding = 1) uniform samplerBuffer da4;
layout(set = 0, binding = 2) uniform samplerBuffer x1;
layout(set = 0, binding = 3) uniform samplerBuffer x4;
layout(set = 0, binding = 4, r32f) uniform writeonly imageBuffer d1;
layout(set = 0, binding = 5, rgba32f) uniform writeonly imageBuffer d4;

struct TexView {
    uint at, unused0, rows, rstep, cstep, pad;
};
layout(push_constant) uniform Push {
    TexView x;  // da
    TexView y;  // a or z
    TexView z;  // delta
    uint n;
} p;

void main() {
    uint k = global_index(WG) * 4u;
    if (k >= p.n) return;
    if (p.n - k < 4u) {  // the last 1-3 elements
        for (; k < p.n; ++k)
            imageStore(d1, int(p.z.at + k),
                       vec4(texelFetch(da1, int(p.x.at + k)).x * act_prime_f(OP, texelFetch(x1, int(p.y.at + k)).x)));
        return;
    }
    vec4 g = texelFetch(da4, int((p.x.at + k) >> 2)), v = texelFetch(x4, int((p.y.at + k) >> 2));
    imageStore(d4, int((p.z.at + k) >> 2),
               g * vec4(act_prime_f(OP, v.x), act_prime_f(OP, v.y), act_prime_f(OP, v.z), act_prime_f(OP, v.w)));
}

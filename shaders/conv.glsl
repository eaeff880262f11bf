// The push block and helpers of the convolution and pooling shaders (im2col,
// col2im, pool, pool_backward): three views and the geometry of core/conv.hpp,
// mirroring struct ConvPush in src/vulkan/kernels_conv.cpp (120 bytes).
// Requires common.glsl.
//
// Bounded loops: a driver may end a loop after 65,535 iterations (lavapipe
// does, silently), so a walk over up to 2^24 window positions (core/ops_conv.cpp's
// limit per dimension) is two nested loops of at most CHUNK iterations each.
#define CHUNK 4096u
#define BOUNDED_FOR(i, lo, hi) \
    for (uint i##_0 = (lo); i##_0 < (hi); i##_0 += CHUNK) \
        for (uint i = i##_0; i < min((hi), i##_0 + CHUNK); ++i)

layout(push_constant) uniform Push {
    View a;  // the input: x (im2col, pool), cols (col2im), dy (pool_backward)
    View b;  // idx (maxpool, maxpool_backward); unused otherwise
    View c;  // the output: cols (im2col), x (col2im), y (pool), dx (pool_backward)
    uint ch, h, w;   // channels, image height and width
    uint kh, kw;     // window
    uint sh, sw;     // stride
    uint ph, pw;     // padding
    uint oh, ow;     // output positions
    uint n;          // samples
} p;

// The output positions o whose window (starting at o·s − pad) holds pixel i of
// an axis: o in [lo, hi), empty when hi ≤ lo.
void holding(uint i, uint k, uint s, uint pad, uint outs, out uint lo, out uint hi) {
    uint t = i + pad;                                  // o·s ≤ t and o·s > t − k
    hi = min(t / s + 1u, outs);
    lo = t + 1u > k ? (t + 1u - k + s - 1u) / s : 0u;  // o·s ≥ t − k + 1
}

// The window of output o on an axis, clipped to the image: [lo, hi).
void window(uint o, uint k, uint s, uint pad, uint size, out uint lo, out uint hi) {
    int start = int(o * s) - int(pad);
    lo = uint(max(start, 0));
    hi = uint(min(start + int(k), int(size)));
}

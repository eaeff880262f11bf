// The push block and helpers of the convolution and pooling shaders (im2col,
// col2im, pool, pool_backward): three views, the geometry of core/conv.hpp and
// the block of window offsets (or covering outputs) this pass handles,
// mirroring struct ConvPush in src/vulkan/kernels_conv.cpp (128 bytes).
// Requires common.glsl and udiv.glsl.
//
// Bounded loops: llvmpipe ends every loop of an invocation once its loops
// together have run 65,535 iterations, silently. A kernel that walks a window
// walks one block of at most by × bx positions per dispatch (by·bx ≤ 4,096,
// chosen by the host), and the host records as many passes as the window
// needs, each carrying the partial result in the output.
layout(push_constant) uniform Push {
    View a;  // the input: x (im2col, pool), cols (col2im), dy (pool_backward)
    View b;  // idx (maxpool, maxpool_backward); unused otherwise
    View c;  // the output: cols (im2col), x (col2im), y (pool), dx (pool_backward)
    uint ch, h, w;   // channels, image height and width
    uint kh, kw;     // window
    uint sh, sw;     // stride
    uint ph, pw;     // padding
    uint n;          // samples
    uint y0, by;     // this pass: offsets y0 .. y0 + by − 1 (window rows, or covering outputs)
    uint x0, bx;     //            offsets x0 .. x0 + bx − 1
} p;

uint out_h() { return udiv(p.h + 2u * p.ph - p.kh, p.sh) + 1u; }
uint out_w() { return udiv(p.w + 2u * p.pw - p.kw, p.sw) + 1u; }
bool first_pass() { return p.y0 == 0u && p.x0 == 0u; }

// The output positions o whose window (starting at o·s − pad) holds pixel i of
// an axis: o in [lo, hi), empty when hi ≤ lo.
void holding(uint i, uint k, uint s, uint pad, uint outs, out uint lo, out uint hi) {
    uint t = i + pad;                                  // o·s ≤ t and o·s > t − k
    hi = min(udiv(t, s) + 1u, outs);
    lo = t + 1u > k ? udiv(t + 1u - k + s - 1u, s) : 0u;  // o·s ≥ t − k + 1
}

// [lo, hi) ∩ [lo + first, lo + first + count): this pass's part of a range.
void block(inout uint lo, inout uint hi, uint first, uint count) {
    uint a = lo + first;
    lo = min(a, hi);
    hi = min(hi, a + count);
}

// Window offsets [first, first + count) ∩ [0, k) of output o on an axis,
// clipped to the image: pixels [lo, hi).
void window(uint o, uint k, uint s, uint pad, uint size, uint first, uint count, out uint lo, out uint hi) {
    int start = int(o * s) - int(pad) + int(first);
    lo = uint(clamp(start, 0, int(size)));
    hi = uint(clamp(start + int(min(count, k - first)), 0, int(size)));
}

// Four consecutive elements of one column per invocation (im2col): its stores
// are one 16-byte run, written as one vec4 where the view is dense along the
// column and the run 16-byte aligned (run4), one by one otherwise. On CPU
// drivers each buffer access is a per-lane step, so this quarters the stores.
// (The gathering kernels, col2im and pool_backward, were slower so on
// lavapipe: their per-element loops have per-lane bounds.)
layout(buffer_reference, buffer_reference_align = 16) buffer V4 { vec4 v; };

// Whether the four elements of v from buffer index `at` (logical row r of
// `rows`) are one aligned vec4.
bool run4(View v, uint at, uint r, uint rows) {
    return v.rstep == 1u && rows - r >= 4u && ((v.addr.x >> 2) + at) % 4u == 0u;
}
// Stores x[0 .. min(4, rows − r)) at logical rows r, r + 1, ... of v's column
// from buffer index at.
void store4(View v, uint at, uint r, uint rows, vec4 x) {
    if (run4(v, at, r, rows)) {
        V4(addr_f32(v.addr, at)).v = x;
    } else {
        for (uint i = 0u; i < 4u && r + i < rows; ++i) store_f32(v.addr, at + i * v.rstep, x[i]);
    }
}

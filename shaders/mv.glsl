// y ← α·op(a)·x + β·y for an m×n op(a); y is not read when β = 0.
// MV_ROWS: one invocation per row of op(a), no shared memory and no barrier
//   (the choice on CPU implementations, and on GPUs when a row's elements
//   are strided, so neighbouring invocations read neighbouring addresses).
// MV_TREE: one workgroup per row with a tree reduction in shared memory (for
//   a transposed a on a GPU, whose rows are contiguous). No float atomics.
// Workgroups beyond the x limit continue along y: id = x + y·countx.
// Loops run over n: the host splits a long row into passes of at most
// kMvChunk columns (the later ones accumulating with β = 1), so no loop runs
// more than kMvChunk / 4 iterations (drivers may end a loop after 65,535).
// The body of mv.comp and mv_tex.comp (MV_TEXEL: a, x and y through the
// texel views of their memory blocks, MV_ROWS only; see mv_tex.comp).
#include "gemm.glsl"

layout(constant_id = 0) const uint WG = 64;  // a power of two for MV_TREE
layout(constant_id = 1) const uint TA = 0;
layout(constant_id = 2) const uint MODE = MV_ROWS;  // vk::Mv (src/vulkan/modes.def)
layout(local_size_x_id = 0) in;

layout(push_constant) uniform MvPush {
    uvec2 a, x, y;
    uint m, n;
    uint lda, incx, incy;
    float alpha, beta;
} p;

shared float red[MODE == MV_TREE ? WG : 1];

#ifdef MV_TEXEL
// a at binding 0, x at 2 (R32 uniform texel buffers), y at 4 (R32 storage);
// the low word of each operand is its element (0, 0)'s float index in its block.
layout(set = 0, binding = 0) uniform samplerBuffer ta;
layout(set = 0, binding = 2) uniform samplerBuffer tx;
layout(set = 0, binding = 4, r32f) uniform imageBuffer ty;
float load_a(uint i, uint j) { return texelFetch(ta, int(p.a.x + (TA != 0 ? j + i * p.lda : i + j * p.lda))).x; }
float load_x(uint j) { return texelFetch(tx, int(p.x.x + j * p.incx)).x; }
float load_y(uint i) { return imageLoad(ty, int(p.y.x + i * p.incy)).x; }
void store_y(uint i, float v) { imageStore(ty, int(p.y.x + i * p.incy), vec4(v)); }
#else
float load_a(uint i, uint j) {
    return gemm_load(p.a, TA != 0 ? j + i * p.lda : i + j * p.lda);
}
float load_x(uint j) { return gemm_load(p.x, j * p.incx); }
float load_y(uint i) { return gemm_load(p.y, i * p.incy); }
void store_y(uint i, float v) { gemm_store(p.y, i * p.incy, v); }
#endif

void finish(uint i, float acc) {
    float v = p.alpha * acc;
    if (p.beta != 0.0) v += p.beta * load_y(i);
    store_y(i, v);
}

void main() {
    uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (MODE == MV_ROWS) {
        uint i = group * WG + gl_LocalInvocationID.x;
        if (i >= p.m) return;
        // Four independent sums hide the add latency.
        vec4 s = vec4(0.0);
        uint j = 0;
        for (; j + 4 <= p.n; j += 4)
            s += vec4(load_a(i, j), load_a(i, j + 1), load_a(i, j + 2), load_a(i, j + 3)) *
                 vec4(load_x(j), load_x(j + 1), load_x(j + 2), load_x(j + 3));
        for (; j < p.n; j++) s.x += load_a(i, j) * load_x(j);
        finish(i, (s.x + s.y) + (s.z + s.w));
    } else {
        uint i = group;
        if (i >= p.m) return;  // uniform over the workgroup: no barrier is skipped by part of it
        uint t = gl_LocalInvocationID.x;
        float s = 0.0;
        for (uint j = t; j < p.n; j += WG) s += load_a(i, j) * load_x(j);
        red[t] = s;
        barrier();
        for (uint h = WG / 2; h > 0; h /= 2) {
            if (t < h) red[t] += red[t + h];
            barrier();
        }
        if (t == 0) finish(i, red[0]);
    }
}

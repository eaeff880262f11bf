#version 450
// a ← α·x·yᵀ + a, a any m×n view (row and column steps). Each invocation
// updates CB consecutive columns of one row, loading α·x(i) once.
// Workgroups beyond the y limit are split by the host.
#include "gemm.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint CB = 8;
layout(local_size_x_id = 0) in;

layout(push_constant) uniform RkPush {
    uvec2 x, y, a;
    uint m, n;
    uint incx, incy;
    uint ars, acs;
    float alpha;
} p;

void main() {
    uint i = gl_WorkGroupID.x * WG + gl_LocalInvocationID.x;
    if (i >= p.m) return;
    float xi = p.alpha * gemm_load(p.x, i * p.incx);
    uint j0 = gl_WorkGroupID.y * CB;
    [[unroll]] for (uint c = 0; c < CB; c++) {
        uint j = j0 + c;
        if (j < p.n) {
            uint e = i * p.ars + j * p.acs;
            gemm_store(p.a, e, fma(xi, gemm_load(p.y, j * p.incy), gemm_load(p.a, e)));
        }
    }
}

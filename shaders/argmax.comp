// idx(j) ← 1 + the first row index of the largest value in column j (NaN
// loses to any number, −Inf included); with NEGATE, of the smallest (argmin: the largest of −x, the
// negation exact and a NaN still a NaN). One invocation per column, as
// softmax, for columns of at most kColumnRows rows; longer ones go through
// colstats.comp and colapply.comp.
#version 450
#include "common.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint NEGATE = 0;  // 1: argmin
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    View x;
    View idx;  // a cols-vector, element j at addr + j·rstep
    uint rows;
    uint cols;
} p;

void main() {
    uint j = global_index(WG);
    if (j >= p.cols) return;
    // The first number starts the search, even −Inf (a NaN compares false
    // with everything): [NaN, −Inf] gives row 2, as on the cpu. NONE: no
    // number yet; a column of NaN gives row 1.
    const uint NONE = 0xffffffffu;
    float best = uintBitsToFloat(0xff800000u);
    uint at = NONE;
    for (uint i = 0; i < p.rows; ++i) {
        float v = load_f32(p.x.addr, view_index2(p.x, i, j));
        if (NEGATE != 0) v = -v;
        if (v > best || (v == best && at == NONE)) {
            best = v;
            at = i;
        }
    }
    store_f32(p.idx.addr, j * p.idx.rstep, float((at == NONE ? 0u : at) + 1u));  // idx is float32 (core/ops.cpp)
}

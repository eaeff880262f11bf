// The embedding's backward, a scatter-add without float atomics:
//   dE(i, v) += Σ dy(i, j) over the tokens j of this chunk with idx[j] = v + 1,
// one invocation per element (i, v) of dE, summing in token order, so every
// run gives the same bits. The host dispatches the tokens in chunks of at most
// kChunk (src/vulkan/kernels_sequence.cpp): the loop stays far below the
// 65,535 iterations a driver may allow. An index that is not an integer in
// 1..vocab adds nothing, and invocation 0 records its position in the call's
// status word (src/core/index_check.hpp).
#version 450
#include "common.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    View dy;     // rows × n
    View dE;     // rows × vocab
    View idx;    // n-vector: element j at addr + j·rstep
    uint j0;     // the chunk's first token
    uint jn;     // tokens in the chunk
    uint rows;
    uint vocab;
    Addr status;
} p;

void main() {
    uint k = global_index(WG);
    if (k >= p.rows * p.vocab) return;
    uint v = k / p.rows;
    uint i = k - v * p.rows;
    float s = 0.0;
    for (uint t = 0u; t < p.jn; ++t) {
        uint j = p.j0 + t;
        float fc = load_f32(p.idx.addr, j * p.idx.rstep);
        if (!index_ok(fc, p.vocab)) {
            if (k == 0u) report_bad_index(p.status, j);
        } else if (uint(fc) - 1u == v) {
            s += load_f32(p.dy.addr, view_index2(p.dy, i, j));
        }
    }
    uint e = view_index2(p.dE, i, v);
    store_f32(p.dE.addr, e, load_f32(p.dE.addr, e) + s);
}

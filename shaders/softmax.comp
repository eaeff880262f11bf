// Per-column softmax, stable (the column maximum is subtracted before exp),
// and its fused form with the cross-entropy loss and gradient:
//   loss(j) = −log softmax(z)(label(j), j),  dz = (softmax(z) − onehot(label)) · scale.
// One invocation per column: columns are short (10 classes for MNIST) and
// this needs no barriers, which are costly on CPU-based devices. Each
// column is read completely before it is written, so y (or dz) may be x (z).
// The host uses this shader for columns of at most kColumnRows rows (its
// loops then run at most 4·kColumnRows iterations; drivers may end a loop
// after 65,535); longer columns go through colstats.comp and colapply.comp.
#version 450
#include "common.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint XENT = 0;       // 0 softmax, 1 softmax + cross-entropy
layout(constant_id = 2) const uint LABELS_U8 = 0;  // xent: labels are uint8
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    View x;       // rows×cols logits
    View y;       // softmax, or dz
    View labels;  // xent: a cols-vector of 1-based classes, element j at addr + j·rstep
    Addr loss;      // xent: a cols-vector (0: not wanted)
    uint loss_step;
    uint rows;
    uint cols;
    float scale;
    Addr status;    // xent: the call's status word (src/core/index_check.hpp)
} p;

void main() {
    uint j = global_index(WG);
    if (j >= p.cols) return;
    // A column holding a NaN or +Inf, or only −Inf, is NaN in every row (what
    // the cpu's IEEE arithmetic gives: exp(NaN), Inf − Inf). Decided from
    // the bits, as the ±Inf arithmetic of SwiftShader gave [NaN; 0].
    float m = uintBitsToFloat(0xff800000u);  // −inf
    bool poisoned = false;
    for (uint i = 0; i < p.rows; ++i) {
        float v = load_f32(p.x.addr, view_index2(p.x, i, j));
        poisoned = poisoned || nan_or_pinf_bits(v);
        m = v > m ? v : m;
    }
    poisoned = poisoned || floatBitsToUint(m) == 0xff800000u;
    float s = 0.0;
    for (uint i = 0; i < p.rows; ++i) s += exp(load_f32(p.x.addr, view_index2(p.x, i, j)) - m);
    float inv = 1.0 / s;
    float nan = uintBitsToFloat(0x7fc00000u);
    if (XENT == 0) {
        for (uint i = 0; i < p.rows; ++i) {
            if (poisoned) {
                store_f32(p.y.addr, view_index2(p.y, i, j), nan);
                continue;
            }
            uint ix = view_index2(p.x, i, j);
            store_f32(p.y.addr, view_index2(p.y, i, j), exp(load_f32(p.x.addr, ix) - m) * inv);
        }
        return;
    }
    float fl = LABELS_U8 != 0 ? load_u8(p.labels.addr, j * p.labels.rstep)
                              : load_f32(p.labels.addr, j * p.labels.rstep);
    // A label that is not a class index: its position goes to the status word
    // (the host raises the error) and its column of loss and dz is NaN.
    if (!index_ok(fl, p.rows) || poisoned) {
        if (!poisoned) report_bad_index(p.status, j);
        if (!addr_null(p.loss)) store_f32(p.loss, j * p.loss_step, nan);
        for (uint i = 0; i < p.rows; ++i) store_f32(p.y.addr, view_index2(p.y, i, j), nan);
        return;
    }
    uint label = uint(fl) - 1u;
    if (!addr_null(p.loss)) {
        float zl = load_f32(p.x.addr, view_index2(p.x, label, j));
        store_f32(p.loss, j * p.loss_step, -(zl - m - log(s)));
    }
    for (uint i = 0; i < p.rows; ++i) {
        uint ix = view_index2(p.x, i, j);
        float sm = exp(load_f32(p.x.addr, ix) - m) * inv;
        store_f32(p.y.addr, view_index2(p.y, i, j), (sm - (i == label ? 1.0 : 0.0)) * p.scale);
    }
}

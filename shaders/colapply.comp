// The last pass of softmax, softmax_xent and argmax over long columns, from
// the per-column partial colstats.comp left (see there): no loop at all.
//   COLAPPLY_SOFTMAX: y(i, j) = exp(x(i, j) − m_j) · (1 / s_j), one invocation per element
//   COLAPPLY_XENT:    dz(i, j) = (softmax(z)(i, j) − [i = label_j]) · scale, and the
//                     loss −(z(label_j, j) − m_j − log s_j) (a bad label: NaN, and its
//                     position to the call's status word, src/core/index_check.hpp)
//   COLAPPLY_ARGMAX:  idx(j) = 1 + the best row of column j, one invocation per column
// The same expressions as softmax.comp and argmax.comp, so a column gives the
// same values whichever path the host took. y (dz) may be x (z): each element
// is read and written by one invocation, after the statistics are complete.
#version 450
#include "common.glsl"
#include "modes.glsl"

layout(constant_id = 0) const uint WG = 64;
layout(constant_id = 1) const uint OP = COLAPPLY_SOFTMAX;  // COLAPPLY_*: vk::ColApply (src/vulkan/modes.def)
layout(constant_id = 2) const uint U8 = 0;  // xent: labels are uint8; argmax: idx is uint8
layout(local_size_x_id = 0) in;

layout(push_constant) uniform Push {
    View x;        // rows×cols logits
    View y;        // softmax, dz, or (argmax) the cols-vector idx: element j at addr + j·rstep
    View labels;   // xent: element j at addr + j·rstep
    uvec2 part;    // one (m, s) or (value, row) pair per column
    uvec2 loss;    // xent: a cols-vector (0: not wanted)
    uint loss_step;
    uint rows;
    uint cols;
    float scale;
    uvec2 status;  // xent: the call's status word (src/core/index_check.hpp)
} p;

void main() {
    uint k = global_index(WG);
    if (OP == COLAPPLY_ARGMAX) {
        if (k >= p.cols) return;
        uint at = U32(addr_f32(p.part, k * 2u + 1u)).v;
        float v = float((at == 0xffffffffu ? 0u : at) + 1u);
        if (U8 != 0)
            store_u8(p.y.addr, k * p.y.rstep, v);
        else
            store_f32(p.y.addr, k * p.y.rstep, v);
        return;
    }
    if (k >= p.rows * p.cols) return;
    uint j = k / p.rows;
    uint i = k - j * p.rows;
    float m = uintBitsToFloat(U32(addr_f32(p.part, j * 2u)).v);
    float s = uintBitsToFloat(U32(addr_f32(p.part, j * 2u + 1u)).v);
    float inv = 1.0 / s;
    float z = load_f32(p.x.addr, view_index2(p.x, i, j));
    float sm = exp(z - m) * inv;
    // A column with a NaN or +Inf (colstats made s NaN), or only −Inf: NaN
    // everywhere, as softmax.comp (decided from the bits, not the arithmetic).
    bool poisoned = nan_bits(s) || floatBitsToUint(m) == 0xff800000u;
    if (poisoned) sm = uintBitsToFloat(0x7fc00000u);
    if (OP == COLAPPLY_SOFTMAX) {
        store_f32(p.y.addr, view_index2(p.y, i, j), sm);
        return;
    }
    float fl = U8 != 0 ? load_u8(p.labels.addr, j * p.labels.rstep) : load_f32(p.labels.addr, j * p.labels.rstep);
    // A label that is not a class index: its position goes to the status word
    // (the host raises the error) and its column of loss and dz is NaN.
    if (!index_ok(fl, p.rows)) {
        float nan = uintBitsToFloat(0x7fc00000u);
        if (i == 0u) {
            report_bad_index(p.status, j);
            if (!addr_null(p.loss)) store_f32(p.loss, j * p.loss_step, nan);
        }
        store_f32(p.y.addr, view_index2(p.y, i, j), nan);
        return;
    }
    uint label = uint(fl) - 1u;
    if (!addr_null(p.loss) && i == label) store_f32(p.loss, j * p.loss_step, poisoned ? sm : -(z - m - log(s)));
    store_f32(p.y.addr, view_index2(p.y, i, j), (sm - (i == label ? 1.0 : 0.0)) * p.scale);
}

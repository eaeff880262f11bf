// Elementwise kernels: unary functions (shaders/unary.comp), binary
// operations (binary.comp), the fused backward activation (backward.comp), the bias broadcast (add_bias.comp) and the column
// gather that builds batches from a data set on the device (gather_cols.comp).
#include <cstddef>

#include "core/index_check.hpp"
#include "vulkan/device.hpp"
#include "vulkan/texel.hpp"

namespace vela::vk {

namespace {

// gather_cols.comp's specialization constants.
struct GatherSpec {
    uint32_t wg, src_u8, vec4;
};

// One invocation per element of `out` (per four with vec4).
void record(VulkanDevice& dev, const char* shader, const char* label, ElementPush& p, SpecConstants spec,
            Operands reads, Operands writes, bool vec4 = false, uint32_t step = 0) {
    if (p.n == 0) return;
    Dispatch d{.shader = shader, .push = &p, .push_size = sizeof p, .spec = spec, .reads = reads, .writes = writes,
               .label = label, .step = step};
    dev.grid(vec4 ? (uint64_t(p.n) + 3) / 4 : p.n, dev.wg(), d.groups);
    dev.dispatch(d);
}

// z ← op(x, y), elementwise over one size: binary.comp and backward.comp, whose
// specialisation is (workgroup size, op, vec4) and whose batch step is kind | op.
void record_xyz(VulkanDevice& dev, const char* shader, const char* label, uint32_t op, uint32_t kind,
                const Matrix& x, const Matrix& y, const Matrix& z) {
    ElementPush p;
    p.x = dev.view(x);
    p.y = dev.view(y);
    p.z = dev.view(z);
    p.n = uint32_t(z.size());
    bool vec4 = dense16(x, p.x) && dense16(y, p.y) && dense16(z, p.z) &&
                (kind != step::binary || op <= uint32_t(Binary::sub));  // binary: four lanes for the arithmetic rows only

    const OpSpec spec{.wg = dev.wg(), .op = op, .vec4 = vec4};
    record(dev, shader, label, p, spec, {&x, &y}, {&z}, vec4, kind | op | (vec4 ? step::vec4 : 0));
}

}  // namespace

void VulkanDevice::unary(Unary op, const Matrix& x, const Matrix& y, const float* params) {
    ElementPush p;
    p.x = view(x);
    p.y = view(y);
    p.n = uint32_t(y.size());
    if (params) {
        p.a = params[0];
        p.b = params[1];
        p.c = params[2];
        p.d = params[3];
    }
    bool vec4 = dense16(x, p.x) && dense16(y, p.y);
    const OpSpec spec{.wg = wg(), .op = uint32_t(op), .vec4 = vec4};
    // (batch.comp runs unary steps one element per invocation: four copies of every function cost more than they save)
    record(*this, "unary", unary_name(op), p, spec, {&x}, {&y}, vec4, step::unary | uint32_t(op));
}

void VulkanDevice::binary(Binary op, const Matrix& a, const Matrix& b, const Matrix& c) {
    const bool same = a.rows == c.rows && a.cols == c.cols && b.rows == c.rows && b.cols == c.cols;
    if (same) return record_xyz(*this, "binary", binary_name(op), uint32_t(op), step::binary, a, b, c);
    // Broadcast (device.hpp): each operand indexed with c's rows and a step of
    // 0 along a dimension it spans once; one element per invocation.
    auto bview = [&](const Matrix& m) {
        View v = view(m);
        v.rows = uint32_t(c.rows);
        v.rstep = m.rows == 1 && c.rows != 1 ? 0 : uint32_t(m.row_step());
        v.cstep = m.cols == 1 && c.cols != 1 ? 0 : uint32_t(m.col_step());
        return v;
    };
    ElementPush p;
    p.x = bview(a);
    p.y = bview(b);
    p.z = view(c);
    p.n = uint32_t(c.size());
    const OpSpec spec{.wg = wg(), .op = uint32_t(op), .vec4 = 0};
    record(*this, "binary", binary_name(op), p, spec, {&a, &b}, {&c}, false, step::binary | uint32_t(op));
}

void VulkanDevice::act_backward(Act act, const Matrix& da, const Matrix& x, const Matrix& delta) {
    // Through the texel views where the device and all three operands allow
    // it (backward_tex.comp; not batched: batch.comp reads by address).
    if (texel_kernels(caps()) && texel_dense4(da) && texel_dense4(x) && texel_dense4(delta) &&
        delta.size() > 0) {
        ElementPush p;
        p.x.addr = texel_index(da), p.y.addr = texel_index(x), p.z.addr = texel_index(delta);
        p.n = uint32_t(delta.size());
        const OpSpec spec{.wg = wg(), .op = uint32_t(act), .vec4 = 1};
        Dispatch d{.shader = "backward_tex", .push = &p, .push_size = sizeof p, .spec = spec, .reads = {&da, &x},
                   .writes = {&delta}, .label = act_backward_name(act)};
        auto &ba = buffer(da).alloc, &bx = buffer(x).alloc, &bd = buffer(delta).alloc;
        d.texels[0] = ba.texel1, d.texels[1] = ba.texel4, d.texels[2] = bx.texel1, d.texels[3] = bx.texel4;
        d.texels[4] = bd.texel_store, d.texels[5] = bd.texel_store4;
        grid((uint64_t(p.n) + 3) / 4, wg(), d.groups);
        count_texel_kernel();
        return dispatch(d);
    }
    record_xyz(*this, "backward", act_backward_name(act), uint32_t(act), step::backward, da, x, delta);
}

void VulkanDevice::add_bias(const Matrix& b, const Matrix& y) {
    ElementPush p;
    p.x = view(b);
    p.x.rstep = uint32_t(b.inc());
    p.y = view(y);
    p.y.rows = uint32_t(y.rows);
    p.n = uint32_t(y.size());
    const WgSpec spec{.wg = wg()};
    record(*this, "add_bias", "add_bias", p, spec, {&b, &y}, {&y}, false, step::bias);
}

void VulkanDevice::gather_cols(const Matrix& src, const Matrix& idx, const Matrix& dst, float scale) {
    ElementPush p;
    p.x = view(src);
    p.x.rows = uint32_t(src.cols);  // the shader's bound on the column numbers in idx
    p.y = view(idx);
    p.y.rstep = uint32_t(idx.inc());
    p.z = view(dst);
    p.z.rows = uint32_t(dst.rows);
    p.n = uint32_t(dst.size());
    p.a = scale;
    // Four rows per invocation (gather_cols.comp, VEC4) where dst is dense and
    // 16-byte aligned in groups of 4 rows, and each group of src lies in one
    // aligned 16-byte vector (float) or 32-bit word (uint8).
    const bool u8 = src.dtype() == DType::u8;
    const uint64_t src_align = u8 ? 4 : 16;
    const bool vec4 = dense16(dst, p.z) && dst.rows % 4 == 0 && src.row_step() == 1 && src.col_step() % 4 == 0 &&
                      p.x.addr % src_align == 0;
    const GatherSpec spec{.wg = wg(), .src_u8 = u8, .vec4 = vec4};
    // The indices' contract, checked by the kernel (core/index_check.hpp): the
    // stream writes the call's status word address over b and c (gather_cols.comp).
    const IndexCheck check{"gather_cols", "idx", "a column index of src", uint64_t(src.cols)};
    if (p.n == 0) return;
    Dispatch d{.shader = "gather_cols", .push = &p, .push_size = sizeof p, .spec = spec, .reads = {&src, &idx},
               .writes = {&dst}, .label = "gather_cols", .check = &check,
               .check_at = offsetof(ElementPush, b)};
    // Through the texel views (gather_cols_tex.comp) where the VEC4 path
    // applies and every operand's block has them, src and dst from a texel's start.
    auto& bs = buffer(src).alloc;
    const uint64_t src_at = u8 ? bs.offset + uint64_t(src.offset) : texel_index(src);
    if (vec4 && texel_kernels(caps()) && bs.texel4 && buffer(idx).alloc.texel1 &&
        texel_dense4(dst) && src_at % 4 == 0) {
        p.x.addr = src_at, p.y.addr = texel_index(idx), p.z.addr = texel_index(dst);
        d.shader = "gather_cols_tex";
        d.texels[0] = buffer(idx).alloc.texel1, d.texels[1] = bs.texel4, d.texels[2] = bs.texel_u8x4;
        d.texels[5] = buffer(dst).alloc.texel_store4;
        count_texel_kernel();
    }
    grid(vec4 ? p.n / 4 : p.n, wg(), d.groups);
    dispatch(d);
}

}  // namespace vela::vk

// Convolution and pooling kernels: im2col (shaders/im2col.comp), col2im
// (col2im.comp), max and average pooling (pool.comp) and their backward steps
// (pool_backward.comp; pool_scatter.comp for max pooling whose windows do not
// overlap), and the layout moves around a convolution's GEMM (images.comp).
// One invocation per output element (four for im2col; one per window for
// pool_scatter), gathering, so no two invocations write one element and no
// atomics are needed; loops over a window
// are bounded: each dispatch walks a block of at most kBlock window positions
// and a large window takes several passes (shaders/conv.glsl).
#include <algorithm>

#include "vulkan/device.hpp"

namespace vela::vk {

namespace {

// Mirrors the push block of shaders/conv.glsl.
struct ConvPush {
    View a, b, c;
    uint32_t ch = 0, h = 0, w = 0, kh = 0, kw = 0, sh = 0, sw = 0, ph = 0, pw = 0, n = 0;
    uint32_t y0 = 0, by = 0, x0 = 0, bx = 0;  // this pass's block of offsets
};
static_assert(sizeof(ConvPush) == 128);  // the least maxPushConstantsSize Vulkan allows

// Window positions one invocation walks in one dispatch: with the loop over
// the block's rows, at most 2·kBlock loop iterations, far below the 65,535
// after which llvmpipe ends an invocation's loops.
constexpr uint64_t kBlock = 4096;

// Mirrors the push block of shaders/images.comp.
struct ImagesPush {
    View u, b, y;
    uint32_t ch = 0, positions = 0, n = 0;
};
static_assert(sizeof(ImagesPush) == 88);

ConvPush conv_push(const ConvGeom& g, int64_t n) {
    ConvPush p;
    p.ch = uint32_t(g.c), p.h = uint32_t(g.h), p.w = uint32_t(g.w);
    p.kh = uint32_t(g.kh), p.kw = uint32_t(g.kw), p.sh = uint32_t(g.sh), p.sw = uint32_t(g.sw);
    p.ph = uint32_t(g.ph), p.pw = uint32_t(g.pw);
    p.n = uint32_t(n);
    return p;
}

// pool.comp's and pool_backward.comp's MODE: vk::Pooling (src/vulkan/modes.def).
constexpr uint32_t kMax = uint32_t(Pooling::max), kAverage = uint32_t(Pooling::average);

void go(VulkanDevice& dev, const char* shader, const char* label, const void* push, uint32_t push_size,
        uint64_t invocations, uint32_t mode, Operands reads, Operands writes) {
    if (invocations == 0) return;
    const ModeSpec spec{.wg = dev.wg(), .mode = mode};
    Dispatch d{.shader = shader, .push = push, .push_size = push_size, .spec = spec, .reads = reads,
               .writes = writes, .label = label};
    dev.grid(invocations, dev.wg(), d.groups);
    dev.dispatch(d);
}

// Records one pass per block of an ey × ex range of offsets (window offsets,
// or the outputs covering a pixel), blocks of at most kBlock positions.
void passes(VulkanDevice& dev, ConvPush& p, uint64_t ey, uint64_t ex, const char* shader, const char* label,
            uint64_t invocations, uint32_t mode, Operands reads, Operands writes) {
    const uint64_t bx = std::min(ex, kBlock), by = std::min(ey, std::max<uint64_t>(1, kBlock / bx));
    p.by = uint32_t(by), p.bx = uint32_t(bx);
    for (uint64_t y0 = 0; y0 < ey; y0 += by)
        for (uint64_t x0 = 0; x0 < ex; x0 += bx) {
            p.y0 = uint32_t(y0), p.x0 = uint32_t(x0);
            go(dev, shader, label, &p, sizeof p, invocations, mode, reads, writes);
        }
}

// Invocations of a kernel that writes four rows of a column of m each
// (im2col.comp).
uint64_t per4(const Matrix& m) { return uint64_t((m.rows + 3) / 4) * uint64_t(m.cols); }

// The most outputs that cover one pixel along an axis: ⌈k / s⌉.
uint64_t covering(int64_t k, int64_t s) { return uint64_t((k + s - 1) / s); }

}  // namespace

void VulkanDevice::im2col(const ConvGeom& g, const Matrix& x, const Matrix& cols) {
    ConvPush p = conv_push(g, x.cols);
    p.a = view(x);
    p.c = view(cols);
    go(*this, "im2col", "im2col", &p, sizeof p, per4(cols), 0, {&x}, {&cols});
}

void VulkanDevice::col2im(const ConvGeom& g, const Matrix& cols, const Matrix& x) {
    ConvPush p = conv_push(g, x.cols);
    p.a = view(cols);
    p.c = view(x);
    passes(*this, p, covering(g.kh, g.sh), covering(g.kw, g.sw), "col2im", "col2im", uint64_t(x.size()), 0,
           {&cols, &x}, {&x});
}

void VulkanDevice::maxpool(const ConvGeom& g, const Matrix& x, const Matrix& y, const Matrix& idx) {
    ConvPush p = conv_push(g, x.cols);
    p.a = view(x);
    p.b = view(idx);
    p.c = view(y);
    passes(*this, p, uint64_t(g.kh), uint64_t(g.kw), "pool", "maxpool", uint64_t(y.size()), kMax, {&x, &y, &idx},
           {&y, &idx});
}

void VulkanDevice::maxpool_backward(const ConvGeom& g, const Matrix& dy, const Matrix& idx, const Matrix& dx) {
    ConvPush p = conv_push(g, dx.cols);
    p.a = view(dy);
    p.b = view(idx);
    p.c = view(dx);
    if (g.sh >= g.kh && g.sw >= g.kw) {
        // Windows that do not overlap: each output writes its window's pixels
        // (pool_scatter.comp), after zeros where some pixel lies in no window.
        const bool tiled = g.sh == g.kh && g.sw == g.kw && g.ph == 0 && g.pw == 0 && g.oh() * g.sh == g.h &&
                           g.ow() * g.sw == g.w;
        if (!tiled) fill(dx, 0.0f);
        passes(*this, p, uint64_t(g.kh), uint64_t(g.kw), "pool_scatter", "maxpool_backward", uint64_t(dy.size()),
               kMax, {&dy, &idx, &dx}, {&dx});
        return;
    }
    passes(*this, p, covering(g.kh, g.sh), covering(g.kw, g.sw), "pool_backward", "maxpool_backward",
           uint64_t(dx.size()), kMax, {&dy, &idx, &dx}, {&dx});
}

void VulkanDevice::avgpool(const ConvGeom& g, const Matrix& x, const Matrix& y) {
    ConvPush p = conv_push(g, x.cols);
    p.a = view(x);
    p.c = view(y);
    passes(*this, p, uint64_t(g.kh), uint64_t(g.kw), "pool", "avgpool", uint64_t(y.size()), kAverage, {&x, &y},
           {&y});
}

void VulkanDevice::avgpool_backward(const ConvGeom& g, const Matrix& dy, const Matrix& dx) {
    ConvPush p = conv_push(g, dx.cols);
    p.a = view(dy);
    p.c = view(dx);
    passes(*this, p, covering(g.kh, g.sh), covering(g.kw, g.sw), "pool_backward", "avgpool_backward",
           uint64_t(dx.size()), kAverage, {&dy, &dx}, {&dx});
}

void VulkanDevice::to_images(const Matrix& u, const Matrix& b, const Matrix& y) {
    ImagesPush p;
    p.u = view(u);
    p.y = view(y);
    p.ch = uint32_t(u.cols), p.positions = uint32_t(y.rows / u.cols), p.n = uint32_t(y.cols);
    if (b.buf) {
        p.b = view(b);
        p.b.rstep = uint32_t(b.inc());
        go(*this, "images", "to_images", &p, sizeof p, uint64_t(y.size()), 0, {&u, &b}, {&y});
    } else {
        go(*this, "images", "to_images", &p, sizeof p, uint64_t(y.size()), 0, {&u}, {&y});
    }
}

void VulkanDevice::from_images(const Matrix& y, const Matrix& u) {
    ImagesPush p;
    p.u = view(u);
    p.y = view(y);
    p.ch = uint32_t(u.cols), p.positions = uint32_t(y.rows / u.cols), p.n = uint32_t(y.cols);
    go(*this, "images", "from_images", &p, sizeof p, uint64_t(y.size()), 1, {&y}, {&u});
}

// conv, conv_wgrad and conv_dgrad: no shader of their own; the steps
// nn.conv2d takes on this device (im2col, one GEMM, the layout move; for
// conv_dgrad the move, one GEMM and col2im). Their window matrix
// (cols), GEMM matrix (u) and ones vector live in the device's conv scratch
// (VulkanDevice::conv_scratch_), kept between calls: each buffer grows to the
// largest asked for, up to kScratchMax bytes (larger ones are made per call
// and dropped after it). Reuse with work still queued is safe: the stream
// puts a barrier before a dispatch that writes a buffer queued work reads or
// writes (Stream::hazard), and a buffer replaced by a larger one is freed
// only once the work that used it has completed (Stream::retire).
namespace {
constexpr size_t kScratchMax = size_t(64) << 20;

Matrix shaped(std::shared_ptr<Buffer> buf, int64_t rows, int64_t cols) {
    Matrix m;
    m.buf = std::move(buf);
    m.rows = rows, m.cols = cols, m.ld = std::max<int64_t>(1, rows);
    return m;
}

// A rows × cols matrix on `kept`'s buffer (made or grown first), or on one of
// its own when larger than kScratchMax; ones: every element 1 (a kept buffer
// is filled once, when made).
Matrix temp(VulkanDevice& dev, std::shared_ptr<Buffer>& kept, int64_t rows, int64_t cols, bool ones = false) {
    const size_t n = size_t(rows * cols);
    if (n * sizeof(float) > kScratchMax) {
        Matrix m = shaped(dev.alloc(DType::f32, n), rows, cols);
        if (ones) dev.fill(m, 1.0f);
        return m;
    }
    if (!kept || kept->released() || kept->count() < n) {
        std::shared_ptr<Buffer> fresh = dev.alloc(DType::f32, n);
        if (ones) dev.fill(shaped(fresh, int64_t(n), 1), 1.0f);
        kept = std::move(fresh);  // the old one is retired until its queued work completes
    }
    return shaped(kept, rows, cols);
}
}  // namespace

void VulkanDevice::conv(const ConvGeom& g, const Matrix& x, const Matrix& w, const Matrix& b, Act act, const Matrix& y) {
    const int64_t pn = g.positions() * x.cols;
    if (pn == 0) return;
    Matrix cols = temp(*this, conv_scratch_[0], g.patch(), pn), u = temp(*this, conv_scratch_[1], pn, w.rows);
    im2col(g, x, cols);
    mm(1.0f, cols.t(), w.t(), 0.0f, u);
    to_images(u, b, y);
    if (act != Act::identity) unary(act_unary(act), y, y, nullptr);
}

void VulkanDevice::conv_wgrad(const ConvGeom& g, const Matrix& x, const Matrix& dz, const Matrix& dw, const Matrix& db) {
    const int64_t pn = g.positions() * x.cols;
    if (pn == 0) {  // no samples: the sums are empty
        fill(dw, 0.0f);
        if (db.buf) fill(db, 0.0f);
        return;
    }
    Matrix cols = temp(*this, conv_scratch_[0], g.patch(), pn), u = temp(*this, conv_scratch_[1], pn, dw.rows);
    from_images(dz, u);
    im2col(g, x, cols);
    mm(1.0f, u.t(), cols.t(), 0.0f, dw);
    if (db.buf) mv(1.0f, u.t(), temp(*this, conv_scratch_[2], pn, 1, true), 0.0f, db);
}

void VulkanDevice::conv_dgrad(const ConvGeom& g, const Matrix& dz, const Matrix& w, const Matrix& dx) {
    const int64_t pn = g.positions() * dx.cols;
    if (pn == 0) return;
    Matrix u = temp(*this, conv_scratch_[1], pn, w.rows), cols = temp(*this, conv_scratch_[0], g.patch(), pn);
    from_images(dz, u);
    mm(1.0f, w.t(), u.t(), 0.0f, cols);  // each window's gradient: Wᵀ·duᵀ
    fill(dx, 0.0f);
    col2im(g, cols, dx);
}

}  // namespace vela::vk

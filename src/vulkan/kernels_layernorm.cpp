// Layer norm per column on Vulkan, forward and backward (shaders/layernorm.comp,
// docs/sequence.md). A workgroup takes a column, or a chunk of at most
// WG·kIter rows of it when the column is longer (then a second dispatch
// combines the chunks and a third applies them elementwise), so no shader
// loop passes kIter iterations; the grid of workgroups is split over y and z
// past the device's maxComputeWorkGroupCount. γ, β, mean and rstd with a
// step other than 1 go through dense copies. dγ and dβ are row sums of
// P = dy·x̂ (written by the backward kernel) and of dy: one invocation per
// row, or by mv where a row is longer than kIter.
#include "vulkan/kernels_layernorm.hpp"

#include <algorithm>

#include "core/ops_check.hpp"
#include "vulkan/device.hpp"

namespace vela::vk {

using opcheck::make;

namespace {

struct Strided {
    uint64_t a = 0;
    uint32_t rs = 0, cs = 0;
};

struct LnPush {
    Strided x, y, dy;
    uint64_t gamma = 0, beta = 0, mean = 0, rstd = 0, part = 0, prod = 0;
    uint32_t rows = 0, cols = 0, chunk = 0, chunks = 0;
    float eps = 0;
    uint32_t pad = 0;
};
static_assert(sizeof(LnPush) ==
              120);  // shaders/layernorm.comp's LnPush; ≤ 128, the push-constant size every device has

// The most iterations of one shader loop (rows per invocation per chunk).
constexpr uint64_t kIter = 4096;
uint64_t iter_limit = 0;  // tests: a smaller limit, to reach the chunked path with small matrices

// layernorm.comp's passes: vk::Ln, the LN_* rows of src/vulkan/modes.def.
using Mode = Ln;
using enum Ln;

// The workgroup: a power of two, at most 64 and within the device's limits.
uint32_t ln_wg(const Caps& c) {
    const uint32_t lim = std::min<uint32_t>({64u, c.max_workgroup_invocations, c.max_workgroup_size[0]});
    uint32_t w = 1;
    while (w * 2 <= lim) w *= 2;
    return w;
}

// A vector operand as a dense run: itself, or a dense copy (copied back after the dispatches when written).
struct Dense {
    Matrix m;
    const Matrix* orig = nullptr;
    Dense(VulkanDevice& d, const Matrix& v, bool read) {
        if (v.inc() == 1 || v.size() <= 1) {
            m = v;
            return;
        }
        m = make(d, v.size(), 1, DType::f32);
        if (read) d.copy(v.rows == 1 ? v.t() : v, m);
        orig = &v;
    }
    void write_back(VulkanDevice& d) {
        if (orig) d.copy(m, orig->rows == 1 ? orig->t() : *orig);
    }
};

uint64_t at(VulkanDevice& d, const Matrix& m) {
    return d.address(m) + uint64_t(m.offset) * sizeof(float);
}

Strided strided(VulkanDevice& d, const Matrix& m) {
    return Strided{at(d, m), uint32_t(m.row_step()), uint32_t(m.col_step())};
}

struct LnSpec {  // shaders/layernorm.comp's specialization constants
    uint32_t wg, mode, lane;
};

// `items` workgroups (lane: invocations) of the mode.
void run(VulkanDevice& d, Mode mode, bool lane, const LnPush& p, uint64_t items, uint32_t wg, Operands reads,
         Operands writes, const char* label) {
    const LnSpec spec{.wg = wg, .mode = uint32_t(mode), .lane = uint32_t(lane)};
    Dispatch disp{.shader = "layernorm",
                  .push = &p,
                  .push_size = sizeof p,
                  .spec = spec,
                  .reads = reads,
                  .writes = writes,
                  .label = label};
    d.grid(lane ? items : items * wg, wg, disp.groups);
    d.dispatch(disp);
}

// Rows per workgroup and workgroups per column; true where one invocation takes a whole column
// (software drivers, whose barriers cost more than a short column's loop; on a GPU adjacent lanes
// reading one column each would not coalesce).
bool chunking(const Caps& caps, uint64_t rows, uint32_t wg, LnPush& p) {
    const uint64_t iters = iter_limit ? iter_limit : kIter;
    const bool lane = caps.software && rows <= iters;
    const uint64_t per = lane ? rows : uint64_t(wg) * iters;
    p.chunk = uint32_t(std::min<uint64_t>(per, rows));
    p.chunks = uint32_t((rows + p.chunk - 1) / p.chunk);
    return lane;
}

}  // namespace

void limit_layernorm_iterations(uint64_t n) {
    iter_limit = n;
}

void VulkanDevice::layernorm_forward(const Matrix& x, const Matrix& gamma, const Matrix& beta, float eps,
                                     const Matrix& mean, const Matrix& rstd, const Matrix& y) {
    if (x.cols == 0) return;
    const uint32_t wg = ln_wg(caps());
    Dense g(*this, gamma, true), b(*this, beta, true), mu(*this, mean, false), r(*this, rstd, false);
    LnPush p;
    p.x = strided(*this, x);
    p.y = strided(*this, y);
    p.gamma = at(*this, g.m), p.beta = at(*this, b.m), p.mean = at(*this, mu.m), p.rstd = at(*this, r.m);
    p.rows = uint32_t(x.rows), p.cols = uint32_t(x.cols), p.eps = eps;
    const bool lane = chunking(caps(), uint64_t(x.rows), wg, p);
    if (p.chunks == 1) {
        run(*this, fwd, lane, p, p.cols, wg, {&x, &g.m, &b.m}, {&y, &mu.m, &r.m}, "layernorm");
    } else {
        Matrix part = make(*this, int64_t(3) * p.cols * p.chunks, 1, DType::f32);
        p.part = at(*this, part);
        run(*this, fwd, false, p, uint64_t(p.cols) * p.chunks, wg, {&x}, {&part}, "layernorm");
        run(*this, fwd_combine, false, p, p.cols, wg, {&part, &x}, {&mu.m, &r.m}, "layernorm");
        run(*this, fwd_apply, false, p, (uint64_t(p.rows) * p.cols + wg - 1) / wg, wg, {&x, &g.m, &b.m, &mu.m, &r.m},
            {&y}, "layernorm");
    }
    mu.write_back(*this), r.write_back(*this);
}

void VulkanDevice::layernorm_backward(const Matrix& dy, const Matrix& x, const Matrix& mean, const Matrix& rstd,
                                      const Matrix& gamma, const Matrix& dgamma, const Matrix& dbeta,
                                      const Matrix& dx) {
    if (x.cols == 0) {
        fill(dgamma, 0.0f), fill(dbeta, 0.0f);
        return;
    }
    const uint32_t wg = ln_wg(caps());
    Dense g(*this, gamma, true), mu(*this, mean, true), r(*this, rstd, true);
    Matrix prod = make(*this, x.rows, x.cols, DType::f32);
    LnPush p;
    p.x = strided(*this, x);
    p.y = strided(*this, dx);
    p.dy = strided(*this, dy);
    p.gamma = at(*this, g.m), p.mean = at(*this, mu.m), p.rstd = at(*this, r.m), p.prod = at(*this, prod);
    p.rows = uint32_t(x.rows), p.cols = uint32_t(x.cols);
    const bool lane = chunking(caps(), uint64_t(x.rows), wg, p);
    if (p.chunks == 1) {
        run(*this, bwd, lane, p, p.cols, wg, {&dy, &x, &g.m, &mu.m, &r.m}, {&dx, &prod}, "layernorm_backward");
    } else {
        Matrix part = make(*this, int64_t(2) * p.cols * (p.chunks + 1), 1, DType::f32);
        p.part = at(*this, part);
        run(*this, bwd, false, p, uint64_t(p.cols) * p.chunks, wg, {&dy, &x, &g.m, &mu.m, &r.m}, {&part},
            "layernorm_backward");
        run(*this, bwd_combine, false, p, p.cols, wg, {&part}, {&part}, "layernorm_backward");
        p.part += uint64_t(2) * p.cols * p.chunks * sizeof(float);  // the columns' means
        run(*this, bwd_apply, false, p, (uint64_t(p.rows) * p.cols + wg - 1) / wg, wg,
            {&dy, &x, &g.m, &mu.m, &r.m, &part}, {&dx, &prod}, "layernorm_backward");
    }
    if (uint64_t(x.cols) <= (iter_limit ? iter_limit : kIter)) {
        Dense dg(*this, dgamma, false), db(*this, dbeta, false);
        p.gamma = at(*this, dg.m), p.beta = at(*this, db.m);
        run(*this, row_sums, true, p, p.rows, wg, {&prod, &dy}, {&dg.m, &db.m}, "layernorm_backward");
        dg.write_back(*this), db.write_back(*this);
        return;
    }
    Matrix ones = make(*this, x.cols, 1, DType::f32);
    fill(ones, 1.0f);
    mv(1.0f, prod, ones, 0.0f, dgamma);
    mv(1.0f, dy, ones, 0.0f, dbeta);
}

}  // namespace vela::vk

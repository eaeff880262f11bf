// VulkanDevice::bmm: the strided batched product (shaders/bmm.comp), all blocks
// in one dispatch, the workgroup's z index the block. Past the device's
// maxComputeWorkGroupCount (x: rows of c, y: columns, z: blocks) the grid is cut
// into several dispatches with their addresses moved; k is cut into passes of
// at most kMaxK values (β = 1 after the first), so the shader's loop stays far
// below the 65,535 iterations after which drivers may end it; and a dispatch
// takes no more blocks than keep z·step in the shader's 32-bit element index.
// Where mm runs the register-blocked kernel (software drivers), so does bmm,
// with the same z-index blocks (bmm_regblock, kernels_blas.cpp): on lavapipe
// and SwiftShader it is several times faster than bmm.comp (docs/results.md).
#include "vulkan/kernels_bmm.hpp"

#include <algorithm>
#include <limits>

#include "core/error.hpp"
#include "vulkan/device.hpp"
#include "vulkan/kernels_blas.hpp"

namespace vela::vk {

// bmm.comp's specialization constants: the TS×TSY workgroup, the blocks' transposes, the tiled variant.
struct BmmSpec {
    uint32_t ts, tsy, ta, tb, tiled;
};

namespace {

struct BmmPush {
    uint64_t a, b, c;
    uint32_t m, n, k;
    uint32_t lda, ldb;
    uint32_t crs, ccs;
    uint32_t sa, sb, sc;
    float alpha, beta;
};
static_assert(sizeof(BmmPush) == 72);  // shaders/bmm.comp's BmmPush

constexpr uint64_t kMaxK = 16384;
constexpr uint64_t kU32 = std::numeric_limits<uint32_t>::max();

uint32_t blocks_limit = 0;
int tiled_forced = -1;

uint32_t u32(const char* what, int64_t v) {
    if (v < 0 || uint64_t(v) > kU32) fail("bmm: %s is %lld, but the Vulkan kernels take at most 2^32-1", what, (long long)v);
    return uint32_t(v);
}

uint64_t div_up(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

}  // namespace

void limit_bmm_blocks(uint32_t blocks) { blocks_limit = blocks; }
void force_bmm_tiled(int tiled) { tiled_forced = tiled; }

void VulkanDevice::bmm(float alpha, const Matrix& a, int64_t sa, const Matrix& b, int64_t sb, float beta,
                       const Matrix& c, int64_t sc, int64_t count) {
    if (c.empty() || count == 0) return;
    const Caps& cp = caps();
    const uint32_t ts =
        cp.max_workgroup_invocations >= 256 && cp.max_workgroup_size[0] >= 16 && cp.max_workgroup_size[1] >= 16 ? 16 : 8;
    BmmPush p{};
    p.a = address(a) + uint64_t(a.offset) * sizeof(float);
    p.b = address(b) + uint64_t(b.offset) * sizeof(float);
    p.c = address(c) + uint64_t(c.offset) * sizeof(float);
    p.m = u32("the number of rows", c.rows);
    p.n = u32("the number of columns", c.cols);
    p.k = u32("the inner dimension", a.cols);
    p.lda = u32("a's leading dimension", a.ld);
    p.ldb = u32("b's leading dimension", b.ld);
    p.crs = u32("c's row step", c.row_step());
    p.ccs = u32("c's column step", c.col_step());
    p.sa = u32("a's block step", sa);
    p.sb = u32("b's block step", sb);
    p.sc = u32("c's block step", sc);
    // Within a block every index is at most its last element's; it must fit 32 bits.
    const Matrix* ops[] = {&a, &b, &c};
    for (const Matrix* m : ops)
        if (m->last_index() - m->offset > int64_t(kU32))
            fail("bmm: a block of %s spans more than 2^32 elements, more than the Vulkan kernel addresses",
                 m->shape_str().c_str());
    p.alpha = alpha;
    p.beta = beta;
    // Blocks per dispatch: the device's z limit, and z·step < 2^32 for every operand.
    uint64_t zmax = blocks_limit ? blocks_limit : cp.max_workgroup_count[2];
    for (uint64_t s : {uint64_t(sa), uint64_t(sb), uint64_t(sc)})
        if (s > 0) zmax = std::min(zmax, kU32 / s + 1);
    // Software drivers: the register-blocked mm, the block the z index (kernels_blas.cpp).
    if ((tiled_forced < 0 || tiled_forced == 2) &&
        bmm_regblock(*this, alpha, a, b, beta, c, GemmBatch{uint64_t(count), zmax, p.sa, p.sb, p.sc}))
        return;
    const uint64_t rows_per = uint64_t(cp.max_workgroup_count[0]) * ts;
    const uint64_t cols_per = uint64_t(cp.max_workgroup_count[1]) * ts;
    const uint64_t a_rs = a.row_step(), a_cs = a.col_step(), b_rs = b.row_step(), b_cs = b.col_step();
    const BmmSpec spec{.ts = ts, .tsy = ts, .ta = uint32_t(a.trans), .tb = uint32_t(b.trans),
                       .tiled = tiled_forced >= 0 ? uint32_t(tiled_forced) : cp.software ? 0u : 1u};
    const uint64_t K = std::max<uint64_t>(p.k, 1);
    for (uint64_t z0 = 0; z0 < uint64_t(count); z0 += zmax) {
        const uint64_t zn = std::min<uint64_t>(zmax, uint64_t(count) - z0);
        for (uint64_t k0 = 0; k0 < K; k0 += kMaxK)
            for (uint64_t j0 = 0; j0 < p.n; j0 += cols_per)
                for (uint64_t i0 = 0; i0 < p.m; i0 += rows_per) {
                    BmmPush q = p;
                    q.m = uint32_t(std::min<uint64_t>(rows_per, p.m - i0));
                    q.n = uint32_t(std::min<uint64_t>(cols_per, p.n - j0));
                    q.k = uint32_t(std::min<uint64_t>(kMaxK, p.k - std::min<uint64_t>(k0, p.k)));
                    q.a += (z0 * sa + i0 * a_rs + k0 * a_cs) * sizeof(float);
                    q.b += (z0 * sb + k0 * b_rs + j0 * b_cs) * sizeof(float);
                    q.c += (z0 * sc + i0 * p.crs + j0 * p.ccs) * sizeof(float);
                    if (k0 > 0) q.beta = 1.0f;
                    dispatch(Dispatch{.shader = "bmm",
                                      .push = &q,
                                      .push_size = sizeof q,
                                      .groups = {uint32_t(div_up(q.m, ts)), uint32_t(div_up(q.n, ts)), uint32_t(zn)},
                                      .spec = spec,
                                      .reads = {&a, &b, &c},
                                      .writes = {&c},
                                      .label = "bmm"});
                }
    }
}

}  // namespace vela::vk

// Host side of the GEMM family on Vulkan: picks the shader variant and its
// specialization constants from the device's Caps, fills the push constants
// (addresses with the view offset applied, leading dimensions, steps, α, β)
// and splits grids that exceed maxComputeWorkGroupCount into several
// dispatches. Transposes are spec constants of the pipeline, never a copy.
// See docs/gemm.md for the design and the measurements behind the choices.
#include "vulkan/kernels_blas.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "core/error.hpp"
#include "vulkan/device.hpp"
#include "vulkan/texel.hpp"

namespace vela::vk {

namespace {

GemmVariant forced = GemmVariant::automatic;

// First use of a register block on a device (docs/vulkan.md, "First use"):
// its JIT compile costs seconds on the software drivers (lavapipe with an
// empty Mesa cache ~2.7 s of processor time for the 8×12 block (~5 s for
// the 8×24 block it uses since issue 29), SwiftShader
// ~3.8 s for 8×16 in every process), the 2×4 block's ~0.2 s and ~0.13 s. So
// products run on the 2×4 block, bit for bit the same values (each element
// is the same chain of fma over k in the same order), until the products
// that stood in for a block add up to this many multiply-adds; then the
// block is made and used from then on. 2^27 multiply-adds (0.27 GFLOP) on
// the 2×4 block cost lavapipe about 0.2 s more than on the 8×12 one
// (docs/results.md): the most a process whose Mesa cache already holds the
// block loses, against the compile a short program no longer pays.
// VELA_MM_STAND_IN=0 turns it off (scripts/warm_cache.lua runs a training
// step both ways, so that Mesa's cache holds both kinds of block).
double stand_in_budget = [] {
    const char* e = std::getenv("VELA_MM_STAND_IN");
    return e && std::strcmp(e, "0") == 0 ? 0.0 : double(1u << 27);
}();
uint64_t stand_ins = 0, small_stand_ins = 0;
bool texel_on = [] {
    const char* e = std::getenv("VELA_MM_TEXEL");
    return !(e && std::strcmp(e, "0") == 0);
}();
uint64_t texel_dispatches = 0;

// The specialization constants of the GEMM shaders, in constant_id order.
struct RegblockSpec {  // mm_regblock.glsl (mm_regblock.comp, mm_regblock_i64.comp)
    uint32_t sg;       // lanes: the workgroup is one subgroup
    uint32_t mr, nr;   // rows of c per lane, columns of c per workgroup
    uint32_t ta, tb;   // op(a) = aᵀ, op(b) = bᵀ of the stored matrices
    uint32_t pair;     // 1: load a in 8-byte pairs; 2: in 16 bytes
    uint32_t epi, act;
    uint32_t bpair;    // 1: load op(b) in 8-byte pairs along k (64-bit kernel)
};
struct TiledSpec {    // mm_tiled.comp
    uint32_t tx, ty;  // the workgroup
    uint32_t tt;      // register block tt×tt per invocation (4 or 8)
    uint32_t bk;      // values of k per shared-memory tile
    uint32_t ta, tb, epi, act;
    uint32_t va, vb;  // 16-byte loads of a, b (address and ld multiples of 4 floats)
    uint32_t vc;      // 16-byte stores of c (rows contiguous, address and column step multiples of 4)
};

uint32_t ceil_div(uint64_t a, uint64_t b) { return uint32_t((a + b - 1) / b); }

// mm_tiled's shapes, largest block first: the workgroup, the register block
// and the k step. Each stages BM·BK/4 and BK·BN/4 16-byte pieces, whole
// multiples of the workgroup's invocations (mm_tiled.comp's PA, PB).
struct TileShape {
    const char* name;
    uint32_t tx, ty, tt, bk;
    bool chosen;  // false: only when named (VELA_MM_TILE, force_gemm_tile), for measuring
};
constexpr TileShape kTileShapes[] = {
    {"128", 16, 16, 8, 16, true},   // 128×128 block, 8×8 per invocation, 16 values of k per step
    {"128k8", 16, 16, 8, 8, false}, // the same with 8 (5% slower at 4096³ on an H200)
    {"64", 16, 16, 4, 16, true},    // 64×64, 4×4
    {"32", 8, 8, 4, 16, true},      // 32×32, 4×4, 64 invocations
};
constexpr size_t kTileShapeCount = sizeof kTileShapes / sizeof kTileShapes[0];

// The index in kTileShapes of the block called `name`, or -1.
int tile_index(const char* name) {
    for (size_t i = 0; i < kTileShapeCount; ++i)
        if (std::strcmp(name, kTileShapes[i].name) == 0) return int(i);
    return -1;
}

// VELA_MM_TILE=<a name in kTileShapes> fixes mm_tiled's block (benchmarks: scripts/bench/gpu_gemm.sh);
// unset or "auto", record_gemm chooses by the size of c. -2: an unknown name,
// reported at the first mm (a static initializer cannot raise a Lua error).
int forced_tile = [] {
    const char* e = std::getenv("VELA_MM_TILE");
    if (!e || !*e || std::strcmp(e, "auto") == 0) return -1;
    const int i = tile_index(e);
    return i >= 0 ? i : -2;
}();

std::string tile_names() {
    std::string names;
    for (const TileShape& t : kTileShapes) names += (names.empty() ? "" : ", ") + std::string(t.name);
    return names;
}

bool tile_fits(const Caps& caps, const TileShape& t) {
    const uint32_t bm = t.tx * t.tt, bn = t.ty * t.tt;
    const uint32_t shared = (t.bk * (bm + 4) + t.bk * (bn + 4)) * 4;
    return t.tx * t.ty <= caps.max_workgroup_invocations && t.tx <= caps.max_workgroup_size[0] &&
           t.ty <= caps.max_workgroup_size[1] && shared <= caps.max_shared_memory;
}

// The largest block that still gives the GPU many workgroups: a block that
// leaves most of its multiprocessors idle loses more than its larger tiles
// save (the sweep in docs/results.md, "mm_tiled on an H200"). A block named
// by VELA_MM_TILE that this device cannot hold (workgroup size, shared
// memory) gives way to that choice.
const TileShape& choose_tile(const char* fn, const Caps& caps, uint64_t m, uint64_t n) {
    if (forced_tile >= 0 && tile_fits(caps, kTileShapes[forced_tile])) return kTileShapes[forced_tile];
    constexpr uint64_t kEnoughGroups = 256;
    const TileShape* best = nullptr;
    for (const TileShape& t : kTileShapes) {
        if (!t.chosen || !tile_fits(caps, t)) continue;
        const uint64_t groups = uint64_t(ceil_div(m, t.tx * t.tt)) * ceil_div(n, t.ty * t.tt);
        best = &t;
        if (groups >= kEnoughGroups) break;
    }
    if (!best) fail("%s: this device's workgroups are too small for the GEMM kernel (it needs 64 invocations)", fn);
    return *best;
}

struct MvSpec {  // mv.comp
    uint32_t wg, ta, mode;
};
struct RkSpec {  // rk.comp
    uint32_t wg, cb;
};

// Layouts of the push-constant blocks in shaders/mm_common.glsl, mv.comp, rk.comp.
struct GemmPush {
    uint64_t a, b, c, bias;
    uint32_t m, n, k;
    uint32_t lda, ldb;
    uint32_t crs, ccs;
    uint32_t binc;
    float alpha, beta;
    uint32_t sa = 0, sb = 0, sc = 0;  // bmm: block steps (shaders/mm_common.glsl, EPI_BATCHED)
    uint32_t pad = 0;
};
static_assert(sizeof(GemmPush) == 88);  // mm_common.glsl's 84 bytes, padded

struct MvPush {
    uint64_t a, x, y;
    uint32_t m, n;
    uint32_t lda, incx, incy;
    float alpha, beta;
};

struct RkPush {
    uint64_t x, y, a;
    uint32_t m, n;
    uint32_t incx, incy;
    uint32_t ars, acs;
    float alpha;
};

// The most k values one mm dispatch loops over (mm_regblock: k/SG iterations
// plus k % SG, mm_tiled: 9 per 16 values), and the most columns one mv
// dispatch does (MODE 0: a quarter of them, MODE 1: 1/WG): far below the
// 65,535 loop iterations after which lavapipe ends a loop without a word.
constexpr uint64_t kMaxK = 16384;
constexpr uint64_t kMvChunk = 32768;

// The portable mm_regblock indexes each row of op(a) and column of op(b)
// from a reference to its first element with a 32-bit element index, which
// SwiftShader turns into a signed 32-bit byte offset: every index a dispatch
// loads stays below this (record_gemm shortens k to keep it so).
constexpr uint64_t kMaxIndex = uint64_t(1) << 29;

// Epilogues and activations as numbered in shaders/gemm.glsl and mm_common.glsl.
constexpr uint32_t EPI_AXPBY = uint32_t(Epi::axpby), EPI_DENSE = uint32_t(Epi::dense), EPI_BATCHED = uint32_t(Epi::batched);  // modes.def

uint64_t addr(const VulkanDevice& r, const Matrix& m) { return r.address(m) + uint64_t(m.offset) * sizeof(float); }

// Sizes, leading dimensions and steps travel as 32-bit words; larger ones
// would need a matrix of more than 2^32 rows or columns.
uint32_t u32(const char* fn, const char* what, int64_t v) {
    if (v < 0 || v > int64_t(std::numeric_limits<uint32_t>::max()))
        fail("%s: %s is %lld, but the Vulkan kernels take at most 2^32-1", fn, what, (long long)v);
    return uint32_t(v);
}


// mm_regblock_i64 (64-bit addresses, subgroupShuffle, pair loads of b) where
// the device has both; the portable mm_regblock elsewhere.
bool regblock64(const Caps& caps) { return caps.int64 && caps.subgroup_shuffle; }

// mm_regblock_tex: the 64-bit kernel with op(a) and op(b) read, and c read
// and written, through the texel views of their memory blocks (the device
// has them; blocks over maxTexelBufferElements floats have none, and their
// products keep mm_regblock_i64), not for bmm (its block steps stay addresses).
bool use_texel(VulkanDevice& r, const Matrix& a, const Matrix& b, const Matrix& c, const GemmBatch* batch) {
    return texel_on && !batch && r.caps().texel_views && regblock64(r.caps()) && r.buffer(a).alloc.texel1 &&
           r.buffer(b).alloc.texel1 && r.buffer(c).alloc.texel1;
}

bool use_regblock(const Caps& caps) {
    if (!caps.subgroup_ballot) return false;  // it needs subgroupBroadcast
    if (forced != GemmVariant::automatic) return forced == GemmVariant::regblock;
    return caps.software;
}

// The most k values one dispatch may take for the operands' steps along k:
// kMaxK, and for the portable mm_regblock also the index bound above (the
// last k's values of op(a) lie (k-1)·step + 3 elements past the row's first).
uint64_t max_k_per_dispatch(const Caps& caps, const Matrix& a, const Matrix& b) {
    uint64_t limit = kMaxK;
    if (use_regblock(caps) && !regblock64(caps)) {
        uint64_t step = std::max<uint64_t>({a.trans ? 1 : uint64_t(a.ld), b.trans ? uint64_t(b.ld) : 1, 1});
        limit = std::min(limit, (kMaxIndex - 4) / step + 1);
    }
    return limit;
}

// The mm/dense dispatch shared by VulkanDevice::mm and VulkanDevice::dense.
void record_gemm(VulkanDevice& r, const char* fn, float alpha, const Matrix& a, const Matrix& b, float beta,
                 const Matrix& c, uint32_t epi, const Matrix* bias, Act act, const GemmBatch* batch = nullptr) {
    if (forced_tile == -2)
        fail("%s: VELA_MM_TILE is '%s', but it must be auto or one of %s", fn, std::getenv("VELA_MM_TILE"),
             tile_names().c_str());
    if (c.empty()) return;
    const Caps& caps = r.caps();
    GemmPush p{};
    p.a = addr(r, a);
    p.b = addr(r, b);
    p.c = addr(r, c);
    p.bias = bias ? addr(r, *bias) : 0;
    p.m = u32(fn, "the number of rows", c.rows);
    p.n = u32(fn, "the number of columns", c.cols);
    p.k = u32(fn, "the inner dimension", a.cols);
    p.lda = u32(fn, "a's leading dimension", a.ld);
    p.ldb = u32(fn, "b's leading dimension", b.ld);
    p.crs = u32(fn, "c's row step", c.row_step());
    p.ccs = u32(fn, "c's column step", c.col_step());
    p.binc = bias ? u32(fn, "the bias step", bias->inc()) : 0;
    p.alpha = alpha;
    p.beta = beta;
    const uint32_t ta = a.trans, tb = b.trans;

    RegblockSpec rspec{};
    TiledSpec tspec{};
    uint32_t tile_m, tile_n;
    const char* shader;
    const bool regblock = use_regblock(caps);
    const bool texel = regblock && use_texel(r, a, b, c, batch);
    if (texel) {
        p.a = texel_index(a);  // float indices into the texel views, not addresses
        p.b = texel_index(b);
        p.c = texel_index(c);
    }
    if (regblock) {
        // 8 rows per lane (docs/gemm.md); smaller blocks for thin matrices so
        // a 10-row output layer does not compute 64 rows.
        uint32_t sg = std::clamp<uint32_t>(caps.subgroup_size, 1, caps.max_workgroup_invocations);
        uint32_t mr = p.m <= 2 * sg ? 2 : p.m <= 4 * sg ? 4 : 8;
        // NR = 24 for the 64-bit kernel (lavapipe, with the pair loads of b:
        // each load is a loop over the lanes there, so wider blocks share
        // them over more fma; 12 before, docs/results.md "lavapipe's GEMM"),
        // 16 for the portable one (SwiftShader: 10-25% faster than 12; 20, 24
        // and MR = 4 slower; docs/gemm.md). The texel kernel (lavapipe, where
        // a fetch of b costs an eighth of a load by address) takes 16 with
        // MR = 8: 16 divides the MLP's n (128, 256, 784) where 24 leaves a
        // part block, and the block holds 128 accumulators instead of 192;
        // thin products (MR 2 or 4) keep 24 (docs/results.md, "The texel
        // GEMM's block for the MLP").
        uint32_t nr = p.n <= 4 ? 4 : texel && mr == 8 ? 16 : regblock64(caps) ? 24 : 16;
        // 8-byte loads of a need an even address and leading dimension; for
        // row pairs also an even row count, so a pair never leaves the column.
        // bmm: every block's address too (its step a multiple of 2 or 4 elements).
        const uint64_t bsa = batch ? uint64_t(batch->sa) : 0;
        bool pair = !texel && p.a % 8 == 0 && p.lda % 2 == 0 && sg % 2 == 0 && (ta || p.m % 2 == 0) && bsa % 2 == 0;
        // The portable kernel (no shaderInt64) loads 16 bytes where a's
        // address, ld and (untransposed) row count allow it: on SwiftShader
        // 12% faster than pairs (docs/gemm.md). The 64-bit kernel keeps pairs
        // (a 16-byte load is four per-lane loops on lavapipe, no gain).
        // The texel kernel loads 16-byte texels of a (one texelFetch, as
        // cheap as a 4-byte one there) on the same conditions, in floats.
        bool quad = (texel ? p.a % 4 == 0 : !regblock64(caps) && p.a % 16 == 0) && p.lda % 4 == 0 && sg % 4 == 0 &&
                    mr % 4 == 0 && (ta || p.m % 4 == 0) && bsa % 4 == 0;
        // 8-byte loads of b (64-bit kernel): along k (op(b) untransposed) or
        // along j (transposed; column pairs need an even n, and NR even).
        const uint64_t bsb = batch ? uint64_t(batch->sb) : 0;
        bool bpair = !texel && regblock64(caps) && p.b % 8 == 0 && p.ldb % 2 == 0 && bsb % 2 == 0 &&
                     (!tb || (p.n % 2 == 0 && nr % 2 == 0));
        if (bpair && !tb) {
            // Along k a pass takes 2·SG values of k and the k % 2SG left
            // over load b one k at a time (NR loads each): for a short k (the
            // 10-long k of a 10-class layer's dx) that is more loads than
            // without pairs. Count the loads of a lane both ways (the k
            // passes over 512-long chunks leave the same remainder).
            const uint64_t la = pair ? mr / 2 : mr;  // loads of a per k
            auto loads = [&](uint64_t ks, uint64_t b_per_pass) {
                return (p.k / ks) * (b_per_pass + ks * la) + (p.k % ks) * (nr + la);
            };
            bpair = loads(2 * sg, nr) < loads(sg, nr);
        }
        // Texels of b: 4 values of k per lane (untransposed; a k of at least
        // 4·SG, the rest loads one k at a time) or 4 columns (transposed, n
        // and NR multiples of 4); b's index and ld multiples of 4.
        uint32_t bquad = 0;
        if (texel && p.b % 4 == 0 && p.ldb % 4 == 0) {
            if (!tb && p.k >= 4 * sg) bquad = 3;
            if (tb && p.n % 4 == 0 && nr % 4 == 0) bquad = 4;
        }
        rspec = {.sg = sg, .mr = mr, .nr = nr, .ta = ta, .tb = tb, .pair = quad ? 2u : pair ? 1u : 0u, .epi = epi,
                 .act = uint32_t(act), .bpair = bquad ? bquad : bpair ? (tb ? 2u : 1u) : 0u};
        // 64-bit addresses stepped per load where the device has them (about
        // twice the speed on lavapipe); the portable kernel elsewhere; the
        // operands through texel views where those exist (lavapipe).
        shader = texel ? "mm_regblock_tex_i64" : regblock64(caps) ? "mm_regblock_i64" : "mm_regblock";
        // The 2×4 block stands in for a larger one not yet made (see
        // stand_in_budget); forcing the variant (the tests) never does.
        const double work = double(p.m) * double(p.n) * double(std::max<uint32_t>(p.k, 1)) *
                            double(batch ? batch->count : 1);
        const SpecConstants chosen(rspec);
        if (forced == GemmVariant::automatic && (mr > 2 || nr > 4) &&
            r.stream().pipelines().stand_in(shader, chosen.data, chosen.count, work, stand_in_budget)) {
            rspec.mr = 2;
            rspec.nr = 4;
            rspec.pair = pair ? 1u : 0u;  // 16-byte loads need MR a multiple of 4 (texel: pair is false)
            ++stand_ins;
            // And the 1×1 block for the 2×4 one while it is not made, over a
            // sixteenth of the budget: its compile is a quarter of the 2×4
            // block's (SwiftShader 0.035 against 0.13 s: the first small mm of
            // a process), at a third of its speed, so only small first
            // products run on it.
            const SpecConstants small(rspec);
            if (r.stream().pipelines().stand_in(shader, small.data, small.count, work, stand_in_budget / 16)) {
                rspec.mr = 1;
                rspec.nr = 1;
                rspec.pair = 0;
                rspec.bpair = 0;  // column pairs of b need an even NR
                ++small_stand_ins;
            }
        }
        tile_m = sg * rspec.mr;
        tile_n = rspec.nr;
    } else {
        const TileShape& t = choose_tile(fn, caps, p.m, p.n);
        // 16-byte loads and stores where every address they form is a
        // multiple of 16 bytes: the operand's first element and its leading
        // dimension (the tiles start at multiples of 4 along the contiguous
        // direction); for c, contiguous rows (crs = 1) and a column step of 4k.
        const uint32_t va = p.a % 16 == 0 && p.lda % 4 == 0, vb = p.b % 16 == 0 && p.ldb % 4 == 0;
        const uint32_t vc = p.c % 16 == 0 && p.crs == 1 && p.ccs % 4 == 0;
        tspec = {.tx = t.tx, .ty = t.ty, .tt = t.tt, .bk = t.bk, .ta = ta, .tb = tb, .epi = epi,
                 .act = uint32_t(act), .va = va, .vb = vb, .vc = vc};
        tile_m = t.tx * t.tt;
        tile_n = t.ty * t.tt;
        shader = "mm_tiled";
    }

    // On a CPU implementation a long k makes each workgroup stream panels of
    // a and b that no longer stay in cache (1024³ runs at 25 GFLOP/s, 2048³
    // at 11): mm then runs as passes over k chunks, the first with β and the
    // rest accumulating with β = 1 (dependent dispatches, ordered by the
    // stream). dense keeps one pass: its epilogue needs the whole sum.
    // Every variant also bounds its k loop by kMaxK per dispatch: drivers may
    // end a shader loop after 65,535 iterations (dense splits larger k), and
    // the portable regblock its indices (max_k_per_dispatch).
    const uint64_t k_max = max_k_per_dispatch(caps, a, b);
    // mm_regblock_tex keeps one pass (up to kMaxK): its k chunks of 512, 256
    // and 128 measured slower than none at 1024³ (docs/results.md).
    const uint64_t k_chunk = std::min(regblock && !texel && epi != EPI_DENSE && p.k > 1024 ? 512
                                                                                             : std::max<uint64_t>(p.k, 1),
                                      k_max);
    // Split the grid where it exceeds the device's workgroup counts: each
    // piece is the same problem on a sub-block of c, with its addresses moved.
    // mm_regblock_tex: column blocks along x, row blocks along y.
    const uint64_t rows_per = uint64_t(caps.max_workgroup_count[texel ? 1 : 0]) * tile_m;
    const uint64_t cols_per = uint64_t(caps.max_workgroup_count[texel ? 0 : 1]) * tile_n;
    const uint64_t a_row_step = ta ? p.lda : 1, a_col_step = ta ? 1 : p.lda;
    const uint64_t b_row_step = tb ? p.ldb : 1, b_col_step = tb ? 1 : p.ldb;
    const SpecConstants spec = regblock ? SpecConstants(rspec) : SpecConstants(tspec);
    const uint64_t unit = texel ? 1 : sizeof(float);  // of a's and b's positions: floats or bytes
    // bmm: blocks in dispatches of at most zmax (the z index the block).
    const uint64_t count = batch ? batch->count : 1, zmax = batch ? batch->zmax : 1;
    if (batch) p.sa = batch->sa, p.sb = batch->sb, p.sc = batch->sc;
    for (uint64_t z0 = 0; z0 < count; z0 += zmax) {
        for (uint64_t k0 = 0; k0 < std::max<uint64_t>(p.k, 1); k0 += k_chunk) {
            for (uint64_t j0 = 0; j0 < p.n; j0 += cols_per) {
                for (uint64_t i0 = 0; i0 < p.m; i0 += rows_per) {
                    GemmPush q = p;
                    q.m = uint32_t(std::min<uint64_t>(rows_per, p.m - i0));
                    q.n = uint32_t(std::min<uint64_t>(cols_per, p.n - j0));
                    q.k = uint32_t(std::min<uint64_t>(k_chunk, p.k - k0));
                    q.a += (i0 * a_row_step + k0 * a_col_step) * unit;
                    q.b += (k0 * b_row_step + j0 * b_col_step) * unit;
                    q.c += (i0 * p.crs + j0 * p.ccs) * unit;
                    q.a += z0 * p.sa * unit, q.b += z0 * p.sb * unit, q.c += z0 * p.sc * unit;
                    if (k0 > 0) q.beta = 1.0f;
                    if (bias) q.bias += i0 * p.binc * sizeof(float);
                    // dense reads the bias instead of c.
                    Dispatch d{.shader = shader,
                                        .push = &q,
                                        .push_size = sizeof q,
                                        .groups = {texel ? ceil_div(q.n, tile_n) : ceil_div(q.m, tile_m),
                                                   texel ? ceil_div(q.m, tile_m) : ceil_div(q.n, tile_n),
                                                   uint32_t(std::min(zmax, count - z0))},
                                        .spec = spec,
                                        .reads = {&a, &b, bias ? bias : &c},
                                        .writes = {&c},
                                        .label = fn};
                    if (texel) {
                        const Allocation &aa = r.buffer(a).alloc, &ba = r.buffer(b).alloc;
                        d.texels[0] = aa.texel1, d.texels[1] = aa.texel4, d.texels[2] = ba.texel1, d.texels[3] = ba.texel4;
                        d.texels[4] = r.buffer(c).alloc.texel_store;
                        ++texel_dispatches;
                    }
                    r.dispatch(d);
                }
            }
        }
    }
}

// A 1-D grid of `count` workgroups laid out within the device's limits;
// shaders recover the index as x + y·countx and skip the excess.
void grid_1d(const Caps& caps, uint64_t count, uint32_t groups[3]) {
    uint64_t x = std::min<uint64_t>(count, caps.max_workgroup_count[0]);
    groups[0] = uint32_t(std::max<uint64_t>(x, 1));
    groups[1] = ceil_div(count, groups[0]);
    groups[2] = 1;
    if (groups[1] > caps.max_workgroup_count[1])
        fail("mv: %llu rows need more workgroups than the device allows", (unsigned long long)count);
}

}  // namespace

void force_gemm_variant(GemmVariant v) { forced = v; }
void force_gemm_tile(const char* name) {
    if (!name) {
        forced_tile = -1;
        return;
    }
    const int i = tile_index(name);
    if (i < 0) fail("force_gemm_tile: '%s' is not a block (one of %s)", name, tile_names().c_str());
    forced_tile = i;
}
void set_gemm_texel(bool on) { texel_on = on; }
uint64_t gemm_texel_count() { return texel_dispatches; }

void set_gemm_stand_in_budget(double multiply_adds) { stand_in_budget = multiply_adds; }
double gemm_stand_in_budget() { return stand_in_budget; }
uint64_t gemm_stand_in_count() { return stand_ins; }
uint64_t gemm_small_stand_in_count() { return small_stand_ins; }

bool bmm_regblock(VulkanDevice& r, float alpha, const Matrix& a, const Matrix& b, float beta, const Matrix& c,
                  const GemmBatch& batch) {
    if (!use_regblock(r.caps())) return false;
    record_gemm(r, "bmm", alpha, a, b, beta, c, EPI_BATCHED, nullptr, Act::identity, &batch);
    return true;
}

void VulkanDevice::mm(float alpha, const Matrix& a, const Matrix& b, float beta, const Matrix& c) {
    record_gemm(*this, "mm", alpha, a, b, beta, c, EPI_AXPBY, nullptr, Act::identity);
}

void VulkanDevice::dense(const Matrix& w, const Matrix& x, const Matrix& b, Act act, const Matrix& y) {
    if (uint64_t(w.cols) > max_k_per_dispatch(caps(), w, x)) {
        // A k too long for one pass (its loop would pass the drivers' limit,
        // or its indices the portable kernel's bound): mm splits k, then the
        // bias and the activation.
        mm(1.0f, w, x, 0.0f, y);
        add_bias(b, y);
        if (act != Act::identity) unary(act_unary(act), y, y, nullptr);
        return;
    }
    record_gemm(*this, "dense", 1.0f, w, x, 0.0f, y, EPI_DENSE, &b, act);
}

void VulkanDevice::mv(float alpha, const Matrix& a, const Matrix& x, float beta, const Matrix& y) {
    VulkanDevice& r = *this;
    if (y.empty()) return;
    const Caps& caps = r.caps();
    MvPush p{};
    p.a = addr(r, a);
    p.x = addr(r, x);
    p.y = addr(r, y);
    p.m = u32("mv", "the number of rows", a.rows);
    p.n = u32("mv", "the number of columns", a.cols);
    p.lda = u32("mv", "a's leading dimension", a.ld);
    p.incx = u32("mv", "x's step", x.inc());
    p.incy = u32("mv", "y's step", y.inc());
    p.alpha = alpha;
    p.beta = beta;
    // A row of a transposed view is contiguous: on a GPU one workgroup reads
    // it coalesced and reduces in shared memory. Otherwise (and always on a
    // CPU implementation, where barriers are costly) one invocation per row.
    bool reduce = forced == GemmVariant::automatic ? !caps.software && a.trans : forced == GemmVariant::tiled;
    const uint32_t wg = r.small_wg();
    const MvSpec spec{.wg = wg, .ta = a.trans, .mode = uint32_t(reduce ? Mv::tree : Mv::rows)};  // modes.def
    uint32_t groups[3];
    grid_1d(caps, reduce ? uint64_t(p.m) : ceil_div(p.m, wg), groups);
    // One invocation per row through the texel views (mv_tex.comp) where the
    // device and every operand's block have them: positions in floats.
    auto &ba = buffer(a).alloc, &bx = buffer(x).alloc, &by = buffer(y).alloc;
    const bool texel = !reduce && texel_kernels(caps) && ba.texel1 && bx.texel1 && by.texel1;
    const uint64_t unit = texel ? 1 : sizeof(float);
    if (texel) p.a = texel_index(a), p.x = texel_index(x), p.y = texel_index(y);
    // Columns of op(a) in passes of kMvChunk, the later ones adding to y (β = 1).
    for (uint64_t j0 = 0; j0 == 0 || j0 < p.n; j0 += kMvChunk) {
        MvPush q = p;
        q.n = uint32_t(std::min<uint64_t>(kMvChunk, p.n - j0));
        q.a += j0 * (a.trans ? 1 : uint64_t(p.lda)) * unit;
        q.x += j0 * p.incx * unit;
        if (j0 > 0) q.beta = 1.0f;
        Dispatch d{.shader = texel ? "mv_tex" : "mv",
                   .push = &q,
                   .push_size = sizeof q,
                   .groups = {groups[0], groups[1], groups[2]},
                   .spec = spec,
                   .reads = {&a, &x, &y},
                   .writes = {&y},
                   .label = "mv"};
        if (texel) {
            d.texels[0] = ba.texel1, d.texels[2] = bx.texel1, d.texels[4] = by.texel_store;
            count_texel_kernel();
        }
        r.dispatch(d);
    }
}

void VulkanDevice::rk(float alpha, const Matrix& x, const Matrix& y, const Matrix& a) {
    VulkanDevice& r = *this;
    if (a.empty()) return;
    const Caps& caps = r.caps();
    RkPush p{};
    p.x = addr(r, x);
    p.y = addr(r, y);
    p.a = addr(r, a);
    p.m = u32("rk", "the number of rows", a.rows);
    p.n = u32("rk", "the number of columns", a.cols);
    p.incx = u32("rk", "x's step", x.inc());
    p.incy = u32("rk", "y's step", y.inc());
    p.ars = u32("rk", "a's row step", a.row_step());
    p.acs = u32("rk", "a's column step", a.col_step());
    p.alpha = alpha;
    const uint32_t wg = r.small_wg();
    const uint32_t cb = 8;
    const RkSpec spec{.wg = wg, .cb = cb};
    const uint64_t rows_per = uint64_t(caps.max_workgroup_count[0]) * wg;
    const uint64_t cols_per = uint64_t(caps.max_workgroup_count[1]) * cb;
    for (uint64_t j0 = 0; j0 < p.n; j0 += cols_per) {
        for (uint64_t i0 = 0; i0 < p.m; i0 += rows_per) {
            RkPush q = p;
            q.m = uint32_t(std::min<uint64_t>(rows_per, p.m - i0));
            q.n = uint32_t(std::min<uint64_t>(cols_per, p.n - j0));
            q.x += i0 * p.incx * sizeof(float);
            q.y += j0 * p.incy * sizeof(float);
            q.a += (i0 * p.ars + j0 * p.acs) * sizeof(float);
            r.dispatch(Dispatch{.shader = "rk",
                                .push = &q,
                                .push_size = sizeof q,
                                .groups = {ceil_div(q.m, wg), ceil_div(q.n, cb), 1},
                                .spec = spec,
                                .reads = {&x, &y, &a},
                                .writes = {&a},
                                .label = "rk"});
        }
    }
}

}  // namespace vela::vk

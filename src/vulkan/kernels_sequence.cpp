// The sequence layers on Vulkan (docs/sequence.md): the embedding's
// scatter-add backward (shaders/embedding_backward.comp) in bounded chunks of
// tokens, the causal softmax and its backward (softmax_causal.comp), and the
// prefix sums down columns (cumsum.comp). Layer norm has its own kernels
// (kernels_layernorm.cpp).
#include <algorithm>
#include <cstddef>

#include "core/index_check.hpp"
#include "vulkan/device.hpp"

namespace vela::vk {

namespace {

struct EmbeddingPush {
    View dy, dE, idx;
    uint32_t j0 = 0, jn = 0, rows = 0, vocab = 0;
    uint64_t status = 0;  // the call's status word (written by the stream, see Dispatch::check)
};
static_assert(sizeof(EmbeddingPush) <= 128);  // the push-constant size every device has

// Tokens per dispatch: each invocation loops over at most this many.
constexpr uint64_t kTokens = 4096;

struct CausalPush {
    View x, y, z;
    uint32_t rows = 0, cols = 0;
};
static_assert(sizeof(CausalPush) <= 128);  // the push-constant size every device has

// softmax_causal.comp loops over a column up to three times.
constexpr int64_t kCausalRows = 4096;

void causal(VulkanDevice& dev, const char* fn, uint32_t backward, const Matrix& x, const Matrix& y, const Matrix& z) {
    if (x.rows > kCausalRows)
        fail("%s: x has %lld rows but %s takes at most %lld (the context T; each column is one loop)", fn,
             (long long)x.rows, dev.name().c_str(), (long long)kCausalRows);
    if (z.empty()) return;
    const uint32_t w = dev.small_wg();
    CausalPush p;
    p.x = dev.view(x);
    p.y = dev.view(y);
    p.z = dev.view(z);
    p.rows = uint32_t(x.rows);
    p.cols = uint32_t(x.cols);
    const ModeSpec spec{.wg = w, .mode = uint32_t(backward)};
    Dispatch d{.shader = "softmax_causal", .push = &p, .push_size = sizeof p, .spec = spec,
               .reads = {&x, &y}, .writes = {&z}, .label = fn};
    dev.grid(uint64_t(x.cols), w, d.groups);
    dev.dispatch(d);
}

struct CumsumPush {
    View x, y, part;
    uint32_t rows = 0, cols = 0, chunk = 0, chunks = 0;
};
static_assert(sizeof(CumsumPush) <= 128);  // the push-constant size every device has

// Rows of a column one cumsum.comp invocation loops over (as colstats.comp's chunk).
constexpr uint64_t kCumsumChunk = 4096;

// y ← the prefix sums of x's columns; part: the chunks' sums, in place, by the same
// two passes one level up (a level per factor of kCumsumChunk rows: three for 2^32).
void cumsum_levels(VulkanDevice& dev, const Matrix& x, const Matrix& y) {
    const uint64_t rows = uint64_t(x.rows), cols = uint64_t(x.cols);
    const uint64_t chunks = (rows + kCumsumChunk - 1) / kCumsumChunk;
    const uint32_t w = dev.small_wg();
    CumsumPush p;
    p.x = dev.view(x);
    p.y = dev.view(y);
    p.rows = uint32_t(rows);
    p.cols = uint32_t(cols);
    p.chunk = uint32_t(kCumsumChunk);
    p.chunks = uint32_t(chunks);
    Matrix part;
    if (chunks > 1) {
        part.buf = dev.alloc(DType::f32, size_t(chunks * cols));
        part.rows = int64_t(chunks);
        part.cols = int64_t(cols);
        part.ld = int64_t(chunks);
        p.part = dev.view(part);
        const ModeSpec sums{.wg = w, .mode = 1};
        Dispatch d{.shader = "cumsum", .push = &p, .push_size = sizeof p, .spec = sums, .reads = {&x},
                   .writes = {&part}, .label = kernel_label(Kernel::cumsum)};
        dev.grid(chunks * cols, w, d.groups);
        dev.dispatch(d);
        cumsum_levels(dev, part, part);
    }
    const ModeSpec scan{.wg = w, .mode = 0};
    Dispatch d{.shader = "cumsum", .push = &p, .push_size = sizeof p, .spec = scan,
               .reads = {&x, chunks > 1 ? &part : nullptr}, .writes = {&y}, .label = kernel_label(Kernel::cumsum)};
    dev.grid(chunks * cols, w, d.groups);
    dev.dispatch(d);
}

}  // namespace

void VulkanDevice::cumsum(const Matrix& x, const Matrix& y) {
    if (!y.empty()) cumsum_levels(*this, x, y);
}

void VulkanDevice::embedding_backward(const Matrix& dy, const Matrix& idx, const Matrix& dE) {
    if (dE.empty() || dy.cols == 0) return;
    const IndexCheck check{"embedding_backward", "idx", "a column index of dE", uint64_t(dE.cols)};
    const uint32_t w = small_wg();
    EmbeddingPush p;
    p.dy = view(dy);
    p.dE = view(dE);
    p.idx = view(idx);
    p.idx.rstep = uint32_t(idx.inc());
    p.rows = uint32_t(dE.rows);
    p.vocab = uint32_t(dE.cols);
    const WgSpec spec{.wg = w};
    for (uint64_t j0 = 0; j0 < uint64_t(dy.cols); j0 += kTokens) {
        p.j0 = uint32_t(j0);
        p.jn = uint32_t(std::min<uint64_t>(kTokens, uint64_t(dy.cols) - j0));
        Dispatch d{.shader = "embedding_backward", .push = &p, .push_size = sizeof p, .spec = spec,
                   .reads = {&dy, &idx, &dE}, .writes = {&dE}, .label = "embedding_backward", .check = &check,
                   .check_at = offsetof(EmbeddingPush, status)};
        grid(uint64_t(dE.rows) * uint64_t(dE.cols), w, d.groups);
        dispatch(d);
    }
}

void VulkanDevice::softmax_causal(const Matrix& x, const Matrix& y) { causal(*this, "softmax_causal", 0, x, x, y); }

void VulkanDevice::softmax_causal_backward(const Matrix& y, const Matrix& dy, const Matrix& dx) {
    causal(*this, "softmax_causal_backward", 1, y, dy, dx);
}

}  // namespace vela::vk

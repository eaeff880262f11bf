// Recording into the stream's current command buffer: a barrier only where a
// dispatch's buffers need one, small elementwise kernels as the steps of one
// batch dispatch (shaders/batch.comp), and Stream::dispatch, which picks
// between the two. The ring, submission and waits are in stream.cpp.
#include <algorithm>
#include <chrono>
#include <cstring>

#include "core/error.hpp"
#include "vulkan/stream_slot.hpp"

namespace vela::vk {

void Stream::barrier() {
    auto mb = make<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    vkCmdPipelineBarrier(ring_[cur_].cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0,
                         1, &mb, 0, nullptr, 0, nullptr);
    ++epoch_;
    dirty_ = false;
}

void Stream::hazard(const Dispatch& d) {
    // One global memory barrier orders everything recorded before it, so a
    // buffer touched in an earlier epoch needs no further barrier.
    bool need = false;
    for (const Matrix* m : d.reads) {
        auto* b = static_cast<VulkanBuffer*>(m->buf.get());
        need |= b->write_epoch == epoch_;
    }
    for (const Matrix* m : d.writes) {
        auto* b = static_cast<VulkanBuffer*>(m->buf.get());
        need |= b->write_epoch == epoch_ || b->read_epoch == epoch_;
    }
    if (need) barrier();
    mark(d);
}

void Stream::mark(const Dispatch& d) {
    for (const Matrix* m : d.reads) {
        auto* b = static_cast<VulkanBuffer*>(m->buf.get());
        b->read_epoch = epoch_;
        b->last_use = serial_;
    }
    for (const Matrix* m : d.writes) {
        auto* b = static_cast<VulkanBuffer*>(m->buf.get());
        b->write_epoch = epoch_;
        b->last_use = b->last_write = serial_;
    }
}

void Stream::set_batching(bool on, uint32_t iterations) {
    batching_ = on && ring_[0].steps.mapped;
    if (iterations) batch_iters_ = iterations;
    end_batch();
}

uint32_t Stream::step_iterations(const Dispatch& d) const {
    uint64_t per = (d.step & step::vec4) ? 4 : 1;
    uint64_t n = static_cast<const ElementPush*>(d.push)->n;
    return uint32_t(std::min<uint64_t>((n + batch_wg_ * per - 1) / (batch_wg_ * per), UINT32_MAX));
}

// llvmpipe (lavapipe) ends every loop of a shader invocation once the loops
// together have run 65,535 iterations (gallivm's LP_MAX_TGSI_LOOP_ITERATIONS),
// without an error: a batch whose steps add up to more would silently skip
// work. The host therefore bounds what one batch may loop: per step, the
// step loop and the element loop, and in each element-loop iteration (plus
// one for a loop entered under an empty lane mask) every tail loop of
// batch.comp, entered under a lane mask when it is not the step's, one of
// them running up to three iterations. Half the limit is left as margin; on
// GPUs, which have no such limit, the bound only splits very long batches.
static constexpr uint64_t kBatchLoopBudget = 32768;
static uint64_t step_loop_cost(uint32_t iterations) {
    return Stream::kBatchLoops + uint64_t(iterations + 1) * (1 + Stream::kBatchTailLoops + 3);
}

// A batch that holds few kinds of step runs a batch.comp variant compiled for
// them (see its BATCH_* constants): on lavapipe a 1-element step of the
// variant with every family and operation costs ~3x that of a level-1-only
// one. Variants are made as programs use them, at most kBatchVariants; past
// that, batches run the variant that reads every operation from memory.
static constexpr size_t kBatchVariants = 32;
static_assert(step::level1 >> step::family_shift == 1 && step::unary >> step::family_shift == 2 &&
              step::binary >> step::family_shift == 3 && step::bias >> step::family_shift == 4 &&
              step::backward >> step::family_shift == 5);  // batch.comp's constant_id of each family

VkPipeline Stream::batch_variant(uint32_t code, std::array<uint32_t, 6>& spec) {
    spec = batch_spec_;
    if (code) {
        uint32_t family = (code >> step::family_shift) & step::family_mask, op = code & step::op_mask;
        uint32_t& f = spec[family];
        f = f == kBatchAbsent ? op : f == op ? op : kBatchAny;
    }
    if (spec == batch_spec_ && batch_pipeline_) return batch_pipeline_;
    bool known = std::find(batch_variants_.begin(), batch_variants_.end(), spec) != batch_variants_.end();
    if (!known && batch_variants_.size() >= kBatchVariants) {
        spec = any_batch_spec();
        known = std::find(batch_variants_.begin(), batch_variants_.end(), spec) != batch_variants_.end();
    }
    VkPipeline pipeline = pipelines_.get("batch", spec.data(), uint32_t(spec.size()));  // may throw
    if (!known) batch_variants_.push_back(spec);
    return pipeline;
}

std::array<uint32_t, 6> Stream::any_batch_spec() const {
    std::array<uint32_t, 6> spec;
    spec.fill(kBatchAny);
    spec[0] = batch_wg_;
    return spec;
}

void Stream::reset_batch_spec() {
    batch_spec_.fill(kBatchAbsent);
    batch_spec_[0] = batch_wg_;
    batch_pipeline_ = VK_NULL_HANDLE;
}

void Stream::open_batch(Slot& s) {
    // Everything recorded before the batch is ordered before all of its steps,
    // so later steps need no check against it.
    if (dirty_) barrier();
    batch_ = reinterpret_cast<uint32_t*>(s.steps.mapped + s.steps_used);
    *batch_ = 0;
    batch_list_ = s.steps.address + s.steps_used;
    s.steps_used += 16;
    reset_batch_spec();
    dirty_ = true;
    ++inner_;
    batch_loops_ = 0;
}

// A dispatch under the drop's predicate, in a conditional block of its own:
// the spec lets a device sample the predicate once per block (any time between
// the begin and each dispatch), and a block per command buffer meant a device
// that does so ran every kernel of a command buffer it had started after a
// Ctrl-C (an H200 did: docs/vulkan.md). A block per dispatch lets such a
// device read the predicate again for each kernel.
void Stream::cmd_dispatch(VkCommandBuffer cb, uint32_t x, uint32_t y, uint32_t z) {
    if (cond_) {
        auto ci = make<VkConditionalRenderingBeginInfoEXT>(VK_STRUCTURE_TYPE_CONDITIONAL_RENDERING_BEGIN_INFO_EXT);
        ci.buffer = cond_buffer_;
        begin_cond_(cb, &ci);
    }
    vkCmdDispatch(cb, x, y, z);
    if (cond_) end_cond_(cb);
}

// Every other recording (a dispatch, a barrier, the end of the command buffer)
// ends the open batch first, so its dispatch lands where the batch began.
void Stream::end_batch() {
    if (!batch_) return;
    batch_ = nullptr;
    if (!batch_pipeline_ || !recording_) return;  // no step (its barrier only over-orders)
    Slot& s = ring_[cur_];
    if (batch_pipeline_ != bound_) {
        vkCmdBindPipeline(s.cb, VK_PIPELINE_BIND_POINT_COMPUTE, batch_pipeline_);
        bound_ = batch_pipeline_;
    }
    vkCmdPushConstants(s.cb, pipelines_.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof batch_list_, &batch_list_);
    cmd_dispatch(s.cb, 1, 1, 1);
    ++s.dispatches;
}

void Stream::add_step(const Dispatch& d) {
    if (!recording_) begin();
    Slot& s = ring_[cur_];
    uint64_t cost = step_loop_cost(step_iterations(d));
    if (batch_ && batch_loops_ + cost > kBatchLoopBudget) end_batch();
    if (!batch_) reset_batch_spec();  // the variant is chosen from an empty batch
    std::array<uint32_t, 6> spec;
    VkPipeline pipeline = batch_variant(d.step, spec);  // may throw: before any recording
    if (!batch_) open_batch(s);
    batch_spec_ = spec;
    batch_pipeline_ = pipeline;
    batch_loops_ += cost;
    // A workgroup barrier before this step where it reads what an earlier step
    // of the batch wrote, or writes what one read or wrote.
    bool sync = false;
    for (const Matrix* m : d.reads) sync |= static_cast<VulkanBuffer*>(m->buf.get())->step_write == inner_;
    for (const Matrix* m : d.writes) {
        auto* b = static_cast<VulkanBuffer*>(m->buf.get());
        sync |= b->step_write == inner_ || b->step_read == inner_;
    }
    if (sync) ++inner_;
    for (const Matrix* m : d.reads) static_cast<VulkanBuffer*>(m->buf.get())->step_read = inner_;
    for (const Matrix* m : d.writes) static_cast<VulkanBuffer*>(m->buf.get())->step_write = inner_;
    mark(d);
    // Room for kBatch steps and kBatch + 1 list headers: a slot never holds more kernels.
    auto* step = reinterpret_cast<ElementPush*>(s.steps.mapped + s.steps_used);
    *step = *static_cast<const ElementPush*>(d.push);
    step->step = d.step | (sync ? step::sync : 0);
    s.steps_used += sizeof(ElementPush);
    ++*batch_;
    ++stats_.dispatches;
    ++stats_.batched;
    if (++s.kernels >= kBatch) submit();
}

// The dispatch's texel views as set 0 (Caps::texel_views; the pipeline
// layout's push-descriptor set, see Pipelines). The views are their memory
// blocks', which outlive every command buffer that uses their allocations.
void Stream::push_texels(Slot& s, const Dispatch& d) {
    if (!push_descriptor_) {
        push_descriptor_ = reinterpret_cast<PFN_vkCmdPushDescriptorSetKHR>(
            vkGetDeviceProcAddr(gpu_.device, "vkCmdPushDescriptorSetKHR"));
        if (!push_descriptor_) fail("vulkan: %s: the device has no vkCmdPushDescriptorSetKHR", d.shader);
    }
    VkWriteDescriptorSet w[kTexelBindings];
    uint32_t n = 0;
    for (uint32_t i = 0; i < kTexelBindings; ++i) {
        if (!d.texels[i]) continue;  // a binding the shader does not use
        w[n] = make<VkWriteDescriptorSet>(VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET);
        w[n].dstBinding = i;
        w[n].descriptorCount = 1;
        w[n].descriptorType = texel_binding_type(i);
        w[n].pTexelBufferView = &d.texels[i];
        ++n;
    }
    push_descriptor_(s.cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipelines_.layout(), 0, n, w);
}

void Stream::dispatch(const Dispatch& d) {
    if (d.push_size > kPushBytes || d.push_size > caps_.max_push_constants || d.push_size % 4)
        fail("vulkan: %s: push constants of %u bytes (at most %u, a multiple of 4)", d.shader, d.push_size,
             caps_.max_push_constants);
    for (int i = 0; i < 3; ++i)
        if (d.groups[i] > caps_.max_workgroup_count[i])
            fail("vulkan: %s: %u workgroups in dimension %d, the device allows %u", d.shader, d.groups[i], i,
                 caps_.max_workgroup_count[i]);
    if (d.groups[0] == 0 || d.groups[1] == 0 || d.groups[2] == 0) return;
    if (d.step && batching_ && !profiling_) {
        uint32_t iterations = step_iterations(d);
        if (iterations <= batch_iters_ && step_loop_cost(iterations) <= kBatchLoopBudget) return add_step(d);
    }
    VkPipeline pipeline = pipelines_.get(d.shader, d.spec.data, d.spec.count);  // may throw: before any recording

    if (!recording_) begin();
    end_batch();
    Slot& s = ring_[cur_];
    const void* push = d.push;
    uint8_t patched[kPushBytes];
    if (d.check && s.steps.mapped && d.check_at + 8 <= d.push_size) {
        // The call's status word: "no bad index" until the kernel finds one.
        uint32_t k = uint32_t(s.checks.size());
        s.checks.push_back(*d.check);
        s.status()[k] = ~0u;
        uint64_t at = s.steps.address + Slot::kStatusAt + 4ull * k;
        std::memcpy(patched, d.push, d.push_size);
        std::memcpy(patched + d.check_at, &at, 8);
        push = patched;
    }
    if (d.loop_probe) s.probed.push_back(d.label);
    hazard(d);
    if (pipeline != bound_) {
        vkCmdBindPipeline(s.cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
        bound_ = pipeline;
    }
    if (d.push_size) vkCmdPushConstants(s.cb, pipelines_.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, d.push_size, push);
    if (d.texels[0]) push_texels(s, d);
    // Profiling without timestamp queries: each kernel runs alone in a
    // submission, timed on the host from submission to its fence.
    const bool host_timed = profiling_ && !s.profiled;
    if (s.profiled) {
        vkCmdWriteTimestamp(s.cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, s.queries, 2 * s.dispatches);
        cmd_dispatch(s.cb, d.groups[0], d.groups[1], d.groups[2]);
        vkCmdWriteTimestamp(s.cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, s.queries, 2 * s.dispatches + 1);
        const KernelCall& c = current_call();  // the user's call names it on every device
        s.labels.emplace_back(c.name ? c.name : d.label ? d.label : d.shader);
        s.calls.push_back(c.id);
    } else {
        cmd_dispatch(s.cb, d.groups[0], d.groups[1], d.groups[2]);
    }
    dirty_ = true;
    ++s.dispatches;
    ++stats_.dispatches;
    if (host_timed) {
        const KernelCall& c = current_call();
        std::string label = c.name ? c.name : d.label ? d.label : d.shader;
        uint64_t call = c.id, serial = s.serial;
        ++s.kernels;
        auto t0 = std::chrono::steady_clock::now();
        wait(serial);  // submits it
        times_.push_back({label, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count(),
                          call});
        return;
    }
    if (++s.kernels >= kBatch) submit();
}

}  // namespace vela::vk

// The stream's ring of command buffers (stream.hpp says how it works): the
// slots, beginning and submitting a command buffer, fences and waits, Ctrl-C,
// deferred frees, timestamps and index checks read back. Recording into the
// current command buffer is in stream_dispatch.cpp.
#include "vulkan/stream.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/error.hpp"
#include "vulkan/context.hpp"
#include "vulkan/loop_probe.hpp"
#include "vulkan/status_line.hpp"
#include "vulkan/stream_slot.hpp"

namespace vela::vk {

namespace {
// Throws Interrupted naming the failure r of `call` on device `name`: a
// failure (the device lost) that answers a Ctrl-C the wait took.
[[noreturn]] void interrupted_by(const std::string& name, VkResult r, const char* call) {
    std::string what = "failed";
    try {
        check(r, call);
    } catch (const Error& e) {
        what = e.what();
    }
    throw Interrupted(format("interrupted: %s: %s", name.c_str(), what.c_str()));
}
}  // namespace

void VulkanBuffer::free_storage() {
    stream_.retire(alloc, last_use);
    alloc = Allocation{};
}

Stream::Stream(Gpu& gpu, Pipelines& pipelines, Memory& memory, const Caps& caps, std::string name)
    : gpu_(gpu), pipelines_(pipelines), memory_(memory), caps_(caps), name_(std::move(name)), ring_(kRing) {
    VkDevice dev = gpu.device;
    timestamp_ns_ = gpu.phys.props.limits.timestampPeriod;
    if (gpu.phys.timestamp_bits > 0 && gpu.phys.timestamp_bits < 64)
        timestamp_mask_ = (1ull << gpu.phys.timestamp_bits) - 1;
    if (gpu.phys.conditional) make_predicate();
    // VELA_VK_TIMESTAMPS=0 times kernels on the host as on a device without timestamp queries.
    const bool timestamps = gpu.phys.timestamps && (!std::getenv("VELA_VK_TIMESTAMPS") || env_on("VELA_VK_TIMESTAMPS"));
    // The batch is one workgroup: on a CPU implementation one subgroup (no
    // barrier ever switches between subgroups), on a GPU a full workgroup. A
    // step of more than batch_iters_ loop iterations per invocation is worth a
    // dispatch of its own (measured on lavapipe; see docs/vulkan.md).
    uint32_t max_wg = std::min(caps.max_workgroup_invocations, caps.max_workgroup_size[0]);
    batch_wg_ = std::min<uint32_t>(caps.software ? caps.subgroup_size : 256, max_wg);
    batch_iters_ = caps.software ? 32 : 4;
    batching_ = !std::getenv("VELA_VK_BATCH") || env_on("VELA_VK_BATCH");
    for (Slot& s : ring_) {
        auto pi = make<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
        pi.flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
        pi.queueFamilyIndex = gpu.phys.queue_family;
        VkCommandPool pool = VK_NULL_HANDLE;
        check(vkCreateCommandPool(dev, &pi, nullptr, &pool), "vkCreateCommandPool");
        s.pool = OwnedCommandPool(dev, pool);
        auto ai = make<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
        ai.commandPool = pool;
        ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
        ai.commandBufferCount = 1;
        check(vkAllocateCommandBuffers(dev, &ai, &s.cb), "vkAllocateCommandBuffers");
        auto fi = make<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
        VkFence fence = VK_NULL_HANDLE;
        check(vkCreateFence(dev, &fi, nullptr, &fence), "vkCreateFence");
        s.fence = OwnedFence(dev, fence);
        if (timestamps) {
            auto qi = make<VkQueryPoolCreateInfo>(VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO);
            qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
            qi.queryCount = 2 * kBatch;
            VkQueryPool qp = VK_NULL_HANDLE;
            check(vkCreateQueryPool(dev, &qi, nullptr, &qp), "vkCreateQueryPool");
            s.queries = OwnedQueryPool(dev, qp);
        }
        // kBatch steps and a list header for each, plus the first command buffer's
        // empty batch; then kBatch status words (index checks).
        s.steps = memory.alloc(Slot::kStatusAt + kBatch * 4, Pool::host);
        if (!s.steps.mapped) batching_ = false;  // (host pools are always mapped)
    }
    loop_word_ = memory.alloc(kStatusWords * 4, Pool::host);  // the user kernels' loop status and stop words
    if (loop_word_.mapped) std::memset(loop_word_.mapped, 0, kStatusWords * 4);
}

// A 4-byte host-visible, coherent buffer holding 1 (run) or 0 (skip).
void Stream::make_predicate() {
    VkDevice dev = gpu_.device;
    begin_cond_ = reinterpret_cast<PFN_vkCmdBeginConditionalRenderingEXT>(
        vkGetDeviceProcAddr(dev, "vkCmdBeginConditionalRenderingEXT"));
    end_cond_ = reinterpret_cast<PFN_vkCmdEndConditionalRenderingEXT>(
        vkGetDeviceProcAddr(dev, "vkCmdEndConditionalRenderingEXT"));
    if (!begin_cond_ || !end_cond_) return;
    auto bi = make<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
    bi.size = 4;
    bi.usage = VK_BUFFER_USAGE_CONDITIONAL_RENDERING_BIT_EXT;
    bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    VkBuffer buf = VK_NULL_HANDLE;
    check(vkCreateBuffer(dev, &bi, nullptr, &buf), "vkCreateBuffer");
    cond_buffer_ = OwnedBuffer(dev, buf);
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(dev, buf, &req);
    const VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    const auto& mp = gpu_.phys.memory;
    uint32_t type = UINT32_MAX;
    for (uint32_t i = 0; i < mp.memoryTypeCount && type == UINT32_MAX; ++i)
        if ((req.memoryTypeBits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & want) == want) type = i;
    if (type == UINT32_MAX) return;  // no such memory: Ctrl-C stops waits only
    auto ai = make<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
    ai.allocationSize = req.size;
    ai.memoryTypeIndex = type;
    VkDeviceMemory mem = VK_NULL_HANDLE;
    check(vkAllocateMemory(dev, &ai, nullptr, &mem), "vkAllocateMemory");
    cond_memory_ = OwnedMemory(dev, mem);
    check(vkBindBufferMemory(dev, buf, mem, 0), "vkBindBufferMemory");
    void* p = nullptr;
    check(vkMapMemory(dev, mem, 0, VK_WHOLE_SIZE, 0, &p), "vkMapMemory");
    cond_ = static_cast<volatile uint32_t*>(p);
    *cond_ = 1;
}

Stream::~Stream() {
    try {
        sync();
    } catch (...) {
        (void)vkDeviceWaitIdle(gpu_.device);  // lost or interrupted: still nothing may run past this point
        completed_ = serial_;
    }
    for (auto& [serial, a] : retired_) memory_.free(a);
    for (Slot& s : ring_) memory_.free(s.steps);
    if (loop_word_) memory_.free(loop_word_);
}

void Stream::begin() {
    Slot& s = ring_[cur_];
    if (s.pending) wait_slot(s, true);
    check(vkResetCommandPool(gpu_.device, s.pool, 0), "vkResetCommandPool");
    auto bi = make<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    check(vkBeginCommandBuffer(s.cb, &bi), "vkBeginCommandBuffer");
    s.serial = ++serial_;
    s.dispatches = 0;
    s.kernels = 0;
    s.steps_used = 0;
    s.labels.clear();
    s.calls.clear();
    s.checks.clear();  // (a slot dropped by Ctrl-C: its kernels never ran)
    s.probed.clear();
    s.profiled = profiling_ && s.queries;
    if (s.profiled) vkCmdResetQueryPool(s.cb, s.queries, 0, 2 * kBatch);
    bound_ = VK_NULL_HANDLE;
    recording_ = true;
    // No batch is made ahead of the first kernel: each batch.comp variant
    // (even the one with no step family) costs lavapipe 0.04-0.15 s of
    // processor time per process and SwiftShader 0.17-0.8 s, most of a first
    // product's (docs/results.md, "First use, stand-in block"; docs/vulkan.md).
}

void Stream::submit() {
    if (!recording_) return;
    // After a Ctrl-C on a device without conditional rendering the stop word
    // stays set until the work submitted before it has completed; new work
    // must not see it (an interrupted wait here leaves the recording as it was).
    if (stop_through_ > completed_) wait(stop_through_);
    end_batch();
    Slot& s = ring_[cur_];
    // Make shader writes visible to the host: read-backs map the memory after the fence.
    auto mb = make<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
    vkCmdPipelineBarrier(s.cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr,
                         0, nullptr);
    recording_ = false;
    check(vkEndCommandBuffer(s.cb), "vkEndCommandBuffer");
    auto si = make<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
    si.commandBufferCount = 1;
    si.pCommandBuffers = &s.cb;
    check(vkQueueSubmit(gpu_.queue, 1, &si, s.fence), "vkQueueSubmit");
    if (!submitted_once_) {
        submitted_once_ = true;
        arm_exit_teardown();
    }
    s.pending = true;
    ++stats_.submissions;
    cur_ = (cur_ + 1) % kRing;
}

void Stream::flush() {
    if (recording_) submit();
}

void Stream::wait_slot(Slot& s, bool count) {
    const uint32_t fresh = pipelines_.take_fresh();  // made since the last wait
    VkResult r = vkGetFenceStatus(gpu_.device, s.fence);
    if (r == VK_NOT_READY) {
        if (count) ++stats_.host_waits;
        // VELA_SAY_WAITS=1 (a test hook): a line on stderr as the host blocks,
        // so a test can press Ctrl-C inside the wait, not just before it.
        static const bool say = [] {
            const char* e = std::getenv("VELA_SAY_WAITS");
            return e && std::strcmp(e, "1") == 0;
        }();
        if (say) std::fputs("vela: the host waits for the device\n", stderr);
        // lavapipe compiles a new pipeline with LLVM at its first dispatch:
        // seconds for mm. Say so on a terminal while the host waits for it.
        if (fresh && gpu_.phys.info.driver == "llvmpipe")
            status_show(format("vela: %s: compiling %u new kernel%s (first use)…", name_.c_str(), fresh,
                               fresh == 1 ? "" : "s"));
        // Wait in slices so Ctrl-C (the shell sets interrupt_flag) ends a long wait.
        VkFence f = s.fence;
        auto t0 = std::chrono::steady_clock::now();
        bool interrupted = false;
        while ((r = vkWaitForFences(gpu_.device, 1, &f, VK_TRUE, 20'000'000)) == VK_TIMEOUT)
            if (interrupt_flag().exchange(false)) {
                interrupted = true;
                break;
            }
        stats_.wait_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (interrupted) {
            status_clear();
            if (cond_) drop_queued();
            stop_user_kernels();
        }
    }
    status_clear();
    // A Ctrl-C that came as the wait failed (the device lost) is taken with
    // the failure: an error other than Interrupted would leave the shell's
    // pending "interrupted!" hook in place, and that would replace the message
    // at the next instruction, past the caller's pcall (seen on an H200).
    if (r < 0 && interrupt_flag().exchange(false)) interrupted_by(name_, r, "vkWaitForFences");
    check(r, "vkWaitForFences");
    complete_through(s.serial);
}

void Stream::drop_queued() {
    uint64_t dropped = 0;
    if (recording_) {  // never submitted: dropped whole
        end_batch();
        Slot& s = ring_[cur_];
        (void)vkEndCommandBuffer(s.cb);
        dropped += s.kernels;
        recording_ = false;
        cur_ = (cur_ + 1) % kRing;
    }
    std::vector<VkFence> fences;
    for (Slot& s : ring_)
        if (s.pending && vkGetFenceStatus(gpu_.device, s.fence) == VK_NOT_READY) {
            dropped += s.kernels;
            fences.push_back(s.fence);
        }
    *cond_ = 0;  // every dispatch not yet started is skipped
    set_stop(1);  // a user kernel running returns at its next check
    // The kernel running finishes (a built-in one) or stops at its next check
    // (one written at the prompt): a bounded wait all the same, so that a
    // kernel that does neither (a device that never sees the stop word) does
    // not hold the prompt; the skip and the stop word then stay until that
    // work completes, which the next submission waits for (submit).
    const uint64_t slice = 20'000'000, most = 150;  // 3 s
    VkResult r = VK_SUCCESS;
    for (uint64_t i = 0; !fences.empty() && i < most; ++i)
        if ((r = vkWaitForFences(gpu_.device, uint32_t(fences.size()), fences.data(), VK_TRUE, slice)) != VK_TIMEOUT)
            break;
    if (r < 0) interrupted_by(name_, r, "vkWaitForFences");  // lost: say so, as the Ctrl-C's answer
    if (r == VK_TIMEOUT) {
        uint64_t last = 0;
        for (Slot& s : ring_)
            if (s.pending) last = std::max(last, s.serial);
        stop_through_ = std::max(stop_through_, last);  // complete_through clears the stop word and the skip
        end_batch();
        bound_ = VK_NULL_HANDLE;
        throw Interrupted(format("interrupted: dropped up to %llu queued kernel%s on %s, but the kernel running was "
                                 "still running after %.1f s (one written at the prompt stops at its next check, a "
                                 "built-in one finishes): the next call on %s waits for it (Ctrl-C stops that wait); "
                                 "the matrices they would have written hold undefined values",
                                 (unsigned long long)dropped, dropped == 1 ? "" : "s", name_.c_str(),
                                 double(most * slice) * 1e-9, name_.c_str()));
    }
    set_stop(0);
    *cond_ = 1;
    complete_through(serial_);
    end_batch();
    bound_ = VK_NULL_HANDLE;
    throw Interrupted(format("interrupted: dropped up to %llu queued kernel%s on %s (the one running finished, or "
                             "stopped early if written at the prompt); the matrices they would have written hold "
                             "undefined values",
                             (unsigned long long)dropped, dropped == 1 ? "" : "s", name_.c_str()));
}

void Stream::set_stop(uint32_t v) {
    if (loop_word_.mapped) __atomic_store_n(reinterpret_cast<uint32_t*>(loop_word_.mapped) + kStopWord, v, __ATOMIC_SEQ_CST);
}

void Stream::stop_user_kernels() {
    for (Slot& s : ring_)
        if (s.pending) stop_through_ = std::max(stop_through_, s.serial);
    if (stop_through_ > completed_) set_stop(1);  // cleared by complete_through
    throw Interrupted(format("interrupted: the kernels written at the prompt already submitted to %s stop at their "
                             "next check (the matrices they write hold partial values); its other queued kernels "
                             "still run (this device cannot drop them)",
                             name_.c_str()));
}

void Stream::complete_through(uint64_t serial) {
    // Fences signal in submission order on one queue: everything up to `serial` is done.
    std::vector<Slot*> done;
    for (Slot& s : ring_)
        if (s.pending && s.serial <= serial) done.push_back(&s);
    std::sort(done.begin(), done.end(), [](Slot* a, Slot* b) { return a->serial < b->serial; });
    for (Slot* s : done) {
        s->pending = false;
        VkFence f = s->fence;
        check(vkResetFences(gpu_.device, 1, &f), "vkResetFences");
        // The index checks of its kernels, in the order they were recorded.
        const uint32_t* status = s->checks.empty() ? nullptr : s->status();
        for (size_t k = 0; k < s->checks.size(); ++k) {
            if (status[k] == ~0u) continue;
            if (bad_calls_++ == 0) bad_check_ = s->checks[k], bad_pos_ = status[k];
        }
        s->checks.clear();
        // The loop probes of its user kernels: one word for the device, so a
        // cut seen here is named after this slot's user kernels (a later slot
        // already running may have set it: it is reported either way).
        if (!s->probed.empty() && loop_word_.mapped) {
            uint32_t cut = __atomic_exchange_n(reinterpret_cast<uint32_t*>(loop_word_.mapped), 0u, __ATOMIC_SEQ_CST);
            if (cut && loop_calls_++ == 0) {
                std::string names;
                for (const char* n : s->probed)
                    if (names.find(n) == std::string::npos) names += (names.empty() ? "" : ", ") + std::string(n);
                loop_cut_ = names;
            }
        }
        s->probed.clear();
        if (s->profiled && s->dispatches) {
            std::vector<uint64_t> ts(2 * s->dispatches);
            check(vkGetQueryPoolResults(gpu_.device, s->queries, 0, 2 * s->dispatches, ts.size() * 8, ts.data(), 8,
                                        VK_QUERY_RESULT_64_BIT),
                  "vkGetQueryPoolResults");
            for (uint32_t i = 0; i < s->dispatches && i < s->labels.size(); ++i)
                times_.push_back({s->labels[i],
                                  double((ts[2 * i + 1] - ts[2 * i]) & timestamp_mask_) * timestamp_ns_ * 1e-6,
                                  s->calls[i]});
        }
    }
    completed_ = std::max(completed_, serial);
    if (stop_through_ && completed_ >= stop_through_) {
        set_stop(0);
        if (cond_) *cond_ = 1;  // (a drop whose running kernel outlived its wait: see drop_queued)
        stop_through_ = 0;
    }
    auto keep = std::remove_if(retired_.begin(), retired_.end(), [&](auto& r) {
        if (r.first > completed_) return false;
        memory_.free(r.second);
        return true;
    });
    retired_.erase(keep, retired_.end());
}

uint64_t Stream::queued() {
    uint64_t n = 0;
    for (Slot& s : ring_) {
        if (s.pending && vkGetFenceStatus(gpu_.device, s.fence) == VK_NOT_READY) n += s.kernels;
    }
    if (recording_) n += ring_[cur_].kernels;
    return n;
}

void Stream::wait(uint64_t serial) {
    if (serial <= completed_) return;
    if (recording_ && serial >= ring_[cur_].serial) {
        if (ring_[cur_].kernels == 0) {  // no kernel recorded yet in it: nothing to wait for there
            serial = ring_[cur_].serial - 1;
            if (serial <= completed_) return;
        } else {
            submit();
        }
    }
    // A sync point: the host needs work it has not seen complete (counted
    // even when the fence turns out signalled already).
    ++stats_.host_waits;
    for (Slot& s : ring_)
        if (s.pending && s.serial == serial) {
            wait_slot(s, false);
            return;
        }
    // Its slot was already recycled, which implies it completed.
    complete_through(serial);
}

void Stream::sync() {
    flush();
    uint64_t last = 0;
    for (Slot& s : ring_)
        if (s.pending) last = std::max(last, s.serial);
    if (last) wait(last);
}

void Stream::retire(const Allocation& a, uint64_t last_use) {
    if (!a) return;
    if (last_use <= completed_)
        memory_.free(a);
    else
        retired_.emplace_back(last_use, a);
}

bool Stream::reclaim() {
    if (retired_.empty()) return false;
    sync();
    return true;
}

void Stream::profile_begin() {
    flush();  // the next command buffer starts with a reset query pool
    times_.clear();
    profiling_ = true;
}

void Stream::report_checks() {
    if (loop_calls_) {
        loop_calls_ = 0;
        throw Error(format("an earlier call on %s failed: %s", name_.c_str(), loop_cut_message(loop_cut_).c_str()));
    }
    if (bad_calls_ == 0) return;
    uint64_t more = bad_calls_ - 1;
    bad_calls_ = 0;
    std::string also = more ? format("; %llu later call%s found bad labels or indices too", (unsigned long long)more,
                                     more == 1 ? "" : "s")
                            : std::string();
    throw Error(format("an earlier call on %s failed: %s; it wrote NaN in the columns of its outputs where they "
                       "are bad%s (a Vulkan device checks labels and indices as the kernel runs and reports at the "
                       "next read or sync)",
                       name_.c_str(), bad_index_message(bad_check_, bad_pos_).c_str(), also.c_str()));
}

std::vector<KernelTime> Stream::profile_end() {
    sync();
    profiling_ = false;
    return std::move(times_);
}

}  // namespace vela::vk

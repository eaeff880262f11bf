// The stream: where dispatches are recorded and submitted. Nothing is
// submitted per call. Dispatches go into the current command buffer of a
// small ring; it is submitted when the host needs a result, on flush/sync, or
// when it holds `kBatch` dispatches, and recording continues in the next
// command buffer while the device runs the first. A compute barrier is
// recorded only where a dispatch touches a buffer that an earlier one wrote
// (read-after-write, write-after-write) or read (write-after-read).
// Memory freed while queued work may still use it returns to the allocator
// only when that work has completed.
//
// Small elementwise kernels (Dispatch::step, n up to batch_max()) are not
// dispatched one by one: consecutive ones become the steps of one dispatch of
// shaders/batch.comp, whose step list lives in host-visible memory of the
// command buffer's slot and is written until the command buffer is submitted.
// A batch ends at the first other dispatch, at submission, and while profiling
// (profile() times each kernel). VELA_VK_BATCH=0 turns batching off.
//
// Kernels that check an index operand (Dispatch::check: softmax_xent's
// labels, gather_cols' column numbers) get one 32-bit status word each in the
// host-visible memory of their command buffer's slot (a slot holds at most
// kBatch kernels, so kBatch words). The shader keeps the first bad position
// there; when the slot's fence is seen signalled (by any wait) the host reads
// the words and keeps what they found, and the device's next read, sync or
// reduction throws it (report_checks): no wait is added for the check.
//
// Ctrl-C during a wait drops the queued work: on devices with
// VK_EXT_conditional_rendering every dispatch runs under a predicate in
// host-visible memory, in a conditional block of its own (cmd_dispatch says
// why); the interrupted wait clears it, so the
// dispatches not yet started are skipped (the one running finishes), drops
// the command buffer being recorded, waits for the queue to drain (3 s at
// most; then the skip and the stop word stay until that work completes) and
// throws Interrupted saying how many kernels were dropped. Devices without the
// extension stop the wait only (their submitted work still runs). Either way
// the user kernels' stop word (loop_probe.hpp) ends a kernel written at the
// prompt that runs or is queued: at once with the extension, else until the
// work submitted before the Ctrl-C completes (the next submission waits for it).
#pragma once
#include <vulkan/vulkan.h>

#include <array>
#include <string>
#include <vector>

#include "core/device.hpp"
#include "vulkan/buffer.hpp"
#include "vulkan/kernel.hpp"
#include "vulkan/pipelines.hpp"

namespace vela::vk {

class Stream {
public:
    static constexpr uint32_t kRing = 4;     // command buffers in flight
    static constexpr uint32_t kBatch = 256;  // kernels per command buffer before it is submitted
    static constexpr uint32_t kBatchLoops = 2;      // loops per step in shaders/batch.comp: step loop, element loop
    static constexpr uint32_t kBatchTailLoops = 2;  // loops inside one element-loop iteration (vec4 tails)
    // A step family's specialization constant in batch.comp (BATCH_ABSENT, BATCH_ANY):
    // no step of the family in the batch, or steps of several of its operations.
    static constexpr uint32_t kBatchAbsent = 0xfffffffeu, kBatchAny = 0xffffffffu;

    Stream(Gpu& gpu, Pipelines& pipelines, Memory& memory, const Caps& caps, std::string name);
    ~Stream();  // waits for the device, then frees what was retired
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;

    void dispatch(const Dispatch& d);
    // Batching of small elementwise kernels (on by default, unless VELA_VK_BATCH=0);
    // iterations (nonzero): the most element-loop iterations per invocation of a
    // kernel run as a step (tests raise it; the default is chosen from the device).
    void set_batching(bool on, uint32_t iterations = 0);
    bool batching() const { return batching_; }
    uint32_t batch_iterations() const { return batch_iters_; }
    void flush();                // submit what is recorded, without waiting
    void sync();                 // submit and wait for everything (polls the interrupt flag)
    void wait(uint64_t serial);  // wait until the command buffer `serial` has completed
    uint64_t queued();           // kernels recorded or submitted whose fence has not signalled (no wait)

    // Host access to mapped memory: wait for queued work that writes the buffer
    // (before reading) or uses it at all (before writing).
    void before_host_read(const VulkanBuffer& b) { wait(b.last_write); }
    void before_host_write(const VulkanBuffer& b) { wait(b.last_use); }

    // Return an allocation to the allocator once the work up to `last_use` is done.
    void retire(const Allocation& a, uint64_t last_use);
    // Waits for the work that still uses retired allocations and frees them;
    // false when nothing was retired (the allocator's last try before failing).
    bool reclaim();

    const DeviceStats& stats() const { return stats_; }
    Pipelines& pipelines() { return pipelines_; }
    void count_transfer(bool upload, uint64_t bytes) {
        if (upload) ++stats_.uploads, stats_.upload_bytes += bytes;
        else ++stats_.downloads, stats_.download_bytes += bytes;
    }
    void profile_begin();
    std::vector<KernelTime> profile_end();

    // Throws, once, the first bad index that completed kernels found (see
    // above), saying how many more calls found one; then the stream goes on as
    // before. Called by the device after each host read, sync and reduction.
    void report_checks();
    // The device address of the user kernels' loop status word (0: none; core/user_kernel.hpp).
    uint64_t loop_status_address() const { return loop_word_.mapped ? loop_word_.address : 0; }

private:
    struct Slot;
    void begin();
    void submit();
    void complete_through(uint64_t serial);  // bookkeeping once the fence of `serial` signalled
    void wait_slot(Slot& s, bool count);
    [[noreturn]] void drop_queued();  // after Ctrl-C in a wait: skip, drain (3 s at most), throw Interrupted
    [[noreturn]] void stop_user_kernels();  // the same without conditional rendering: set the stop word, throw
    void set_stop(uint32_t v);              // the user kernels' stop word
    void make_predicate();
    void hazard(const Dispatch& d);
    void mark(const Dispatch& d);      // record d's buffers as used in the current epoch
    void barrier();                    // one global compute → compute memory barrier
    void add_step(const Dispatch& d);  // d as the next step of the open batch (opened if none)
    uint32_t step_iterations(const Dispatch& d) const;  // element-loop iterations per invocation
    void open_batch(Slot& s);          // start a batch (its barrier); steps are added to it
    void reset_batch_spec();           // no step yet: every family absent, no variant chosen
    std::array<uint32_t, 6> any_batch_spec() const;  // the variant with every family, operations read from memory
    void end_batch();                  // record the open batch's dispatch, with the variant its steps need
    void cmd_dispatch(VkCommandBuffer cb, uint32_t x, uint32_t y, uint32_t z);  // under the predicate, where there is one
    void push_texels(Slot& s, const Dispatch& d);  // d.texels as set 0 (push descriptors)
    // The batch.comp variant for what the open batch holds plus step code `code`
    // (0: none); may throw, so it is called before anything of the step is recorded.
    VkPipeline batch_variant(uint32_t code, std::array<uint32_t, 6>& spec);

    Gpu& gpu_;
    Pipelines& pipelines_;
    Memory& memory_;
    const Caps& caps_;
    std::string name_;
    std::vector<Slot> ring_;
    uint32_t cur_ = 0;
    bool recording_ = false;
    bool submitted_once_ = false;  // the first submission arms the exit teardown again (context.hpp)
    uint64_t serial_ = 0;     // serial of the command buffer being recorded (or last one)
    uint64_t completed_ = 0;  // every command buffer with serial <= completed_ has finished
    uint64_t epoch_ = 1;      // bumped by each barrier
    bool dirty_ = false;      // a dispatch was recorded after the last barrier
    VkPipeline bound_ = VK_NULL_HANDLE;
    // The open batch: its step count in the slot's step memory (null: none open).
    uint32_t* batch_ = nullptr;
    uint64_t inner_ = 0;  // step stamp: bumped by each batch and by each barrier inside one
    bool batching_ = true;
    uint64_t batch_loops_ = 0;  // loop iterations the open batch may run (bounded: see add_step)
    uint32_t batch_wg_ = 64, batch_iters_ = 4;
    // The open batch's step list address, pipeline and specialization (batch.comp:
    // workgroup size, then per step family its one operation, absent or any).
    uint64_t batch_list_ = 0;
    VkPipeline batch_pipeline_ = VK_NULL_HANDLE;
    std::array<uint32_t, 6> batch_spec_{};
    std::vector<std::array<uint32_t, 6>> batch_variants_;  // the variants made so far (bounded)
    std::vector<std::pair<uint64_t, Allocation>> retired_;
    // Found by completed kernels, not yet reported: the first, and how many calls in all.
    IndexCheck bad_check_{};
    uint32_t bad_pos_ = 0;  // 0-based
    uint64_t bad_calls_ = 0;
    Allocation loop_word_;  // user kernels' loop status word (host-visible)
    std::string loop_cut_;  // the user kernels named by the first cut loop not yet reported
    uint64_t loop_calls_ = 0;
    uint64_t stop_through_ = 0;  // the stop word is set until this serial completes (0: not set)
    DeviceStats stats_;
    bool profiling_ = false;
    double timestamp_ns_ = 1;
    std::vector<KernelTime> times_;
    uint64_t timestamp_mask_ = ~0ull;
    // Conditional rendering predicate (null: the device lacks it).
    OwnedBuffer cond_buffer_;
    OwnedMemory cond_memory_;
    volatile uint32_t* cond_ = nullptr;
    PFN_vkCmdBeginConditionalRenderingEXT begin_cond_ = nullptr;
    PFN_vkCmdEndConditionalRenderingEXT end_cond_ = nullptr;
    PFN_vkCmdPushDescriptorSetKHR push_descriptor_ = nullptr;  // found at the first push_texels
};

}  // namespace vela::vk

// User kernels on the cpu device: the same SPIR-V as on the Vulkan devices,
// run by a software Vulkan driver (lavapipe) on the cpu matrices' own host
// memory. Each buffer is imported with VK_EXT_external_memory_host: the
// driver's alignment (minImportedHostPointerAlignment) is met by importing
// the aligned range that contains the buffer and addressing it at an offset.
// Nothing is copied. The cpu device is synchronous, so each call waits.
//
// This runner has its own logical device on the software driver (the
// extension enabled), its own pipelines (with the on-disk pipeline cache) and
// one command buffer; the vulkan:N device on the same driver is untouched.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "core/error.hpp"
#include "core/user_kernel.hpp"
#include "userk/host_runner.hpp"
#include "vulkan/backend.hpp"
#include "vulkan/context.hpp"
#include "vulkan/kernel.hpp"
#include "vulkan/loop_probe.hpp"
#include "vulkan/pipelines.hpp"

namespace vela::userk {

using namespace vela::vk;

namespace {

bool has_extension(VkPhysicalDevice pd, const char* name) {
    uint32_t n = 0;
    if (vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr) != VK_SUCCESS) return false;
    std::vector<VkExtensionProperties> ext(n);
    if (vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, ext.data()) != VK_SUCCESS) return false;
    for (auto& e : ext)
        if (std::strcmp(e.extensionName, name) == 0) return true;
    return false;
}

uint32_t floor_pow2(uint32_t v) {
    uint32_t p = 1;
    while (p * 2 <= v) p *= 2;
    return p;
}

class HostRunner {
public:
    explicit HostRunner(const PhysicalInfo& p)
        : gpu_(p, {VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME}), pipelines_(gpu_) {
        auto hp = make<VkPhysicalDeviceExternalMemoryHostPropertiesEXT>(
            VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT);
        auto p2 = make<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
        p2.pNext = &hp;
        vkGetPhysicalDeviceProperties2(p.handle, &p2);
        align_ = std::max<VkDeviceSize>(hp.minImportedHostPointerAlignment, 1);
        host_props_ = reinterpret_cast<PFN_vkGetMemoryHostPointerPropertiesEXT>(
            vkGetDeviceProcAddr(gpu_.device, "vkGetMemoryHostPointerPropertiesEXT"));
        if (!host_props_) fail("cpu: %s lists VK_EXT_external_memory_host but not its entry point", p.info.name.c_str());
        wg_ = std::min<uint32_t>(256, floor_pow2(std::min(p.caps.max_workgroup_invocations, p.caps.max_workgroup_size[0])));
        auto pi = make<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
        pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
        pi.queueFamilyIndex = p.queue_family;
        VkCommandPool pool = VK_NULL_HANDLE;
        check(vkCreateCommandPool(gpu_.device, &pi, nullptr, &pool), "vkCreateCommandPool");
        pool_ = OwnedCommandPool(gpu_.device, pool);
        auto ai = make<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
        ai.commandPool = pool_;
        ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
        ai.commandBufferCount = 1;
        check(vkAllocateCommandBuffers(gpu_.device, &ai, &cb_), "vkAllocateCommandBuffers");
        auto fi = make<VkFenceCreateInfo>(VK_STRUCTURE_TYPE_FENCE_CREATE_INFO);
        VkFence fence = VK_NULL_HANDLE;
        check(vkCreateFence(gpu_.device, &fi, nullptr, &fence), "vkCreateFence");
        fence_ = OwnedFence(gpu_.device, fence);
        // The loop status word (core/user_kernel.hpp): host memory the driver imports.
        const size_t page = std::max<size_t>(align_, 64);  // (a power of two, as the driver's alignment)
        status_mem_.reset(static_cast<uint32_t*>(std::aligned_alloc(page, page)));
        if (!status_mem_) fail("cpu: out of host memory");
        // (align_ ≥ 16: one page; lo + 8 never carries)
        std::memset(status_mem_.get(), 0, kStatusWords * 4);
        // the loop status word, the part's first invocation, the stop word (vulkan/loop_probe.hpp)
        status_ = import(status_mem_.get(), kStatusWords * 4, "the loop status word");
    }

    void run(const UserCall& call, void* const* host, const size_t* bytes) {
        const UserKernel& k = *call.kernel;
        size_t nm = call.mats.size();
        size_t push_bytes = nm * kUserViewBytes + 4 + call.scalars.size() * 4;
        // Import each distinct buffer once: the aligned range around it.
        std::vector<Import> imports;
        imports.reserve(nm);
        alignas(8) uint8_t push[kPushBytes] = {};
        bool vec4 = k.elementwise;  // as VulkanDevice::run_user: dense 16-byte aligned runs, four per invocation
        for (size_t i = 0; i < nm; ++i) {
            Import* im = nullptr;
            for (auto& x : imports)
                if (x.host == host[i]) im = &x;
            if (!im) {
                imports.push_back(import(host[i], bytes[i], k.name));
                im = &imports.back();
            }
            const Matrix& m = call.mats[i];
            View v;
            v.addr = im->address + uint64_t(m.offset) * 4;
            v.rows = k.elementwise && m.contiguous() ? 0 : uint32_t(m.rows);
            v.rstep = uint32_t(m.row_step());
            v.cstep = uint32_t(m.col_step());
            v.pad = k.elementwise ? 0 : uint32_t(m.cols);
            vec4 = vec4 && dense16(m, v);
            std::memcpy(push + i * kUserViewBytes, &v, sizeof v);
        }
        uint32_t n = uint32_t(call.invocations);
        std::memcpy(push + nm * kUserViewBytes, &n, 4);
        if (!call.scalars.empty()) std::memcpy(push + nm * kUserViewBytes + 4, call.scalars.data(), call.scalars.size() * 4);

        pipelines_.add_module(k.module, *k.spirv);
        const UserSpec spec{.wg = wg_, .vec4 = vec4, .status_lo = uint32_t(status_.address),
                            .status_hi = uint32_t(status_.address >> 32), .chunked = 1,
                            .loop_check = checks_loops(gpu_.phys.info.driver)};
        const SpecConstants sc(spec);
        VkPipeline pipeline = pipelines_.get(k.module, sc.data, sc.count);
        // The grid in parts of whole workgroups, one submission each: Ctrl-C
        // (polled while a part runs) sets the stop word, which ends the part
        // early (a general kernel's invocations return at their next check),
        // and the call stops after it. Parts also bound a map kernel, which
        // has no loop to check: the first part 4 workgroups (an invocation may loop 65,535 times: 256
        // workgroups of such took 35 s on a loaded machine), later ones sized
        // from the time so far to take about 50 ms (at most 32 times the
        // previous one, and one grid dimension, so no part runs a workgroup of
        // the next). The shader adds the part's first invocation, the word
        // after the status word, to id().
        uint64_t invocations = vec4 ? (call.invocations + 3) / 4 : call.invocations;
        uint64_t total = (invocations + wg_ - 1) / wg_, done = 0, part = 4;
        const uint64_t most = std::min<uint32_t>(65535, gpu_.phys.caps.max_workgroup_count[0]);
        volatile uint32_t* word = status_mem_.get();
        auto t0 = std::chrono::steady_clock::now();
        while (done < total) {
            part = std::min({part, most, total - done});
            word[1] = uint32_t(done * wg_);  // < 2^32: invocations are bounded below it (user_kernels.hpp)
            const Stop stop = submit(pipeline, push, uint32_t(push_bytes), uint32_t(part));
            done += part;
            ++runs_;
            if (word[0]) {
                word[0] = 0;
                throw Error("cpu: " + loop_cut_message(k.name));
            }
            if (stop == Stop::stopped || (stop == Stop::pending && done < total && interrupt_flag().exchange(false))) {
                uint64_t whole = std::min((stop == Stop::stopped ? done - part : done) * wg_, invocations);
                throw Interrupted(format("interrupted: cpu: %s stopped; %llu of its %llu invocations ran whole, "
                                         "the others in part or not at all, so the matrices it writes hold partial "
                                         "values",
                                         k.name, (unsigned long long)whole, (unsigned long long)invocations));
            }
            double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            uint64_t next = s > 0 ? uint64_t(double(done) * 0.05 / s) : part * 32;
            part = std::clamp<uint64_t>(next, 1, part * 32);
        }
    }

private:
    struct Import {
        const void* host;
        OwnedBuffer buffer;
        OwnedMemory memory;
        uint64_t address = 0;  // of `host` itself
    };
    // What Ctrl-C did to a part: nothing; came as it ended (the flag is left
    // set); stopped it early (the flag is taken).
    enum class Stop { none, pending, stopped };
    // Records and submits one part of a user kernel's grid (`groups`
    // workgroups along x) and waits for it, in 20 ms slices. Ctrl-C while it
    // runs sets the stop word, which a general kernel's invocations read at
    // their start and in their loops; the word is cleared once the part ended.
    Stop submit(VkPipeline pipeline, const uint8_t* push, uint32_t push_bytes, uint32_t groups) {
        check(vkResetCommandBuffer(cb_, 0), "vkResetCommandBuffer");
        auto bi = make<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
        bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
        check(vkBeginCommandBuffer(cb_, &bi), "vkBeginCommandBuffer");
        vkCmdBindPipeline(cb_, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
        vkCmdPushConstants(cb_, pipelines_.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes, push);
        vkCmdDispatch(cb_, groups, 1, 1);
        // Make the shader's writes visible to the host that reads the memory next.
        auto mb = make<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
        mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
        mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
        vkCmdPipelineBarrier(cb_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0,
                             nullptr, 0, nullptr);
        check(vkEndCommandBuffer(cb_), "vkEndCommandBuffer");
        auto si = make<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
        si.commandBufferCount = 1;
        si.pCommandBuffers = &cb_;
        check(vkQueueSubmit(gpu_.queue, 1, &si, fence_), "vkQueueSubmit");
        VkFence f = fence_;
        VkResult r;
        volatile uint32_t* stop = status_mem_.get() + kStopWord;
        bool stopped = false;
        while ((r = vkWaitForFences(gpu_.device, 1, &f, VK_TRUE, 20'000'000)) == VK_TIMEOUT)
            if (!stopped && interrupt_flag().exchange(false)) {
                stopped = true;
                __atomic_store_n(stop, 1u, __ATOMIC_SEQ_CST);
            }
        __atomic_store_n(stop, 0u, __ATOMIC_SEQ_CST);
        (void)vkResetFences(gpu_.device, 1, &f);
        check(r, "vkWaitForFences");
        return stopped ? Stop::stopped : interrupt_flag().load() ? Stop::pending : Stop::none;
    }

    // Imports [host, host + bytes) by the aligned range containing it.
    Import import(void* host, size_t bytes, const char* name) {
        uintptr_t p = reinterpret_cast<uintptr_t>(host);
        uintptr_t start = p - p % align_;
        uintptr_t end = p + std::max<size_t>(bytes, 4);
        end += (align_ - end % align_) % align_;
        VkDeviceSize size = end - start;
        void* base = reinterpret_cast<void*>(start);

        auto props = make<VkMemoryHostPointerPropertiesEXT>(VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT);
        check(host_props_(gpu_.device, VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT, base, &props),
              "vkGetMemoryHostPointerPropertiesEXT");
        auto ext = make<VkExternalMemoryBufferCreateInfo>(VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO);
        ext.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
        auto bci = make<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
        bci.pNext = &ext;
        bci.size = size;
        bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT;
        bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
        VkBuffer buf = VK_NULL_HANDLE;
        check(vkCreateBuffer(gpu_.device, &bci, nullptr, &buf), "vkCreateBuffer");
        Import out{host, OwnedBuffer(gpu_.device, buf), {}, 0};
        VkMemoryRequirements req;
        vkGetBufferMemoryRequirements(gpu_.device, buf, &req);
        uint32_t bits = req.memoryTypeBits & props.memoryTypeBits;
        uint32_t type = 0;
        while (type < 32 && !(bits & (1u << type))) ++type;
        if (type == 32) fail("cpu: %s: the software driver cannot import this host memory", name);
        auto imp = make<VkImportMemoryHostPointerInfoEXT>(VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT);
        imp.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT;
        imp.pHostPointer = base;
        auto flags = make<VkMemoryAllocateFlagsInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO);
        flags.pNext = &imp;
        flags.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
        auto mai = make<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
        mai.pNext = &flags;
        mai.allocationSize = size;
        mai.memoryTypeIndex = type;
        VkDeviceMemory mem = VK_NULL_HANDLE;
        check(vkAllocateMemory(gpu_.device, &mai, nullptr, &mem), "vkAllocateMemory (host pointer import)");
        out.memory = OwnedMemory(gpu_.device, mem);
        check(vkBindBufferMemory(gpu_.device, buf, mem, 0), "vkBindBufferMemory");
        auto ai = make<VkBufferDeviceAddressInfo>(VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO);
        ai.buffer = buf;
        out.address = vkGetBufferDeviceAddress(gpu_.device, &ai) + (p - start);
        return out;
    }

    Gpu gpu_;
    Pipelines pipelines_;
    OwnedCommandPool pool_;
    VkCommandBuffer cb_ = VK_NULL_HANDLE;
    OwnedFence fence_;
    PFN_vkGetMemoryHostPointerPropertiesEXT host_props_ = nullptr;
    VkDeviceSize align_ = 4096;
    uint32_t wg_ = 64;
    uint64_t runs_ = 0;
    struct FreeHost {
        void operator()(uint32_t* p) const { std::free(p); }
    };
    std::unique_ptr<uint32_t, FreeHost> status_mem_;  // before status_: freed after its import
    Import status_;
};

// A plain pointer, destroyed by the exit teardown (context.hpp's
// arm_exit_teardown, armed again when the runner is made; backend.hpp's InstanceUser) before the driver's
// own statics: SwiftShader's worker threads crashed when those went first.
HostRunner*& runner_slot() {
    static HostRunner* runner = nullptr;
    return runner;
}

void destroy_host_runner() {
    delete runner_slot();
    runner_slot() = nullptr;
}

// While it exists the instance must stay (set_validation refuses to remake it).
bool host_runner_open() { return runner_slot() != nullptr; }

}  // namespace

void run_on_host(const UserCall& call, void* const* host, const size_t* bytes) {
    HostRunner*& runner = runner_slot();
    if (!runner) {
        const PhysicalInfo* pick = nullptr;
        bool software = false;
        try {
            for (const PhysicalInfo& p : Context::get().physical()) {
                if (p.props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU || !p.info.usable) continue;
                software = true;
                if (has_extension(p.handle, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME)) {
                    pick = &p;
                    break;
                }
            }
        } catch (const Error&) {
            // no Vulkan loader: said below
        }
        if (!pick)
            fail_no_host_runner(call.kernel->name,
                                software ? "none here has VK_EXT_external_memory_host" : "none is installed");
        runner = new HostRunner(*pick);
        set_instance_user({host_runner_open, destroy_host_runner});
        arm_exit_teardown();  // destroys the runner first, before the devices and the instance
    }
    runner->run(call, host, bytes);
}

}  // namespace vela::userk

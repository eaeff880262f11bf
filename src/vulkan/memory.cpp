#include "vulkan/memory.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/error.hpp"
#include "core/host_memory.hpp"  // a software device's memory is the host's

namespace vela::vk {

// One VkDeviceMemory + VkBuffer, carved into ranges by a first-fit free list
// (offset → size) that coalesces on free.
struct Block {
    OwnedMemory memory;
    OwnedBuffer buffer;
    VkDeviceSize size = 0;
    uint64_t address = 0;
    uint8_t* mapped = nullptr;
    bool dedicated = false;  // one allocation larger than a block: freed with it
    Pool pool = Pool::device;
    // Texel views of the whole block (mm_regblock_tex), destroyed before the
    // buffer (declared after it). A block is dropped only when every
    // allocation in it has been retired, so no pending work uses them.
    OwnedBufferView texel1, texel4, texel_store, texel_store4, texel_u8x4;
    std::map<VkDeviceSize, VkDeviceSize> free_ranges;
    VkDeviceSize used = 0;
    VkDeviceSize committed = 0;  // software devices: bytes from the start whose pages are committed
};

namespace {

constexpr VkDeviceSize kAlign = 64;  // covers float4 loads and cache lines; BDA needs no more
constexpr VkDeviceSize kMiB = 1ull << 20;
constexpr VkDeviceSize kHostReserve = 256 * kMiB;  // host memory a software device leaves to others

VkDeviceSize round_up(VkDeviceSize v, VkDeviceSize a) { return (v + a - 1) / a * a; }

// The first memory type with all of `want` (and, when asked, none of `avoid`).
bool find_type(const VkPhysicalDeviceMemoryProperties& mp, VkMemoryPropertyFlags want, uint32_t& out) {
    for (uint32_t i = 0; i < mp.memoryTypeCount; ++i)
        if ((mp.memoryTypes[i].propertyFlags & want) == want) {
            out = i;
            return true;
        }
    return false;
}

// VELA_VK_HEAP_LIMIT: a heap budget smaller than the device's, in bytes with an
// optional K, M or G suffix ("512M"): tests exhaust memory with it quickly.
VkDeviceSize heap_limit_from_env() {
    const char* e = std::getenv("VELA_VK_HEAP_LIMIT");
    if (!e || !*e) return 0;
    char* end = nullptr;
    unsigned long long v = std::strtoull(e, &end, 10);
    switch (end && *end ? *end : ' ') {
        case 'k': case 'K': v <<= 10; break;
        case 'm': case 'M': v <<= 20; break;
        case 'g': case 'G': v <<= 30; break;
        default: break;
    }
    return VkDeviceSize(v);
}

// Commits the pages of [base + from, base + to) of a mapped software block
// (MADV_POPULATE_WRITE, as the cpu device does), so exhaustion is an error now
// and not the OOM killer at the first write later, and the next budget check
// sees them. false with errno on failure; EINVAL (a kernel before 5.14) counts
// as done: the budget check is then the only guard.
bool commit_range(uint8_t* base, VkDeviceSize block, VkDeviceSize from, VkDeviceSize to) {
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
    const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
    const uintptr_t b = uintptr_t(base);
    // The page holding the block's first byte is mapped; past its last whole page may not be.
    uintptr_t lo = (b + from) / page * page, hi = std::min((b + to + page - 1) / page * page, (b + block) / page * page);
    if (hi <= lo) return true;
    return madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_POPULATE_WRITE) == 0 || errno == EINVAL;
}

}  // namespace

Memory::Memory(Gpu& gpu, std::string device_name, bool force_staging) : gpu_(gpu), name_(std::move(device_name)) {
    const auto& mp = gpu.phys.memory;
    const VkMemoryPropertyFlags local = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    const VkMemoryPropertyFlags visible = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    // Device memory that the host can also map (UMA, lavapipe) makes every transfer a memcpy.
    // On a discrete GPU that is a small BAR window at best, so only use it where the whole
    // device-local heap is host-visible (it then is the same memory) and the device is not
    // discrete: with resizable BAR a discrete GPU maps all of its memory, but the host reads
    // it uncached across the bus (on an H200 the tests that read results back ran over 70 s,
    // 7 s on lavapipe), so it stages through cached host memory instead.
    uint32_t t = 0;
    bool uma = false;
    if (!force_staging && gpu.phys.props.deviceType != VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU &&
        find_type(mp, local | visible, t)) {
        VkDeviceSize heap = mp.memoryHeaps[mp.memoryTypes[t].heapIndex].size;
        VkDeviceSize largest_local = 0;
        for (uint32_t h = 0; h < mp.memoryHeapCount; ++h)
            if (mp.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
                largest_local = std::max(largest_local, mp.memoryHeaps[h].size);
        uma = heap == largest_local;
    }
    if (uma) {
        device_.type = t;
        device_.mapped = true;
    } else if (!find_type(mp, local, device_.type) && !find_type(mp, 0, device_.type)) {
        fail("%s: no usable memory type", name_.c_str());
    }
    device_.heap = mp.memoryTypes[device_.type].heapIndex;
    mapped_ = device_.mapped;
    if (!mapped_) {
        separate_host_ = true;
        // Prefer cached memory: read-backs are read by the CPU.
        if (!find_type(mp, visible | VK_MEMORY_PROPERTY_HOST_CACHED_BIT, host_.type) &&
            !find_type(mp, visible, host_.type))
            fail("%s: no host-visible coherent memory type for staging", name_.c_str());
        host_.heap = mp.memoryTypes[host_.type].heapIndex;
        host_.mapped = true;
    }
    // Blocks of 256 MiB, less on small heaps, never over the per-allocation limit.
    auto m3 = make<VkPhysicalDeviceMaintenance3Properties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES);
    auto p2 = make<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
    p2.pNext = &m3;
    vkGetPhysicalDeviceProperties2(gpu.phys.handle, &p2);
    heap_limit_ = heap_limit_from_env();
    VkDeviceSize heap = heap_size(device_);
    max_alloc_ = m3.maxMemoryAllocationSize;
    // Software devices: 64 MiB blocks, so the host-memory budget (new_block) refuses less than it could give.
    const VkDeviceSize most = gpu.phys.caps.software ? 64 * kMiB : 256 * kMiB;
    block_size_ = std::min<VkDeviceSize>({most, m3.maxMemoryAllocationSize, std::max(heap / 8, 16 * kMiB)});
}

Memory::~Memory() = default;

VkDeviceSize Memory::heap_size(const PoolState& p) const {
    VkDeviceSize heap = gpu_.phys.memory.memoryHeaps[p.heap].size;
    return heap_limit_ && heap_limit_ < heap ? heap_limit_ : heap;
}

// A pool's shared blocks grow: the first is a sixteenth of block_size_ (at
// least the request), each further one twice the largest so far, up to
// block_size_. A small session then never asks for 64 MiB (SwiftShader fills
// every allocation with zeros: its first 64 MiB block cost the device's
// opening ~20 ms of memset and page faults), and a large one reaches full
// blocks after four.
VkDeviceSize Memory::shared_block_size(const PoolState& p, VkDeviceSize request) const {
    VkDeviceSize largest = 0;
    for (auto& b : p.blocks)
        if (!b->dedicated) largest = std::max(largest, b->size);
    VkDeviceSize size = largest ? largest * 2 : block_size_ / 16;
    while (size < request) size *= 2;
    return std::min(size, block_size_);
}

Block* Memory::new_block(PoolState& p, VkDeviceSize size, bool dedicated, VkDeviceSize request) {
    VkDeviceSize heap = heap_size(p);
    // Check what the driver may not: lavapipe would happily malloc past its advertised heap.
    std::string need = dedicated ? format("%.1f MiB requested", double(request) / kMiB)
                                 : format("%.1f MiB requested (a new %.1f MiB block)", double(request) / kMiB,
                                          double(size) / kMiB);
    // A software device (lavapipe, SwiftShader) advertises a heap of a fixed
    // size (2 GiB) whatever the host has, and its memory is the host's: a block
    // the host cannot hold would be an OOM kill when first written, not an
    // error. Budget it against what this process may still allocate
    // (MemAvailable, the cgroup's limit, RLIMIT_AS).
    // kHostReserve stays for the driver itself (its LLVM or Subzero compiles
    // kernels in host memory: with the address space used up to the last few
    // MiB, lavapipe's next compile crashed) and the rest of the process.
    if (gpu_.phys.caps.software) {
        const HostMemory host = available_host_memory();
        if (size + kHostReserve > host.bytes)
            fail("%s: out of device memory: %s, but the host has %.1f MiB available (%s), of which %.0f MiB stay "
                 "for the driver and the process: this software device's memory is the host's; release matrices "
                 "with m:release() and retry",
                 name_.c_str(), need.c_str(), double(host.bytes) / kMiB, host.source, double(kHostReserve) / kMiB);
    }
    if (p.reserved + size > heap)
        fail("%s: out of device memory: %s, %.1f MiB of the %.1f MiB heap%s already reserved "
             "(%.1f MiB in %llu live allocations); release matrices with m:release() and retry",
             name_.c_str(), need.c_str(), double(p.reserved) / kMiB, double(heap) / kMiB,
             heap_limit_ && heap == heap_limit_ ? " (VELA_VK_HEAP_LIMIT)" : "", double(used_) / kMiB,
             (unsigned long long)live_);

    auto b = std::make_unique<Block>();
    b->size = size;
    b->dedicated = dedicated;
    b->pool = &p == &device_ ? Pool::device : Pool::host;
    VkDevice dev = gpu_.device;

    auto bi = make<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
    bi.size = size;
    bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT |
               VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    const Caps& caps = gpu_.phys.caps;
    const bool texel = caps.texel_views && size / 4 <= caps.max_texel_elements;
    if (texel) bi.usage |= VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT | VK_BUFFER_USAGE_STORAGE_TEXEL_BUFFER_BIT;
    bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    VkBuffer buf = VK_NULL_HANDLE;
    check(vkCreateBuffer(dev, &bi, nullptr, &buf), "vkCreateBuffer");
    b->buffer = OwnedBuffer(dev, buf);

    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(dev, buf, &req);
    if (!(req.memoryTypeBits & (1u << p.type))) fail("%s: the buffer cannot use the chosen memory type", name_.c_str());

    auto flags = make<VkMemoryAllocateFlagsInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO);
    flags.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
    auto ai = make<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
    ai.pNext = &flags;
    ai.allocationSize = req.size;
    ai.memoryTypeIndex = p.type;
    VkDeviceMemory mem = VK_NULL_HANDLE;
    VkResult r = vkAllocateMemory(dev, &ai, nullptr, &mem);
    if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
        fail("%s: out of device memory: vkAllocateMemory: %s allocating %.1f MiB (%.1f MiB in %llu live "
             "allocations); release matrices with m:release() and retry",
             name_.c_str(), result_name(r), double(size) / kMiB, double(used_) / kMiB, (unsigned long long)live_);
    check(r, "vkAllocateMemory");
    b->memory = OwnedMemory(dev, mem);
    check(vkBindBufferMemory(dev, buf, mem, 0), "vkBindBufferMemory");
    if (texel) {
        auto view = [&](VkFormat format, VkDeviceSize texel_bytes) {
            auto vi = make<VkBufferViewCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO);
            vi.buffer = buf;
            vi.format = format;
            vi.offset = 0;
            vi.range = size / texel_bytes * texel_bytes;
            VkBufferView v = VK_NULL_HANDLE;
            check(vkCreateBufferView(dev, &vi, nullptr, &v), "vkCreateBufferView");
            return OwnedBufferView(dev, v);
        };
        b->texel1 = view(VK_FORMAT_R32_SFLOAT, 4);
        b->texel4 = view(VK_FORMAT_R32G32B32A32_SFLOAT, 16);
        b->texel_store = view(VK_FORMAT_R32_SFLOAT, 4);
        b->texel_store4 = view(VK_FORMAT_R32G32B32A32_SFLOAT, 16);
        b->texel_u8x4 = view(VK_FORMAT_R8G8B8A8_UINT, 4);
    }
    if (p.mapped) {
        void* ptr = nullptr;
        check(vkMapMemory(dev, mem, 0, VK_WHOLE_SIZE, 0, &ptr), "vkMapMemory");
        b->mapped = static_cast<uint8_t*>(ptr);
    }
    auto addr = make<VkBufferDeviceAddressInfo>(VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO);
    addr.buffer = buf;
    b->address = vkGetBufferDeviceAddress(dev, &addr);
    b->free_ranges[0] = size;
    reserved_ += size;
    p.reserved += size;
    p.blocks.push_back(std::move(b));
    return p.blocks.back().get();
}

void Memory::drop_block(PoolState& p, Block* b) {
    reserved_ -= b->size;
    p.reserved -= b->size;
    if (b->mapped) vkUnmapMemory(gpu_.device, b->memory);
    auto it = std::find_if(p.blocks.begin(), p.blocks.end(), [b](auto& u) { return u.get() == b; });
    p.blocks.erase(it);  // the owned buffer and memory go with it
}

void Memory::trim(PoolState& p) {
    for (size_t i = p.blocks.size(); i-- > 0;)
        if (!p.blocks[i]->dedicated && p.blocks[i]->used == 0) drop_block(p, p.blocks[i].get());
}

Allocation Memory::alloc(VkDeviceSize bytes, Pool pool) {
    PoolState& p = pool == Pool::host && separate_host_ ? host_ : device_;
    VkDeviceSize size = round_up(std::max<VkDeviceSize>(bytes, 1), kAlign);
    if (size > max_alloc_)
        fail("%s: a buffer of %.1f MiB is over the device's maxMemoryAllocationSize (%.1f MiB)", name_.c_str(),
             double(size) / kMiB, double(max_alloc_) / kMiB);
    try {
        return try_alloc(size, p);
    } catch (const Interrupted&) {
        throw;
    } catch (const Error&) {
        // Released matrices whose last kernels are still queued hold their
        // memory until that work is done: wait for it, free it, give empty
        // blocks back, and try once more (the error below is the last word).
        bool freed = reclaim_ && reclaim_();
        VkDeviceSize before = reserved_;
        trim(device_);
        if (separate_host_) trim(host_);
        if (!freed && reserved_ == before) throw;
    }
    return try_alloc(size, p);
}

Allocation Memory::try_alloc(VkDeviceSize size, PoolState& p) {
    Block* found = nullptr;
    VkDeviceSize at = 0;
    if (size > block_size_ / 2) {
        found = new_block(p, size, true, size);
        at = 0;
    } else {
        for (auto& b : p.blocks) {
            if (b->dedicated) continue;
            for (auto [off, len] : b->free_ranges)
                if (len >= size) {
                    found = b.get();
                    at = off;
                    break;
                }
            if (found) break;
        }
        if (!found) found = new_block(p, shared_block_size(p, size), false, size);
    }
    // A software device's memory is the host's: commit the range's pages before handing it out.
    if (gpu_.phys.caps.software && found->mapped && at + size > found->committed) {
        if (!commit_range(found->mapped, found->size, found->committed, at + size)) {
            int e = errno;
            if (found->used == 0) drop_block(p, found);
            fail("%s: out of device memory: %.1f MiB requested could not be committed in host memory (%s); this "
                 "software device's memory is the host's; release matrices with m:release() and retry",
                 name_.c_str(), double(size) / kMiB, std::strerror(e));
        }
        found->committed = at + size;
    }
    // Take [at, at+size) out of the free range starting at `at`.
    auto it = found->free_ranges.find(at);
    VkDeviceSize len = it->second;
    found->free_ranges.erase(it);
    if (len > size) found->free_ranges[at + size] = len - size;
    found->used += size;
    used_ += size;
    ++live_;

    Allocation a;
    a.block = found;
    a.offset = at;
    a.size = size;
    a.address = found->address + at;
    a.mapped = found->mapped ? found->mapped + at : nullptr;
    a.texel1 = found->texel1;
    a.texel4 = found->texel4;
    a.texel_store = found->texel_store;
    a.texel_store4 = found->texel_store4;
    a.texel_u8x4 = found->texel_u8x4;
    return a;
}

void Memory::free(const Allocation& a) {
    Block* b = a.block;
    if (!b) return;
    PoolState& p = b->pool == Pool::host && separate_host_ ? host_ : device_;
    used_ -= a.size;
    --live_;
    b->used -= a.size;
    if (b->dedicated) {
        drop_block(p, b);
        return;
    }
    auto& fr = b->free_ranges;
    auto next = fr.lower_bound(a.offset);
    VkDeviceSize off = a.offset, len = a.size;
    if (next != fr.end() && next->first == off + len) {
        len += next->second;
        next = fr.erase(next);
    }
    bool merged = false;
    if (next != fr.begin()) {
        auto prev = std::prev(next);
        if (prev->first + prev->second == off) {
            prev->second += len;
            merged = true;
        }
    }
    if (!merged) fr[off] = len;
    // Keep one empty block for reuse; give further empty ones back to the driver.
    if (b->used == 0) {
        int empty = 0;
        for (auto& o : p.blocks) empty += !o->dedicated && o->used == 0;
        if (empty > 1) drop_block(p, b);
    }
}

MemoryInfo Memory::info() const {
    MemoryInfo m;
    m.used = used_;
    m.reserved = reserved_;
    m.total = heap_size(device_);
    return m;
}

}  // namespace vela::vk

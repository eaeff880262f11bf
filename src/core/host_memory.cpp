#include "core/host_memory.hpp"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#ifdef __GLIBC__
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace vela {

namespace {

std::atomic<HostMemoryProbe>& probe() {
    static std::atomic<HostMemoryProbe> p{nullptr};
    return p;
}

#ifdef __GLIBC__
constexpr uintptr_t kHugePage = uintptr_t(2) << 20;
constexpr int kHeapPad = 32 << 20;

// Where the heap has been advised up to: 0 while the policy is off (a user's own
// setting, AddressSanitizer, VELA_HUGE_HEAP=0).
std::atomic<uintptr_t>& advised_to() {
    static std::atomic<uintptr_t> a{0};
    return a;
}

bool huge_heap_wanted() {
    const char* e = std::getenv("VELA_HUGE_HEAP");
    return !(e && std::strcmp(e, "0") == 0);
}
#endif

}  // namespace

void set_host_memory_probe(HostMemoryProbe p) { probe().store(p); }

HostMemory available_host_memory() {
    HostMemoryProbe p = probe().load();
    return p ? p() : HostMemory{UINT64_MAX, "no limit known (no cpu backend registered)"};
}

bool keep_freed_heap() {
#ifdef __GLIBC__
    const char* tunables = std::getenv("GLIBC_TUNABLES");
    if (tunables && std::strstr(tunables, "glibc.malloc.")) return false;
    for (const char* v : {"MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_"})
        if (std::getenv(v)) return false;
    // Each returns 1 where glibc took it (AddressSanitizer's allocator takes neither).
    if (mallopt(M_MMAP_THRESHOLD, 32 << 20) != 1 || mallopt(M_TRIM_THRESHOLD, 512 << 20) != 1) return false;
    if (huge_heap_wanted() && advised_to().load() == 0 && mallopt(M_TOP_PAD, kHeapPad) == 1) {
        // Grow the heap by the pad now (a request just over its free top), so the drivers'
        // first allocations land in advised pages; what lies below is in use already.
        void* p = std::malloc(mallinfo2().keepcost + 4096);
        uintptr_t from = p ? (uintptr_t(p) + kHugePage - 1) / kHugePage * kHugePage : 0;
        std::free(p);
        if (from) {
            advised_to().store(from);
            advise_heap_huge_pages();
        }
    }
    return true;
#else
    return false;
#endif
}

void advise_heap_huge_pages() {
#ifdef __GLIBC__
    uintptr_t from = advised_to().load();
    if (!from) return;
    const uintptr_t to = uintptr_t(sbrk(0)) / kHugePage * kHugePage;
    // A break below the advised part (the heap moved to mappings, or someone else's sbrk): leave it.
    if (to <= from || to - from > (uintptr_t(1) << 40)) return;
    if (!advised_to().compare_exchange_strong(from, to)) return;  // another thread is at it
    madvise(reinterpret_cast<void*>(from), to - from, MADV_HUGEPAGE);  // refused advice changes nothing
#endif
}

}  // namespace vela

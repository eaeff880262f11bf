#include "core/host_memory.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace vela {

namespace {

std::atomic<HostMemoryProbe>& probe() {
    static std::atomic<HostMemoryProbe> p{nullptr};
    return p;
}

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
    return mallopt(M_MMAP_THRESHOLD, 32 << 20) == 1 && mallopt(M_TRIM_THRESHOLD, 512 << 20) == 1;
#else
    return false;
#endif
}

}  // namespace vela

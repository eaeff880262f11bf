#include "core/host_memory.hpp"

#include <atomic>

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

}  // namespace vela

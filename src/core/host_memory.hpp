// What this process may still allocate on the host, for every layer that
// allocates host memory (the Vulkan heap budget on software drivers, the Lua
// file readers). The cpu backend measures it (cpu::available_memory,
// src/cpu/machine.cpp: MemAvailable, cgroup limits, RLIMIT_AS) and hands its
// probe to the core at registration, so no other layer calls into src/cpu.
#pragma once
#include <cstdint>

namespace vela {

struct HostMemory {
    uint64_t bytes;      // what may still be allocated
    const char* source;  // the limit that decided, in words
};
using HostMemoryProbe = HostMemory (*)();

void set_host_memory_probe(HostMemoryProbe probe);
// The probe's answer; before any probe is set, {UINT64_MAX, "no limit known (no cpu backend registered)"}.
HostMemory available_host_memory();

}  // namespace vela

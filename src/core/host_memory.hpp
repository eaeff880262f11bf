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

// glibc's heap keeps what is freed until 512 MiB lie free at its top (only then is it given back),
// and serves requests up to 32 MiB itself (mallopt M_TRIM_THRESHOLD, M_MMAP_THRESHOLD). The
// software Vulkan drivers compile each kernel through many short allocations in their own threads,
// and at glibc's defaults the heap of such a thread is given back to the system and faulted in
// again compile after compile: SwiftShader spent a fifth of its compile time in page faults
// (docs/results.md). The cpu device's matrices of 2 MiB and more are mapped apart
// (cpu_device.cpp) and never come from this heap. A user's own
// setting (GLIBC_TUNABLES glibc.malloc.*, MALLOC_TRIM_THRESHOLD_, MALLOC_MMAP_THRESHOLD_,
// MALLOC_TOP_PAD_) is kept as it is. register_backends() calls it, before any driver loads; a build
// without glibc does nothing. Returns whether the policy was set.
//
// With it, unless VELA_HUGE_HEAP=0: the heap grows 32 MiB at a time (M_TOP_PAD) and grows once now,
// and advise_heap_huge_pages() asks for transparent huge pages on what lies above the pages in use.
bool keep_freed_heap();

// Asks for transparent huge pages (MADV_HUGEPAGE; THP "madvise" mode, the Debian default, gives
// them only on request) on glibc's main heap, in whole 2 MiB pages from where it last asked up to
// the break. The drivers' compilers fill the heap with short-lived allocations: on a VM whose host
// maps each 4 KiB page on its first touch (12 µs a page here), that first touch was half of a
// software device's first product, and a 2 MiB page costs what a dozen small ones do, not 512
// (docs/results.md). Cheap when the heap has not grown (no system call); the Vulkan backend calls
// it before it opens a driver and before each pipeline it makes. Nothing where keep_freed_heap()
// did not set its policy.
void advise_heap_huge_pages();

}  // namespace vela

// The CPU device: storage in host memory, OpenBLAS (cblas) for levels 1–3,
// own threaded loops for the rest (src/cpu/*.cpp, one file per kernel group).
// Everything here is synchronous: flush() and sync() have nothing to wait for.
#pragma once
#include <cstdint>
#include <string>

#include "core/device.hpp"
#include "core/host_memory.hpp"
#include "core/user_kernel.hpp"

namespace vela::cpu {

Device& device();  // the one CpuDevice, made on first use

// Threads used by both the own loops and OpenBLAS; 1 ≤ n ≤ 1024 (threads(n) in Lua).
void set_threads(int n);
int threads();

// For devices(): the processor's model name, the OpenBLAS build, RAM in bytes.
std::string description();
std::string blas_version();  // "0.3.21"
std::string blas_config();   // OpenBLAS's build line: version, kernel (Haswell, ...), threads
uint64_t physical_memory();

// What this process may still allocate: the least of MemAvailable, the
// headroom of its cgroup and each ancestor (v2 memory.max, else v1's
// memory.limit_in_bytes; VELA_CGROUP_DIR names a directory of such files
// instead, for tests) and RLIMIT_AS less the address space in use; `source`
// names the one that decided. register_backend() hands it to the core
// (core/host_memory.hpp), where the other layers read it.
using MemoryLimit = HostMemory;
MemoryLimit available_memory();

// Registers "cpu" with the device registry (src/cpu/backend.cpp). runner: how the cpu runs
// general user kernels (core/user_kernel.hpp; src/backends.cpp passes the software-driver
// runner); without one such a kernel fails with fail_no_host_runner's message.
void register_backend(HostRunner runner = nullptr);
void set_host_runner(HostRunner runner);

}  // namespace vela::cpu

namespace vela {
// The cpu device, through the registry: get_device("cpu").
Device& cpu_device();
}  // namespace vela

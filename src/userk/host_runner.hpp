// The cpu device's runner of general user kernels (core/user_kernel.hpp's HostRunner): the
// same SPIR-V as on the Vulkan devices, run by a software Vulkan driver (lavapipe) on the cpu
// matrices' own host memory (VK_EXT_external_memory_host, no copy), waiting for the result.
// src/backends.cpp hands it to the cpu device at registration.
#pragma once
#include <cstddef>

#include "core/user_kernel.hpp"

namespace vela::userk {

// host[i] and bytes[i]: the start and size of the buffer holding call.mats[i].
// Throws vela::Error (fail_no_host_runner) saying what to install where no such driver exists.
void run_on_host(const UserCall& call, void* const* host, const size_t* bytes);

}  // namespace vela::userk

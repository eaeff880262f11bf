// What the layers hand each other at registration (src/backends.cpp): the core reads the host's
// memory through the cpu backend's probe, so the Vulkan and Lua layers need no cpu header.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>

#include "core/host_memory.hpp"
#include "cpu/cpu_device.hpp"

using namespace vela;

namespace {

HostMemory fake() { return {12345, "a test's probe"}; }

}  // namespace

TEST_CASE("layers: the core's host memory is the probe the cpu backend registered", "[layers]") {
    // tests/main.cpp registered the backends: the cpu's own measure answers
    HostMemory got = available_host_memory();
    cpu::MemoryLimit want = cpu::available_memory();
    CHECK(std::strcmp(got.source, want.source) == 0);
    struct Restore {
        ~Restore() { set_host_memory_probe(cpu::available_memory); }
    } restore;
    set_host_memory_probe(fake);
    got = available_host_memory();
    CHECK(got.bytes == 12345);
    CHECK(std::strcmp(got.source, "a test's probe") == 0);
    set_host_memory_probe(nullptr);
    got = available_host_memory();
    CHECK(got.bytes == UINT64_MAX);
    CHECK(std::string(got.source).find("no cpu backend registered") != std::string::npos);
}

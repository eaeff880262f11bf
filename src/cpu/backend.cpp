// The cpu backend: one device, "cpu", described for devices() and registered
// with the device registry.
#include "core/registry.hpp"
#include "cpu/blas_core.hpp"
#include "cpu/cpu_device.hpp"
#include "cpu/isa.hpp"

namespace vela::cpu {

namespace {

DeviceInfo info() {
    DeviceInfo d;
    d.id = "cpu";
    d.name = description();
    d.type = "cpu";
    d.driver = "OpenBLAS";
    const BlasCore& core = ensure_blas_core();
    const IsaChoice& loops = isa_choice();
    d.driver_version = blas_version() + " " + core.core + ", loops " + isa_arch(loops.isa);
    d.memory = physical_memory();
    d.limits.push_back({"threads", std::to_string(threads())});
    d.limits.push_back({"blas", blas_config()});
    d.limits.push_back({"blas core", core.core + ": " + core.how});
    // The elementwise loops' path (isa.hpp): "x86-64-v3 (AVX2 + FMA, 8 lanes): detected".
    d.limits.push_back({"loops", isa_describe(loops.isa) + ": " + loops.how});
    return d;
}

}  // namespace

void register_backend(HostRunner runner) {
    set_host_runner(runner);
    set_host_memory_probe(available_memory);
    Backend b;
    b.name = "cpu";
    b.enumerate = [] { return std::vector<DeviceInfo>{info()}; };
    b.open = [](size_t) -> Device& { return device(); };
    vela::register_backend(std::move(b));
}

}  // namespace vela::cpu

namespace vela {

Device& cpu_device() { return get_device("cpu"); }

}  // namespace vela

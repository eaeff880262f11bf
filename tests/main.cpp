// The one main() of the Catch2 test binary (vela_tests); every other test
// file only defines TEST_CASEs.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

#include "backends.hpp"
#include "core/error.hpp"
#include "core/registry.hpp"

// The devices the tests use come from the registry: the backends register
// before any test runs.
static const bool backends_registered = (vela::register_backends(), true);

int main(int argc, char** argv) {
    int rc = Catch::Session().run(argc, argv);
    // Work a test queued and never waited for finishes here, as vela's own
    // main does, not in the exit handlers: there lavapipe, compiling a
    // shader for that work on its queue thread, ran into LLVM's statics
    // already destroyed (a test run alone crashed at exit on a fresh
    // shader cache: "vulkan mm: β = 0 never reads c…").
    for (vela::Device* d : vela::open_devices()) {
        try {
            d->sync();
        } catch (const vela::Error& e) {
            std::fprintf(stderr, "vela_tests: %s at exit: %s\n", d->name().c_str(), e.what());
            if (rc == 0) rc = 1;
        }
    }
    return rc;
}

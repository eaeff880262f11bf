// The one main() of the Catch2 test binary (vela_tests); every other test
// file only defines TEST_CASEs.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include "backends.hpp"

// The devices the tests use come from the registry: the backends register
// before any test runs.
static const bool backends_registered = (vela::register_backends(), true);

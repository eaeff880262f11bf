// The one main() of the Catch2 test binary (vela_tests); every other test
// file only defines TEST_CASEs.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

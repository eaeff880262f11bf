// The cpu backend's own cases: its thread count, and its two loops per op of
// the op table (a stride-1 loop the compiler vectorises, with an AVX2 clone
// picked at load time, and a strided loop for views), which must agree bit for
// bit, so a result never depends on how a matrix is laid out.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/ops.hpp"
#include "cpu/cpu_device.hpp"
#include "error_of.hpp"
#include "kernel_reference.hpp"

using namespace vela;
using vela::test::error_of;

TEST_CASE("cpu threads: set and read back, bad counts rejected", "[cpu]") {
    int before = cpu::threads();
    cpu::set_threads(1);
    CHECK(cpu::threads() == 1);
    cpu::set_threads(3);
    CHECK(cpu::threads() == 3);
    CHECK(error_of([] { cpu::set_threads(0); }) == "threads: n is 0 (must be 1..1024)");
    CHECK(error_of([] { cpu::set_threads(5000); }) == "threads: n is 5000 (must be 1..1024)");
    cpu::set_threads(before);
}

TEST_CASE("cpu: every op's stride-1 loop and strided loop agree bit for bit", "[cpu]") {
    Device& d = cpu_device();
    // 0, tiny, huge, both signs, the branch points, and a dense run over [−20, 20]; an odd count, so
    // the vector loop has a tail.
    std::vector<float> v = {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-7f, 0.34657359f, -0.34657359f, 0.625f, -0.625f,
                            87.0f, -87.0f, 100.0f, -100.0f, 1e30f, -1e30f, INFINITY, -INFINITY, NAN};
    for (int k = 0; k <= 400; k++) v.push_back(-20.0f + 0.1f * float(k) + 0.0137f);
    const int64_t n = int64_t(v.size());
    // The same values as row 2 of a 3×n matrix: a view whose elements are 3 floats apart.
    std::vector<float> wide(size_t(3 * n), 0.5f);
    for (int64_t j = 0; j < n; j++) wide[size_t(1 + 3 * j)] = v[size_t(j)];
    Matrix dense = from_host(d, n, 1, v.data());
    Matrix wide_m = from_host(d, 3, n, wide.data());
    Matrix strided = view(wide_m, 1, 0, 1, n);
    for (uint8_t i = 0; i < uint8_t(Unary::count_); i++) {
        const Unary op = Unary(i);
        INFO(unary_name(op));
        Matrix out_dense = empty(d, n, 1);
        Matrix out_wide = empty(d, 3, n);
        Matrix out_strided = view(out_wide, 1, 0, 1, n);
        unary(op, dense, out_dense, ref::kUnaryParams);
        unary(op, strided, out_strided, ref::kUnaryParams);
        std::vector<float> a = to_host(out_dense), b = to_host(out_strided);
        REQUIRE(a.size() == b.size());
        CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
    }
}

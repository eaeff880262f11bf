// Shared helpers of the Vulkan test files (test_vulkan_*.cpp): the device, the
// validation-message guard, deterministic matrices with their host copies.
#pragma once
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/ops.hpp"
#include "core/registry.hpp"
#include "error_of.hpp"
#include "vulkan/device.hpp"

namespace vela::test {

inline Device& gpu() { return get_device("vulkan:0"); }

// Checks the validation layer's count did not move during a test.
struct NoValidationMessages {
    uint64_t before = vk::validation_message_count();
    ~NoValidationMessages() { CHECK(vk::validation_message_count() == before); }
};

inline std::vector<float> iota(int64_t n, float scale = 1.0f, float shift = 0.0f) {
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[size_t(i)] = float(i) * scale + shift;
    return v;
}

// A deterministic pseudo-random matrix in [lo, hi) on the device, and its host copy.
struct Mat {
    Matrix m;
    std::vector<float> h;
};
inline Mat rnd(int64_t rows, int64_t cols, float lo, float hi, uint32_t seed) {
    Mat r;
    r.h.resize(size_t(rows * cols));
    uint32_t s = seed * 2654435761u + 1;
    for (float& v : r.h) {
        s = s * 1664525u + 1013904223u;
        v = lo + (hi - lo) * float(s >> 8) * 0x1p-24f;
    }
    r.m = from_host(gpu(), rows, cols, r.h.data());
    return r;
}

inline void check_close(const std::vector<float>& got, const std::vector<double>& want, double tol) {
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) {
        INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
        REQUIRE(std::fabs(double(got[i]) - want[i]) <= tol * (1 + std::fabs(want[i])));
    }
}

}  // namespace vela::test

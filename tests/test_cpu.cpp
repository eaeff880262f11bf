// The cpu backend's own cases: its thread count, and its two loops per op of
// the op table (a stride-1 loop the compiler vectorises, with an AVX2 clone
// picked at load time, and a strided loop for views), which must agree bit for
// bit, so a result never depends on how a matrix is laid out.
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>

#include "core/ops.hpp"
#include "cpu/cpu_device.hpp"
#include "cpu/pool.hpp"
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

// The pool keeps a job's first piece on the calling thread (claimed before the
// job is published), so a product cut in one piece per thread runs the same
// piece on the same thread in every call. Before, a spinning worker could take
// piece 0 first.
TEST_CASE("cpu pool: the first piece of every job runs on the calling thread", "[cpu]") {
    int before = cpu::threads();
    cpu::set_threads(2);
    struct Seen {
        std::thread::id first;
        std::atomic<int> pieces{0};
    };
    const std::thread::id me = std::this_thread::get_id();
    int elsewhere = 0;
    for (int job = 0; job < 2000; job++) {
        Seen s;
        cpu::parallel_for(2, 1, [&](int64_t b, int64_t e) {
            if (b == 0) s.first = std::this_thread::get_id();
            s.pieces += int(e - b);
        });
        CHECK(s.pieces == 2);
        elsewhere += s.first != me;
    }
    CHECK(elsewhere == 0);
    cpu::set_threads(before);
}

// gather_cols cuts a batch into one column piece per thread (the halves dense
// then multiplies on the same threads) and prefetches columns ahead within a
// piece: every column still lands where it should, for 1, 2 and 3 threads, an
// odd column count and both sources, against the float64 copy.
TEST_CASE("cpu: gather_cols of a batch cut across the pool matches float64", "[cpu]") {
    int before = cpu::threads();
    Device& d = cpu_device();
    const int64_t m = 784, ncols = 300, n = 131;
    std::vector<uint8_t> bytes(size_t(m * ncols));
    std::vector<float> floats(bytes.size());
    uint32_t x = 12345;
    for (size_t k = 0; k < bytes.size(); k++) {
        x = x * 1664525u + 1013904223u;
        bytes[k] = uint8_t(x >> 24);
        floats[k] = float(int(x >> 8) - (1 << 23)) / 4096.0f;
    }
    std::vector<float> idx(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; j++) idx[size_t(j)] = float(1 + (j * 97 + 13) % ncols);
    Matrix im = from_host(d, 1, n, idx.data());
    const float scale = 1.0f / 255.0f;
    for (int t : {1, 2, 3})
        for (bool u8 : {false, true}) {
            INFO((u8 ? "uint8" : "float") << " source, " << t << " threads");
            cpu::set_threads(t);
            Matrix src = u8 ? from_host_u8(d, m, ncols, bytes.data()) : from_host(d, m, ncols, floats.data());
            Matrix dst = empty(d, m, n);
            gather_cols(src, im, dst, scale);
            std::vector<float> got = to_host(dst);
            int64_t wrong = 0;
            for (int64_t j = 0; j < n; j++) {
                const int64_t c = int64_t(idx[size_t(j)]) - 1;
                for (int64_t i = 0; i < m; i++) {
                    const size_t k = size_t(c * m + i);
                    const double want = double(scale) * (u8 ? double(bytes[k]) : double(floats[k]));
                    wrong += std::fabs(double(got[size_t(j * m + i)]) - want) > 1e-6 * std::fabs(want);
                }
            }
            CHECK(wrong == 0);
        }
    cpu::set_threads(before);
}

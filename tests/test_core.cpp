// The core without kernels math: Philox known answers and its float pieces,
// enum names, seeds, the registry, and every argument check of core/ops.cpp
// with its message (kernel results are in test_kernels.cpp).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "core/error.hpp"
#include "core/host_memory.hpp"
#include "error_of.hpp"
#include "core/ops.hpp"
#include "core/philox.hpp"
#include "core/registry.hpp"
#include "cpu/cpu_device.hpp"
#include "cpu/cpu_kernels.hpp"

using namespace vela;

namespace {

using vela::test::error_of;

#define CHECK_ERROR(expr, text) CHECK(error_of([&] { (void)(expr); }) == std::string(text))

// A second device that stores nothing: enough to test mixing devices.
class OtherDevice final : public Device {
    struct Buf final : Buffer {
        using Buffer::Buffer;
        void free_storage() override {}
    };

public:
    std::string name() const override { return "vulkan:7"; }
    std::shared_ptr<Buffer> alloc(DType t, size_t n) override { return std::make_shared<Buf>(this, t, n); }
    void upload(const Matrix&, const void*) override {}
    void download(const Matrix&, void*) override {}
    void flush() override {}
    void sync() override {}
    // Every kernel of the table, doing nothing (its arguments unused).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define VELA_KERNEL(ret, name, params, area, labels) \
    ret name params override { return ret(); }
#include "core/kernels.def"
#undef VELA_KERNEL
#pragma GCC diagnostic pop
    DeviceStats stats() const override { return {}; }
    MemoryInfo memory() const override { return {}; }
    void profile_begin() override {}
    std::vector<KernelTime> profile_end() override { return {}; }
};

}  // namespace

// ---- Philox -------------------------------------------------------------------

TEST_CASE("philox4x32-10 matches the Random123 known-answer vectors", "[philox]") {
    // Random123 tests/kat_vectors: counter (4 words), key (2 words) -> result.
    using philox::philox4x32_10;
    CHECK(philox4x32_10({0, 0, 0, 0}, {0, 0}) == philox::Counter{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
    CHECK(philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}) ==
          philox::Counter{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
    CHECK(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}) ==
          philox::Counter{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
}

TEST_CASE("philox normal: the division-free log, sqrt and cos are accurate", "[philox]") {
    double worst_log = 0, worst_sqrt = 0, worst_cos = 0;
    for (uint32_t a = 0; a < (1u << 24); a += 997) {
        double want = std::log((double(a) + 1.0) / 16777216.0);
        double got = philox::log_unit(a);
        worst_log = std::max(worst_log, std::fabs(got - want) / std::max(1e-3, std::fabs(want)));
        double wc = std::cos(2 * M_PI * double(a) / 16777216.0);
        worst_cos = std::max(worst_cos, std::fabs(double(philox::cos_turn(a)) - wc));
    }
    CHECK(philox::log_unit((1u << 24) - 1) == 0.0f);  // ln 1
    CHECK(philox::log_unit(0) == Approx(-24 * std::log(2.0)).epsilon(1e-6));
    for (double r = 0; r < 34; r += 0.0123) {
        double want = std::sqrt(r), got = philox::sqrt_small(float(r));
        worst_sqrt = std::max(worst_sqrt, std::fabs(got - want) / std::max(1e-6, want));
    }
    CHECK(philox::sqrt_small(0.0f) == 0.0f);
    CHECK(worst_log < 2e-6);   // absolute near ln 1 = 0, relative elsewhere
    CHECK(worst_sqrt < 3e-7);
    CHECK(worst_cos < 3e-7);
    CHECK(philox::cos_turn(0) == 1.0f);
    CHECK(philox::cos_turn(1u << 23) == -1.0f);
}

TEST_CASE("philox normal: moments and tails of a million draws", "[philox]") {
    const int n = 1 << 20;
    double s1 = 0, s2 = 0, s3 = 0, s4 = 0;
    int beyond2 = 0, beyond3 = 0;
    float lo = 0, hi = 0;
    for (int k = 0; k < n; k++) {
        double z = philox::normal(12345, uint64_t(k));
        s1 += z, s2 += z * z, s3 += z * z * z, s4 += z * z * z * z;
        beyond2 += std::fabs(z) > 2, beyond3 += std::fabs(z) > 3;
        lo = std::min(lo, float(z)), hi = std::max(hi, float(z));
    }
    double mean = s1 / n, var = s2 / n - mean * mean;
    // Standard errors at n = 2^20: mean 0.001, variance 0.0014, third moment 0.0024, fourth 0.0095.
    CHECK(std::fabs(mean) < 0.005);
    CHECK(std::fabs(var - 1) < 0.007);
    CHECK(std::fabs(s3 / n) < 0.012);
    CHECK(std::fabs(s4 / n - 3) < 0.05);
    // P(|z| > 2) = 0.0455, P(|z| > 3) = 0.0027.
    CHECK(std::fabs(double(beyond2) / n - 0.0455) < 0.001);
    CHECK(std::fabs(double(beyond3) / n - 0.0027) < 0.0003);
    CHECK(lo < -4.5f);
    CHECK(hi > 4.5f);
    CHECK(lo >= -5.8f);
    CHECK(hi <= 5.8f);
}

TEST_CASE("philox uniform: range, mean and 24-bit grid", "[philox]") {
    const int n = 1 << 20;
    double s = 0;
    float lo = 1, hi = 0;
    for (int k = 0; k < n; k++) {
        float u = philox::uniform(7, uint64_t(k));
        s += u, lo = std::min(lo, u), hi = std::max(hi, u);
        REQUIRE(u * 16777216.0f == std::floor(u * 16777216.0f));
    }
    CHECK(lo >= 0.0f);
    CHECK(hi < 1.0f);
    CHECK(std::fabs(s / n - 0.5) < 0.002);
    CHECK(philox::uniform(7, 5) == philox::uniform(7, 5));
    CHECK(philox::uniform(7, 5) != philox::uniform(8, 5));
}

// ---- names, seeds, registry ---------------------------------------------------------

TEST_CASE("enum names and activation parsing", "[core]") {
    CHECK(std::string(unary_name(Unary::tanh_prime)) == "tanh_prime");
    CHECK(std::string(unary_name(Unary::linear_frac)) == "linear_frac");
    CHECK(std::string(binary_name(Binary::sub)) == "sub");
    CHECK(std::string(reduce_name(Reduce::nrm2)) == "nrm2");
    CHECK(std::string(act_name(Act::sigmoid)) == "sigmoid");
    Act a = Act::identity;
    CHECK(parse_act("relu", a));
    CHECK(a == Act::relu);
    CHECK(parse_act("tanh", a));
    CHECK(a == Act::tanh);
    CHECK(parse_act("softplus", a));
    CHECK(a == Act::softplus);
    CHECK_FALSE(parse_act("swish", a));
}

TEST_CASE("seeds: next_seed restarts at set_default_seed and differs call to call", "[core]") {
    set_default_seed(42);
    uint64_t a = next_seed(), b = next_seed();
    set_default_seed(42);
    CHECK(next_seed() == a);
    CHECK(next_seed() == b);
    CHECK(a != b);
    set_default_seed(43);
    CHECK(next_seed() != a);
}

TEST_CASE("registry: cpu first, spec parsing, errors list the devices", "[core]") {
    auto devs = list_devices();
    REQUIRE(!devs.empty());
    CHECK(devs[0].id == "cpu");
    CHECK(devs[0].type == "cpu");
    CHECK(devs[0].memory > 0);
    for (size_t i = 1; i < devs.size(); i++) CHECK(devs[i].id == "vulkan:" + std::to_string(i - 1));
    CHECK(&get_device("cpu") == &cpu_device());
    CHECK(&get_device("CPU") == &cpu_device());
    CHECK(cpu_device().name() == "cpu");
    std::string e = error_of([] { get_device("tpu"); });
    CHECK(e.rfind("device: no device matches \"tpu\"; the devices are: cpu", 0) == 0);
    CHECK(error_of([] { get_device("vulkan:99"); }).rfind("device: no device matches \"vulkan:99\"", 0) == 0);
    set_current_device(cpu_device());
    CHECK(&current_device() == &cpu_device());
    bool listed = false;
    for (Device* d : open_devices()) listed = listed || d == &cpu_device();
    CHECK(listed);
}

TEST_CASE("registry: a device's description is found by identity", "[core]") {
    auto info = device_info(cpu_device());
    REQUIRE(info);
    CHECK(info->id == "cpu");
    CHECK(info->type == "cpu");
    OtherDevice other;  // named "vulkan:7", opened by nobody: the registry knows nothing of it
    CHECK(!device_info(other));
    CHECK(error_of([&] { other.set_option("threads", 2); }) == "option: vulkan:7 has no option 'threads'");
}

TEST_CASE("registry: VELA_DEVICE picks the default device", "[core]") {
    setenv("VELA_DEVICE", "cpu", 1);
    CHECK(&default_device() == &cpu_device());
    setenv("VELA_DEVICE", "nosuchdevice", 1);
    CHECK(error_of([] { default_device(); }).rfind("device: no device matches \"nosuchdevice\"", 0) == 0);
    unsetenv("VELA_DEVICE");
}

// keep_freed_heap (core/host_memory.hpp), set by register_backends before any test: blocks of 4 MiB
// come from glibc's heap (at its defaults they are mapped one by one, above the 128 KiB threshold)
// and, freed, stay in it (at its defaults the top beyond 128 KiB is given back). Not under
// AddressSanitizer, whose allocator takes no mallopt.
TEST_CASE("heap: blocks under 32 MiB come from the heap and stay there when freed", "[core]") {
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__)
    if (!keep_freed_heap()) {
        WARN("GLIBC_TUNABLES or MALLOC_*_ names a setting of glibc's heap: the user's is kept, not tested");
        return;
    }
    const size_t block = size_t(4) << 20, count = 48;
    const struct mallinfo2 before = mallinfo2();
    std::vector<void*> blocks;
    for (size_t i = 0; i < count; i++) {
        blocks.push_back(std::malloc(block));
        REQUIRE(blocks.back());
        std::memset(blocks.back(), int(i), block);
    }
    const struct mallinfo2 live = mallinfo2();
    CHECK(live.hblkhd - before.hblkhd < block);  // none mapped on its own
    for (void* p : blocks) std::free(p);
    const struct mallinfo2 after = mallinfo2();
    CHECK(after.fordblks >= before.fordblks + count * block * 3 / 4);  // kept in the heap, free
#else
    WARN("AddressSanitizer's allocator: glibc's heap settings do not apply");
#endif
}

// The VmFlags line of the mapping that holds `at`, from /proc/self/smaps ("" where none does).
static std::string vm_flags_at(const void* at) {
    std::ifstream smaps("/proc/self/smaps");
    std::string line;
    bool inside = false;
    while (std::getline(smaps, line)) {
        unsigned long lo = 0, hi = 0;
        if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(' ') > line.find('-'))
            inside = uintptr_t(at) >= lo && uintptr_t(at) < hi;
        else if (inside && line.rfind("VmFlags:", 0) == 0)
            return line + " ";
    }
    return "";
}

// Whether the kernel has transparent huge pages at all (without them MADV_HUGEPAGE is refused).
static bool thp_available() { return std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled").good(); }

// The cpu device maps matrices of 2 MiB and more apart and asks for huge pages on them
// (cpu_device.cpp, map_pages): a new 2 MiB result in small pages cost 2 ms of first touches on a VM.
TEST_CASE("cpu: a matrix of 2 MiB is mapped for huge pages", "[core]") {
    if (!thp_available()) {
        WARN("no transparent huge pages in this kernel: not tested");
        return;
    }
    Matrix two = zeros(cpu_device(), 512, 1024);
    CHECK(vm_flags_at(cpu::base(two)).find(" hg ") != std::string::npos);
    Matrix three = zeros(cpu_device(), 768, 1024);  // its first 2 MiB in a huge page, the rest not
    CHECK(vm_flags_at(cpu::base(three)).find(" hg ") != std::string::npos);
}

// advise_heap_huge_pages (core/host_memory.hpp): a block from glibc's heap lies, once the heap is
// advised, in a mapping marked for transparent huge pages ("hg" in smaps' VmFlags).
TEST_CASE("heap: what the heap grows by is advised for huge pages", "[core]") {
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__)
    const char* off = std::getenv("VELA_HUGE_HEAP");
    if (!thp_available()) {
        WARN("no transparent huge pages in this kernel: not tested");
        return;
    }
    if (!keep_freed_heap() || (off && std::strcmp(off, "0") == 0)) {
        WARN("glibc's heap settings are the user's, or VELA_HUGE_HEAP=0: not tested");
        return;
    }
    // 8 MiB: more than the heap held before vela set its policy, under the 32 MiB served from the
    // heap; from its free top, or from what it grows by.
    const size_t size = size_t(8) << 20;
    const size_t mapped_before = mallinfo2().hblkhd;
    char* p = static_cast<char*>(std::malloc(size));
    REQUIRE(p);
    REQUIRE(mallinfo2().hblkhd == mapped_before);  // from the heap, not mapped on its own
    advise_heap_huge_pages();
    const char* middle = p + size / 2;
    CHECK(vm_flags_at(middle).find(" hg ") != std::string::npos);
    std::free(p);
#else
    WARN("AddressSanitizer's allocator: glibc's heap settings do not apply");
#endif
}

// ---- argument checks -------------------------------------------------------------

TEST_CASE("ops: sizes, indices and views are checked", "[ops]") {
    Device& d = cpu_device();
    CHECK_ERROR(empty(d, -3, 2), "matrix: rows is -3 (must be ≥ 0)");
    CHECK_ERROR(zeros(d, 2, -1), "matrix: cols is -1 (must be ≥ 0)");
    CHECK_ERROR(empty(d, int64_t(1) << 30, int64_t(1) << 20),
                "matrix: 1073741824×1048576 is too large (at most 2^40 elements)");
    CHECK(error_of([&] { empty(d, int64_t(1) << 39, 1); }).find("out of memory on cpu") != std::string::npos);
    Matrix m = zeros(d, 4, 3);
    CHECK_ERROR(get(m, 4, 0), "get: index (5, 1) is out of range for a 4×3 matrix (rows 1..4, columns 1..3)");
    CHECK_ERROR(set(m, 0, -1, 1), "set: index (1, 0) is out of range for a 4×3 matrix (rows 1..4, columns 1..3)");
    CHECK_ERROR(view(m, 2, 1, 3, 1), "view: rows 3..5, columns 2..2 are out of range for a 4×3 matrix");
    CHECK_ERROR(view(m, 0, 0, -1, 2), "view: size -1×2 is negative (must be ≥ 0)");
    CHECK_ERROR(row(m, 4), "row: row 5 is out of range for a 4×3 matrix (rows 1..4)");
    CHECK_ERROR(col(m, -1), "col: column 0 is out of range for a 4×3 matrix (columns 1..3)");
    CHECK_ERROR(columns(m, 2, 2), "columns: columns 3..4 are out of range for a 4×3 matrix (columns 1..3)");
    CHECK_ERROR(columns(m, 0, -1), "columns: count is -1 (must be ≥ 0)");
    CHECK(view(m, 4, 3, 0, 0).empty());  // an empty view just past the end is fine
    Matrix u = zeros(d, 2, 2, DType::u8);
    CHECK_ERROR(set(u, 0, 0, 256), "set: value 256 does not fit a uint8 matrix (integers 0..255)");
    CHECK_ERROR(set(u, 0, 0, 1.5f), "set: value 1.5 does not fit a uint8 matrix (integers 0..255)");
    set(u, 1, 0, 200);
    CHECK(get(u, 1, 0) == 200.0f);
}

TEST_CASE("ops: released matrices are rejected by every operation", "[ops]") {
    Device& d = cpu_device();
    Matrix a = zeros(d, 3, 3), b = zeros(d, 3, 3), c = zeros(d, 3, 3), v = zeros(d, 3, 1);
    b.buf->release();
    CHECK_ERROR(mm(1, a, b, 0, c), "mm: b is a released matrix");
    CHECK_ERROR(axpy(1, b, a), "axpy: x is a released matrix");
    CHECK_ERROR(get(b, 0, 0), "get: m is a released matrix");
    CHECK_ERROR(to_host(b), "to_host: m is a released matrix");
    CHECK_ERROR(view(b, 0, 0, 1, 1), "view: m is a released matrix");
    CHECK_ERROR(clone(b), "copy: m is a released matrix");
    CHECK_ERROR(nrm2(b), "nrm2: x is a released matrix");
    CHECK_ERROR(unary(Unary::tanh, b, b), "tanh: x is a released matrix");
    CHECK_ERROR(softmax_xent(a, v, Matrix{}, 1, b), "softmax_xent: dz is a released matrix");
    CHECK_ERROR(random(Dist::normal, 1, b), "randn: x is a released matrix");
    CHECK_ERROR(dense(a, a, v, Act::relu, b), "dense: y is a released matrix");
    CHECK_ERROR(mm(1, a, Matrix{}, 0, c), "mm: b is not a matrix (no storage)");
}

// The core names the two devices; the Lua layer adds how to move one
// (tests/lua/test_errors.lua checks the ":to(" hint).
TEST_CASE("ops: devices must not be mixed", "[ops]") {
    OtherDevice other;
    Device& d = cpu_device();
    Matrix a = zeros(d, 2, 2), c = zeros(d, 2, 2);
    Matrix g = empty(other, 2, 2);
    CHECK_ERROR(mm(1, g, a, 0, c), "mm: a is on vulkan:7 but b is on cpu");
    CHECK_ERROR(mm(1, a, a, 0, g), "mm: a is on cpu but c is on vulkan:7");
    CHECK_ERROR(axpy(1, a, g), "axpy: x is on cpu but y is on vulkan:7");
    CHECK_ERROR(gather_cols(a, g, c), "gather_cols: src is on cpu but idx is on vulkan:7");
}

TEST_CASE("ops: shapes of level 3 and 2", "[ops]") {
    Device& d = cpu_device();
    Matrix a = empty(d, 256, 784), b = empty(d, 100, 128), c = empty(d, 256, 128);
    CHECK_ERROR(mm(1, a, b, 0, c), "mm: a is 256×784 but b is 100×128 (a's columns must equal b's rows)");
    Matrix b2 = empty(d, 784, 128), c2 = empty(d, 128, 256);
    CHECK_ERROR(mm(1, a, b2, 0, c2), "mm: c is 128×256 but a·b is 256×128 (c must have a's rows and b's columns)");
    CHECK_ERROR(mm(1, a.t(), b2, 0, c), "mm: a is 784×256 but b is 784×128 (a's columns must equal b's rows)");
    Matrix m = empty(d, 4, 5), x = empty(d, 3, 1), y = empty(d, 4, 1);
    CHECK_ERROR(mv(1, m, x, 0, y), "mv: a is 4×5 but x is 3×1 (x must be a vector of a's 5 columns)");
    Matrix x5 = empty(d, 1, 5);
    CHECK_ERROR(mv(1, m, x5, 0, x5), "mv: a is 4×5 but y is 1×5 (y must be a vector of a's 4 rows)");
    Matrix xm = empty(d, 5, 2);
    CHECK_ERROR(mv(1, m, xm, 0, y), "mv: a is 4×5 but x is 5×2 (x must be a vector of a's 5 columns)");
    CHECK_ERROR(rk(1, x5, x5, m), "rk: a is 4×5 but x is 1×5 (x must be a vector of a's 4 rows)");
    CHECK_ERROR(rk(1, y, y, m), "rk: a is 4×5 but y is 4×1 (y must be a vector of a's 5 columns)");
}

TEST_CASE("ops: outputs must not alias inputs where the math forbids it", "[ops]") {
    Device& d = cpu_device();
    Matrix a = zeros(d, 4, 4);
    CHECK_ERROR(mm(1, a, a, 0, a), "mm: c aliases a (the output of mm must not overlap its inputs)");
    Matrix big = zeros(d, 8, 8), b = zeros(d, 4, 4);
    CHECK_ERROR(mm(1, b, big.view(0, 0, 4, 4), 0, big.view(2, 2, 4, 4)),
                "mm: c aliases b (the output of mm must not overlap its inputs)");
    mm(1, big.view(0, 0, 4, 4), b, 0, big.view(4, 4, 4, 4));  // disjoint blocks of one buffer are fine
    mm(1, big.view(0, 0, 4, 4), b, 0, big.view(0, 4, 4, 4));
    CHECK_ERROR(mv(1, a, a.col(0), 0, a.col(1)), "mv: y aliases a (the output of mv must not overlap its inputs)");
    Matrix v = zeros(d, 8, 1);
    CHECK_ERROR(mv(1, b, v.view(0, 0, 4, 1), 0, v.view(3, 0, 4, 1)),
                "mv: y aliases x (the output of mv must not overlap its inputs)");
    CHECK_ERROR(rk(1, a.col(0), a.row(0), a), "rk: a aliases x (the output of rk must not overlap its inputs)");
    CHECK_ERROR(axpy(1, v.view(0, 0, 4, 1), v.view(2, 0, 4, 1)),
                "axpy: y partially overlaps x (use the same view for in-place work, or disjoint views)");
    axpy(1, v, v);  // in place is fine
    CHECK_ERROR(unary(Unary::tanh, v.view(0, 0, 4, 1), v.view(1, 0, 4, 1)),
                "tanh: y partially overlaps x (use the same view for in-place work, or disjoint views)");
    CHECK_ERROR(add_bias(a.col(0), a), "add_bias: y aliases b (the output of add_bias must not overlap its inputs)");
    Matrix idx = zeros(d, 4, 1);
    CHECK_ERROR(argmax(a, a.col(1)), "argmax: idx aliases x (the output of argmax must not overlap its inputs)");
    CHECK_ERROR(gather_cols(a, idx.view(0, 0, 1, 1), a.col(3)),
                "gather_cols: dst aliases src (the output of gather_cols must not overlap its inputs)");
    CHECK_ERROR(softmax_xent(a, idx, a.col(2), 1, b),
                "softmax_xent: loss aliases z (the output of softmax_xent must not overlap its inputs)");
    CHECK_ERROR(dense(a, b, v.view(0, 0, 4, 1), Act::relu, a),
                "dense: y aliases w (the output of dense must not overlap its inputs)");
}

TEST_CASE("ops: level-1 and elementwise shapes", "[ops]") {
    Device& d = cpu_device();
    Matrix x = zeros(d, 3, 1), y = zeros(d, 4, 1), r = zeros(d, 1, 3), m = zeros(d, 3, 3), m2 = zeros(d, 3, 2);
    CHECK_ERROR(axpy(1, x, y), "axpy: x is 3×1 but y is 4×1 (shapes must match)");
    CHECK_ERROR(axpby(1, m, 2, m2), "axpby: x is 3×3 but y is 3×2 (shapes must match)");
    CHECK_ERROR(copy(m, x), "copy: x is 3×3 but y is 3×1 (shapes must match)");
    CHECK_ERROR(swap(x, y), "swap: x is 3×1 but y is 4×1 (shapes must match)");
    CHECK_ERROR(dot(x, y), "dot: x is 3×1 but y is 4×1 (shapes must match)");
    CHECK_ERROR(binary(Binary::mul, m, m, m2), "mul: a is 3×3 but c is 3×2 (shapes must match)");
    CHECK_ERROR(binary(Binary::add, m, y, m),
                "add: a is 3×3 but b is 4×1 (shapes must match, or broadcast: a dimension of 1 in one operand "
                "stretches to the other's, as in NumPy, e.g. m×n with m×1, 1×n or 1×1)");
    CHECK_ERROR(binary(Binary::add, m, x, x), "add: c is 3×1 but a (3×3) with b (3×1) broadcasts to 3×3");
    CHECK_ERROR(binary(Binary::add, x, zeros(d, 1, 2), m), "add: c is 3×3 but a (3×1) with b (1×2) broadcasts to 3×2");
    CHECK_ERROR(unary(Unary::sigmoid, m, m2), "sigmoid: x is 3×3 but y is 3×2 (shapes must match)");
    CHECK_ERROR(unary(Unary::linear_frac, m, m), "linear_frac: its 4 parameters are missing");
    CHECK_ERROR(imax(zeros(d, 0, 3)), "imax: x is 0×3 (an empty matrix has no largest element)");
    axpy(1, x, r);  // a row and a column of one length are fine
    CHECK(dot(x, r) == 0.0);
}

TEST_CASE("ops: fused kernel shapes", "[ops]") {
    Device& d = cpu_device();
    Matrix z = zeros(d, 10, 5), dz = zeros(d, 10, 5), lab = zeros(d, 1, 5), loss = zeros(d, 5, 1);
    CHECK_ERROR(softmax(z, zeros(d, 5, 10)), "softmax: y is 5×10 but must be 10×5 (the shape of x)");
    CHECK_ERROR(softmax_xent(z, zeros(d, 4, 1), loss, 1, dz),
                "softmax_xent: labels is 4×1 but must be a vector of 5 elements (one class index per column of z)");
    CHECK_ERROR(softmax_xent(z, lab, zeros(d, 2, 3), 1, dz),
                "softmax_xent: loss is 2×3 but must be a vector of 5 elements (one loss per column of z)");
    CHECK_ERROR(softmax_xent(z, lab, loss, 1, zeros(d, 10, 4)),
                "softmax_xent: dz is 10×4 but must be 10×5 (the shape of z)");
    CHECK_ERROR(softmax_xent(zeros(d, 0, 5), lab, loss, 1, zeros(d, 0, 5)),
                "softmax_xent: z is 0×5 (it needs at least one class row)");
    CHECK_ERROR(argmax(z, zeros(d, 4, 1)),
                "argmax: idx is 4×1 but must be a vector of 5 elements (one index per column of x)");
    CHECK_ERROR(argmax(zeros(d, 0, 2), zeros(d, 2, 1)), "argmax: x is 0×2 (a column without rows has no maximum)");
    CHECK_ERROR(argmin(zeros(d, 0, 2), zeros(d, 2, 1)), "argmin: x is 0×2 (a column without rows has no minimum)");
    CHECK_ERROR(argmin(z, zeros(d, 4, 1)),
                "argmin: idx is 4×1 but must be a vector of 5 elements (one index per column of x)");
    CHECK_ERROR(gather_cols(z, zeros(d, 2, 2), dz), "gather_cols: idx is 2×2 but must be a vector of column indices");
    CHECK_ERROR(gather_cols(z, lab, zeros(d, 9, 5)),
                "gather_cols: dst is 9×5 but must be 10×5 (src's rows × the number of indices)");
    CHECK_ERROR(add_bias(zeros(d, 9, 1), z), "add_bias: b is 9×1 but must be a vector of 10 elements (one bias per row of y)");
    Matrix w = zeros(d, 3, 10), b = zeros(d, 3, 1);
    CHECK_ERROR(dense(w, zeros(d, 9, 5), b, Act::tanh, zeros(d, 3, 5)),
                "dense: w is 3×10 but x is 9×5 (w's columns must equal x's rows)");
    CHECK_ERROR(dense(w, z, zeros(d, 4, 1), Act::tanh, zeros(d, 3, 5)),
                "dense: b is 4×1 but must be a vector of 3 elements (one bias per row of w)");
    CHECK_ERROR(dense(w, z, b, Act::tanh, zeros(d, 3, 4)), "dense: y is 3×4 but must be 3×5 (w's rows × x's columns)");
    CHECK_ERROR(dense(w, z, b, Act::count_, zeros(d, 3, 5)), "dense: unknown activation " + std::to_string(int(Act::count_)));
}

TEST_CASE("ops: uint8 only where documented", "[ops]") {
    Device& d = cpu_device();
    uint8_t raw[6] = {0, 1, 2, 3, 254, 255};
    Matrix u = from_host_u8(d, 3, 2, raw), f = zeros(d, 3, 2);
    CHECK_ERROR(axpy(1, u, f), "axpy: x is uint8 but must be float32");
    CHECK_ERROR(mm(1, f.t(), u, 0, zeros(d, 2, 2)), "mm: b is uint8 but must be float32");
    CHECK_ERROR(unary(Unary::exp, f, u), "exp: y is uint8 but must be float32");
    CHECK_ERROR(fill(u, 1), "fill: x is uint8 but must be float32");
    CHECK_ERROR(copy(f, u), "copy: x is float32 but y is uint8 (copy keeps the dtype or converts uint8 to float32)");
    CHECK_ERROR(gather_cols(f, u.col(0), f), "gather_cols: idx is uint8 but must be float32");
    CHECK_ERROR(argmax(f, u.row(0)), "argmax: idx is uint8 but must be float32");
    // Allowed: copy from uint8, gather_cols from uint8, uint8 labels.
    copy(u, f);
    CHECK(to_host(f) == std::vector<float>{0, 1, 2, 3, 254, 255});
    Matrix u2 = zeros(d, 3, 2, DType::u8);
    copy(u, u2);
    CHECK(to_host(u2) == std::vector<float>{0, 1, 2, 3, 254, 255});
    Matrix moved = to_device(u, d);
    CHECK(moved.dtype() == DType::u8);
    CHECK(to_host(moved) == to_host(u));
}

TEST_CASE("ops: the remaining overlap, enum and released checks", "[ops]") {
    Device& d = cpu_device();
    Matrix v = zeros(d, 8, 1), m = zeros(d, 4, 4), lab = zeros(d, 1, 2);
    CHECK_ERROR(swap(v.view(0, 0, 4, 1), v.view(2, 0, 4, 1)),
                "swap: y partially overlaps x (use the same view for in-place work, or disjoint views)");
    CHECK_ERROR(copy(v.view(0, 0, 4, 1), v.view(1, 0, 4, 1)),
                "copy: y partially overlaps x (use the same view for in-place work, or disjoint views)");
    CHECK_ERROR(binary(Binary::mul, v.view(0, 0, 4, 1), v.view(4, 0, 4, 1), v.view(1, 0, 4, 1)),
                "mul: c partially overlaps a (use the same view for in-place work, or disjoint views)");
    CHECK_ERROR(binary(Binary::div, v.view(0, 0, 4, 1), v.view(4, 0, 4, 1), v.view(3, 0, 4, 1)),
                "div: c partially overlaps a (use the same view for in-place work, or disjoint views)");
    CHECK_ERROR(softmax(m.view(0, 0, 4, 2), m.view(0, 1, 4, 2)),
                "softmax: y partially overlaps x (use the same view for in-place work, or disjoint views)");
    Matrix z = m.view(0, 0, 4, 2);
    CHECK_ERROR(softmax_xent(z, lab, Matrix{}, 1, m.view(0, 1, 4, 2)),
                "softmax_xent: dz partially overlaps z (use the same view for in-place work, or disjoint views)");
    Matrix zl = zeros(d, 1, 2);
    CHECK_ERROR(softmax_xent(zl, zl, Matrix{}, 1, zl), "softmax_xent: dz aliases labels (the output of softmax_xent must not overlap its inputs)");
    CHECK_ERROR(softmax_xent(z, lab, lab, 1, m.view(0, 2, 4, 2)),
                "softmax_xent: loss aliases labels (the output of softmax_xent must not overlap its inputs)");
    CHECK_ERROR(softmax_xent(z, lab, m.view(0, 2, 1, 2), 1, m.view(0, 2, 4, 2)),
                "softmax_xent: loss aliases dz (the output of softmax_xent must not overlap its inputs)");
    CHECK_ERROR(rk(1, zeros(d, 4, 1), m.row(3), m), "rk: a aliases y (the output of rk must not overlap its inputs)");
    Matrix wide = zeros(d, 4, 8);
    CHECK_ERROR(gather_cols(m, wide.view(0, 0, 1, 4), wide.view(0, 0, 4, 4)),
                "gather_cols: dst aliases idx (the output of gather_cols must not overlap its inputs)");
    Matrix w = zeros(d, 4, 4), x = zeros(d, 4, 3), b = zeros(d, 4, 1);
    CHECK_ERROR(dense(w, wide.view(0, 0, 4, 3), b, Act::relu, wide.view(0, 2, 4, 3)),
                "dense: y aliases x (the output of dense must not overlap its inputs)");
    CHECK_ERROR(dense(w, x, wide.col(0), Act::relu, wide.view(0, 0, 4, 3)),
                "dense: y aliases b (the output of dense must not overlap its inputs)");
    CHECK_ERROR(unary(Unary::count_, v, v), "unary: unknown operation " + std::to_string(int(Unary::count_)));
    CHECK_ERROR(binary(Binary::count_, v, v, v), "binary: unknown operation " + std::to_string(int(Binary::count_)));
    Matrix r = zeros(d, 2, 2);
    r.buf->release();
    CHECK_ERROR(to_device(r, d), "to: m is a released matrix");
    CHECK_ERROR(set(r, 0, 0, 1), "set: m is a released matrix");
    CHECK_ERROR(fill(r, 1), "fill: x is a released matrix");
    CHECK_ERROR(argmax(m, r), "argmax: idx is a released matrix");
}

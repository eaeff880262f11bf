// specialize_spirv (src/vulkan/spirv_specialize.hpp) on a hand-assembled module
// whose expected output is written out word by word (SPIR-V 1.6 encoding),
// and on every built-in shader: what it leaves is the input, word for word.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "vulkan/spirv_specialize.hpp"

namespace vela::vk {
const uint32_t* shader_spirv(const char* name, size_t* count);
}

using namespace vela::vk;

namespace {

constexpr uint32_t op(uint32_t words, uint32_t opcode) { return words << 16 | opcode; }
// Opcodes: OpDecorate 71, OpTypeBool 20, OpTypeInt 21, OpConstantTrue 41, OpConstantFalse 42,
// OpConstant 43, OpSpecConstantTrue 48, OpSpecConstantFalse 49, OpSpecConstant 50,
// OpSpecConstantOp 52 (IAdd = 128). Decoration SpecId = 1, Offset = 35.
const std::vector<uint32_t> header = {0x07230203u, 0x00010000u, 0, 20, 0};

std::vector<uint32_t> module(std::vector<uint32_t> body) {
    std::vector<uint32_t> m = header;
    m.insert(m.end(), body.begin(), body.end());
    return m;
}

}  // namespace

TEST_CASE("spirv: specialization constants are frozen to the given values", "[spirv]") {
    // %2 uint SpecId 0 (default 7), %3 bool SpecId 1 (default true), %4 bool SpecId 2 (default false),
    // %5 uint SpecId 5 (no value given: stays), %6 = %2 + %5 (OpSpecConstantOp: stays), %7 a 64-bit
    // spec constant with SpecId 3 (two value words: left to the driver).
    auto in = module({
        op(4, 71), 2, 1, 0,  op(4, 71), 3, 1, 1,  op(4, 71), 4, 1, 2,
        op(4, 71), 5, 1, 5,  op(4, 71), 2, 35, 0,  op(4, 71), 7, 1, 3,
        op(4, 21), 1, 32, 0,  op(2, 20), 10,  op(4, 21), 11, 64, 0,
        op(4, 50), 1, 2, 7,  op(3, 48), 10, 3,  op(3, 49), 10, 4,  op(4, 50), 1, 5, 9,
        op(6, 52), 1, 6, 128, 2, 5,  op(5, 50), 11, 7, 1, 0,
    });
    const uint32_t spec[4] = {42, 0, 1, 3};
    auto out = specialize_spirv(in.data(), in.size(), spec, 4);
    auto want = module({
        op(4, 71), 5, 1, 5,  op(4, 71), 2, 35, 0,  op(4, 71), 7, 1, 3,
        op(4, 21), 1, 32, 0,  op(2, 20), 10,  op(4, 21), 11, 64, 0,
        op(4, 43), 1, 2, 42,  op(3, 42), 10, 3,  op(3, 41), 10, 4,  op(4, 50), 1, 5, 9,
        op(6, 52), 1, 6, 128, 2, 5,  op(5, 50), 11, 7, 1, 0,
    });
    CHECK(out == want);

    SECTION("no values, or none the module uses: unchanged") {
        CHECK(specialize_spirv(in.data(), in.size(), spec, 0) == in);
        auto few = module({op(4, 71), 5, 1, 5, op(4, 21), 1, 32, 0, op(4, 50), 1, 5, 9});
        CHECK(specialize_spirv(few.data(), few.size(), spec, 4) == few);
    }
    SECTION("a stream that does not parse is returned as it came") {
        auto bad = module({op(4, 71), 2, 1, 0, op(0, 50), 1});
        CHECK(specialize_spirv(bad.data(), bad.size(), spec, 4) == bad);
        auto cut = module({op(4, 71), 2, 1, 0, op(9, 50), 1, 2, 7});
        CHECK(specialize_spirv(cut.data(), cut.size(), spec, 4) == cut);
    }
}

TEST_CASE("spirv: built-in shaders lose only their SpecId decorations and spec-constant opcodes", "[spirv]") {
    for (const char* name : {"unary", "binary", "level1", "batch", "mm_regblock", "softmax", "im2col"}) {
        INFO(name);
        size_t words = 0;
        const uint32_t* code = shader_spirv(name, &words);
        REQUIRE(code);
        const uint32_t spec[8] = {64, 2, 1, 0, 0, 0, 0, 0};
        auto out = specialize_spirv(code, words, spec, 8);
        // Walk both: every output instruction is the input's, except frozen
        // constants (opcode 50 → 43, 48/49 → 41/42, same length) and dropped SpecId decorations.
        size_t i = 5, j = 5, dropped = 0, frozen = 0, folded = 0;
        REQUIRE(out.size() < words);
        CHECK(std::vector<uint32_t>(out.begin(), out.begin() + 5) == std::vector<uint32_t>(code, code + 5));
        while (i < words) {
            uint32_t n = code[i] >> 16, o = code[i] & 0xffffu;
            if (o == 71 && code[i + 2] == 1 && code[i + 3] < 8) {
                ++dropped;
                i += n;
                continue;
            }
            REQUIRE(j < out.size());
            uint32_t p = out[j] & 0xffffu;
            if (o == 52 && p != 52) {  // a folded OpSpecConstantOp: the same type and id, a plain constant
                CHECK(((p == 43 && (out[j] >> 16) == 4) || ((p == 41 || p == 42) && (out[j] >> 16) == 3)));
                CHECK(out[j + 1] == code[i + 1]);
                CHECK(out[j + 2] == code[i + 2]);
                ++folded;
                i += n;
                j += out[j] >> 16;
                continue;
            }
            CHECK((out[j] >> 16) == n);
            if (p != o) {
                CHECK(((o == 50 && p == 43) || (o == 48 && p == 41) || (o == 49 && p == 42) ||
                       (o == 48 && p == 42) || (o == 49 && p == 41)));
                ++frozen;
                CHECK(out[j + 1] == code[i + 1]);
                CHECK(out[j + 2] == code[i + 2]);
            } else {
                for (uint32_t w = 0; w < n; ++w) CHECK(out[j + w] == code[i + w]);
            }
            i += n;
            j += n;
        }
        CHECK(j == out.size());
        CHECK(dropped > 0);
    }
}

TEST_CASE("spirv: spec-constant operations on frozen values become constants", "[spirv]") {
    // %2 uint SpecId 0, %3 uint SpecId 1, %4 bool SpecId 2, %5 uint 5 (OpConstant), %9 uint SpecId 3 (no value).
    // %20 = %2 * %3, %21 = %2 != %5, %22 = %21 && %4, %23 = %20 / %5, %24 = select(%22, %20, %5),
    // %25 = %2 - %3 (wraps), %26 = %20 + %9 (%9 has no value: stays), %27 = %2 / (%3 - %3) (division
    // by zero: stays), %28 = %2 << %3, %29 = SMod(-7, 3), %30 = SRem(-7, 3).
    auto in = module({
        op(4, 71), 2, 1, 0,  op(4, 71), 3, 1, 1,  op(4, 71), 4, 1, 2,  op(4, 71), 9, 1, 3,
        op(4, 21), 1, 32, 0,  op(2, 20), 10,  op(4, 21), 11, 32, 1,
        op(4, 50), 1, 2, 7,  op(4, 50), 1, 3, 9,  op(3, 48), 10, 4,  op(4, 43), 1, 5, 5,  op(4, 50), 1, 9, 1,
        op(4, 43), 11, 6, uint32_t(-7),  op(4, 43), 11, 7, 3,
        op(6, 52), 1, 20, 132, 2, 3,  op(6, 52), 10, 21, 171, 2, 5,  op(6, 52), 10, 22, 167, 21, 4,
        op(6, 52), 1, 23, 134, 20, 5,  op(7, 52), 1, 24, 169, 22, 20, 5,  op(6, 52), 1, 25, 130, 2, 3,
        op(6, 52), 1, 26, 128, 20, 9,  op(6, 52), 1, 31, 130, 3, 3,  op(6, 52), 1, 27, 134, 2, 31,
        op(6, 52), 1, 28, 196, 2, 3,  op(6, 52), 11, 29, 139, 6, 7,  op(6, 52), 11, 30, 138, 6, 7,
    });
    const uint32_t spec[3] = {12, 2, 1};  // %2 = 12, %3 = 2, %4 = true
    auto out = specialize_spirv(in.data(), in.size(), spec, 3);
    auto want = module({
        op(4, 71), 9, 1, 3,
        op(4, 21), 1, 32, 0,  op(2, 20), 10,  op(4, 21), 11, 32, 1,
        op(4, 43), 1, 2, 12,  op(4, 43), 1, 3, 2,  op(3, 41), 10, 4,  op(4, 43), 1, 5, 5,  op(4, 50), 1, 9, 1,
        op(4, 43), 11, 6, uint32_t(-7),  op(4, 43), 11, 7, 3,
        op(4, 43), 1, 20, 24,  op(3, 41), 10, 21,  op(3, 41), 10, 22,
        op(4, 43), 1, 23, 4,  op(4, 43), 1, 24, 24,  op(4, 43), 1, 25, 10,
        op(6, 52), 1, 26, 128, 20, 9,  op(4, 43), 1, 31, 0,  op(6, 52), 1, 27, 134, 2, 31,
        op(4, 43), 1, 28, 48,  op(4, 43), 11, 29, 2,  op(4, 43), 11, 30, uint32_t(-1),
    });
    CHECK(out == want);
    const uint32_t wrap[3] = {1, 2, 0};  // %25 = 1 - 2 wraps to 2^32 - 1; %21 && false is false
    auto out2 = specialize_spirv(in.data(), in.size(), wrap, 3);
    auto has = [&](std::vector<uint32_t> ins) { return std::search(out2.begin(), out2.end(), ins.begin(), ins.end()) != out2.end(); };
    CHECK(has({op(4, 43), 1, 25, 0xffffffffu}));
    CHECK(has({op(3, 42), 10, 22}));
    CHECK(has({op(4, 43), 1, 24, 5}));
}

// specialize_spirv (src/vulkan/spirv_specialize.hpp) on a hand-assembled module
// whose expected output is written out word by word (SPIR-V 1.6 encoding),
// and on every built-in shader: what it leaves is the input, word for word.
// prune_constant_branches on modules in SPIR-V assembly and on every built-in
// shader frozen with many spec values, checked by SPIRV-Tools' validator.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

#include <spirv-tools/libspirv.hpp>

#include <string>

#include "vulkan/spirv_specialize.hpp"

namespace vela::vk {
const uint32_t* shader_spirv(const char* name, size_t* count);
const char* shader_spirv_name(size_t i);
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

constexpr uint32_t kMaxSpecTest = 11;  // Pipelines' kMaxSpec

// prune_constant_branches: modules written in SPIR-V assembly (SPIRV-Tools'
// assembler), the result compared as disassembly and checked by its validator.
namespace {

std::vector<uint32_t> assemble(const std::string& text) {
    spvtools::SpirvTools tools(SPV_ENV_VULKAN_1_2);
    std::vector<uint32_t> out;
    REQUIRE(tools.Assemble(text, &out, SPV_TEXT_TO_BINARY_OPTION_PRESERVE_NUMERIC_IDS));
    return out;
}

std::string disassemble(const std::vector<uint32_t>& m) {
    spvtools::SpirvTools tools(SPV_ENV_VULKAN_1_2);
    std::string text;
    REQUIRE(tools.Disassemble(m, &text, SPV_BINARY_TO_TEXT_OPTION_NO_HEADER | SPV_BINARY_TO_TEXT_OPTION_FRIENDLY_NAMES));
    return text;
}

bool valid(const std::vector<uint32_t>& m, std::string* why = nullptr) {
    spvtools::SpirvTools tools(SPV_ENV_VULKAN_1_2);
    tools.SetMessageConsumer([&](spv_message_level_t, const char*, const spv_position_t&, const char* msg) {
        if (why) *why += std::string(msg) + "\n";
    });
    return tools.Validate(m);
}

// A compute shader's opening: names for every id (so that the disassembly
// prints them), the types and constants, a Private float %out, main's first
// block. `ids` names the function's own ids.
std::string opening(const std::string& ids) {
    std::string names;
    std::string all = "void fn bool uint float true false u1 u2 f1 f2 pf out main entry " + ids;
    for (size_t i = 0, j; i < all.size(); i = j + 1) {
        j = all.find(' ', i);
        if (j == std::string::npos) j = all.size();
        if (j > i) names += "OpName %" + all.substr(i, j - i) + " \"" + all.substr(i, j - i) + "\"\n";
    }
    return R"(OpCapability Shader
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main "main" %out
OpExecutionMode %main LocalSize 1 1 1
)" + names + R"(OpDecorate %dead NoContraction
%void = OpTypeVoid
%fn = OpTypeFunction %void
%bool = OpTypeBool
%uint = OpTypeInt 32 0
%float = OpTypeFloat 32
%true = OpConstantTrue %bool
%false = OpConstantFalse %bool
%u1 = OpConstant %uint 1
%u2 = OpConstant %uint 2
%f1 = OpConstant %float 1
%f2 = OpConstant %float 2
%pf = OpTypePointer Private %float
%out = OpVariable %pf Private
%main = OpFunction %void None %fn
%entry = OpLabel
)";
}

}  // namespace

TEST_CASE("spirv: branches on constants go to their one target and what is left unreached goes", "[spirv]") {
    // An if/else on true with an OpPhi at its merge, a switch on 2 with three
    // targets, an if on false without else.
    auto in = assemble(opening("then a else dead merge phi sm case1 case2 def never end") + R"(
OpSelectionMerge %merge None
OpBranchConditional %true %then %else
%then = OpLabel
%a = OpFAdd %float %f1 %f2
OpBranch %merge
%else = OpLabel
%dead = OpFMul %float %f1 %f2
OpBranch %merge
%merge = OpLabel
%phi = OpPhi %float %a %then %dead %else
OpStore %out %phi
OpSelectionMerge %sm None
OpSwitch %u2 %def 1 %case1 2 %case2
%case1 = OpLabel
OpStore %out %f1
OpBranch %sm
%case2 = OpLabel
OpStore %out %f2
OpBranch %sm
%def = OpLabel
OpBranch %sm
%sm = OpLabel
OpSelectionMerge %end None
OpBranchConditional %false %never %end
%never = OpLabel
OpStore %out %f1
OpBranch %end
%end = OpLabel
OpReturn
OpFunctionEnd
)");
    REQUIRE(valid(in));
    auto out = prune_constant_branches(in);
    std::string why;
    CHECK(valid(out, &why));
    INFO(why);
    // The dead value's name and decoration go with it.
    std::string want = opening("then a merge phi sm case2 end") + R"(
OpBranch %then
%then = OpLabel
%a = OpFAdd %float %f1 %f2
OpBranch %merge
%merge = OpLabel
%phi = OpPhi %float %a %then
OpStore %out %phi
OpSelectionMerge %sm None
OpSwitch %u2 %case2
%case2 = OpLabel
OpStore %out %f2
OpBranch %sm
%sm = OpLabel
OpBranch %end
%end = OpLabel
OpReturn
OpFunctionEnd
)";
    want.erase(want.find("OpDecorate %dead NoContraction\n"), 31);
    CHECK(disassemble(out) == disassemble(assemble(want)));

    SECTION("a loop header's branch stays, a break on a constant goes") {
        auto loop = assemble(opening("head body cont exit dead") + R"(
OpBranch %head
%head = OpLabel
OpLoopMerge %exit %cont None
OpBranchConditional %true %body %exit
%body = OpLabel
%dead = OpFMul %float %f1 %f2
OpStore %out %dead
OpBranchConditional %false %exit %cont
%cont = OpLabel
OpBranch %head
%exit = OpLabel
OpReturn
OpFunctionEnd
)");
        REQUIRE(valid(loop));
        auto pruned = prune_constant_branches(loop);
        CHECK(valid(pruned));
        std::string text = disassemble(pruned);
        CHECK(text.find("OpBranchConditional %true %body %exit") != std::string::npos);
        CHECK(text.find("OpStore %out %dead\nOpBranch %cont") != std::string::npos);
    }
    SECTION("nothing on a constant: unchanged; a stream that does not parse: unchanged") {
        auto none = assemble(opening("dead") + "%dead = OpFMul %float %f1 %f2\nOpStore %out %dead\nOpReturn\nOpFunctionEnd\n");
        CHECK(prune_constant_branches(none) == none);
        auto cut = in;
        cut.resize(cut.size() - 3);
        CHECK(prune_constant_branches(cut) == cut);
    }
}

TEST_CASE("spirv: built-in shaders stay valid with their constant branches pruned", "[spirv]") {
    // Every built-in shader, frozen with spec values drawn from small ranges
    // (constant 0, the workgroup or subgroup size, from 4, 8, 16); where the
    // frozen module is valid, the pruned one must be, and smaller where it changed.
    uint64_t state = 12345;
    auto draw = [&](uint32_t n) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        return uint32_t(state >> 33) % n;
    };
    size_t checked = 0, pruned = 0;
    for (size_t s = 0; const char* name = shader_spirv_name(s); ++s) {
        size_t words = 0;
        const uint32_t* code = shader_spirv(name, &words);
        for (int trial = 0; trial < 4; ++trial) {
            uint32_t spec[kMaxSpecTest];
            spec[0] = 4u << draw(3);
            for (uint32_t k = 1; k < kMaxSpecTest; ++k) spec[k] = draw(trial < 2 ? 2 : 5);
            auto frozen = specialize_spirv(code, words, spec, kMaxSpecTest);
            if (!valid(frozen)) continue;
            auto out = prune_constant_branches(frozen);
            std::string why;
            INFO(name << " spec " << spec[0] << "," << spec[1] << "," << spec[2] << "," << spec[3] << "," << spec[4]);
            CHECK(valid(out, &why));
            INFO(why);
            CHECK(out.size() <= frozen.size());
            ++checked;
            pruned += out.size() < frozen.size();
        }
    }
    CHECK(checked > 100);
    CHECK(pruned > 50);
    // The first mm of a process on lavapipe (the 1×1 stand-in, texel loads, SG 16): a quarter of the words.
    size_t words = 0;
    const uint32_t* code = shader_spirv("mm_regblock_tex_i64", &words);
    REQUIRE(code);
    const uint32_t first[9] = {16, 1, 1, 0, 0, 0, 0, 0, 0};
    auto frozen = specialize_spirv(code, words, first, 9);
    auto out = prune_constant_branches(frozen);
    CHECK(valid(out));
    CHECK(out.size() * 3 < frozen.size());
}

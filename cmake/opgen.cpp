// Writes ops.glsl, the shaders' view of the op table (src/core/ops.def), at
// build time: the math of core/opmath.h with GLSL's spellings, a constant per
// op and per activation numbered as the C++ enums (so the numbers cannot
// drift), and the switches unary_f, act_f and act_prime_f. Every switch lists
// every op; an unknown number gives NaN, never another op's value.
// And modes.glsl: the mode numbers of the reductions (src/core/reduce.def),
// the GEMM epilogue, the column, batchnorm, layer norm, pooling and mv passes
// (src/vulkan/modes.def) and the optimizer kinds (VELA_OPTIMS), FAMILY_NAME
// constants numbered as their C++ enums.
#include <cctype>
#include <cstdio>
#include <string>

#include "core/device.hpp"
#include "vulkan/kernel.hpp"

using vela::Act;
using vela::Unary;

namespace {

std::string upper(const char* s) {
    std::string u(s);
    for (char& c : u) c = char(std::toupper(static_cast<unsigned char>(c)));
    return u;
}

void mode_row(std::FILE* f, const char* family, const char* name, uint32_t value, const char* what) {
    std::fprintf(f, "const uint %s_%s = %uu;  // %s\n", family, upper(name).c_str(), unsigned(value), what);
}

// modes.glsl: one constant per row of each mode table, from the C++ enum.
int write_modes(const char* path) {
    std::FILE* f = std::fopen(path, "w");
    if (!f) {
        std::perror(path);
        return 1;
    }
    std::fprintf(f, "// Generated from src/core/reduce.def and src/vulkan/modes.def by cmake/opgen.cpp at build time: "
                    "do not edit.\n#ifndef VELA_MODES_GLSL\n#define VELA_MODES_GLSL\n");
#define VELA_REDUCE(name, what) mode_row(f, "REDUCE", #name, uint32_t(vela::Reduce::name), what);
#include "core/reduce.def"
#undef VELA_REDUCE
    std::fprintf(f, "const uint REDUCE_IMAX = %du;  // the first index of the largest |x| (reduce.comp only)\n",
                 int(vela::Reduce::count_));
#define VELA_EPI(name, what) mode_row(f, "EPI", #name, uint32_t(vela::vk::Epi::name), what);
#define VELA_COLSTATS(name, what) mode_row(f, "COLSTATS", #name, uint32_t(vela::vk::ColStats::name), what);
#define VELA_COLAPPLY(name, what) mode_row(f, "COLAPPLY", #name, uint32_t(vela::vk::ColApply::name), what);
#define VELA_BN(name, what) mode_row(f, "BN", #name, uint32_t(vela::vk::Bn::name), what);
#define VELA_BN_APPLY(name, what) mode_row(f, "BN_APPLY", #name, uint32_t(vela::vk::BnApply::name), what);
#define VELA_LN(name, what) mode_row(f, "LN", #name, uint32_t(vela::vk::Ln::name), what);
#define VELA_POOL(name, what) mode_row(f, "POOL", #name, uint32_t(vela::vk::Pooling::name), what);
#define VELA_MV(name, what) mode_row(f, "MV", #name, uint32_t(vela::vk::Mv::name), what);
#include "vulkan/modes.def"
#undef VELA_EPI
#undef VELA_COLSTATS
#undef VELA_COLAPPLY
#undef VELA_BN
#undef VELA_BN_APPLY
#undef VELA_LN
#undef VELA_POOL
#undef VELA_MV
#define VELA_OPTIM_ROW(name) mode_row(f, "OPTIM", #name, uint32_t(vela::Optim::name), "vela::Optim (optim.comp's KIND)");
    VELA_OPTIMS(VELA_OPTIM_ROW)
#undef VELA_OPTIM_ROW
    std::fprintf(f, "#endif\n");
    return std::fclose(f) == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: opgen OUT_OPS.glsl OUT_MODES.glsl\n");
        return 2;
    }
    if (write_modes(argv[2]) != 0) return 1;
    std::FILE* f = std::fopen(argv[1], "w");
    if (!f) {
        std::perror(argv[1]);
        return 1;
    }
    std::fprintf(f,
                 "// Generated from src/core/ops.def by cmake/opgen.cpp at build time: do not edit.\n"
                 "#define VELA_INLINE\n#define VELA_PRECISE precise\n#define as_int floatBitsToInt\n#define as_float intBitsToFloat\n"
                 "#define isnan_f isnan\n#define exp_fast_f exp\n#define sqrt_f sqrt\n#define abs_f abs\n#include \"opmath.h\"\n\n");
    std::fprintf(f, "const uint UNARY_COUNT = %du, ACT_COUNT = %du;\n", int(Unary::count_), int(Act::count_));
#define VELA_ACT(name, fx, d, from, what)                                                                      \
    std::fprintf(f, "const uint UNARY_%s = %du, UNARY_%s_PRIME = %du, ACT_%s = %du;\n", #name, int(Unary::name), \
                 #name, int(Unary::name##_prime), #name, int(Act::name));
#define VELA_FN(name, params, fx, what) std::fprintf(f, "const uint UNARY_%s = %du;\n", #name, int(Unary::name));
#include "core/ops.def"
#undef VELA_ACT
#undef VELA_FN
    std::fprintf(f, "const uint ACT_IDENTITY = %du;\n\n", int(Act::identity));
    {
        using vela::vk::Level1;
        namespace step = vela::vk::step;
        std::fprintf(f, "// vela::vk::Level1 and the step codes of shaders/batch.comp (src/vulkan/kernel.hpp).\n");
        std::fprintf(f, "const uint L1_FILL = %uu, L1_SCAL = %uu, L1_COPY = %uu, L1_SWAP = %uu, L1_AXPBY = %uu;\n",
                     unsigned(Level1::fill), unsigned(Level1::scal), unsigned(Level1::copy), unsigned(Level1::swap),
                     unsigned(Level1::axpby));
        static_assert(int(Level1::count_) == 5, "a new level-1 kernel needs its L1_ constant here");
        using vela::Binary;
#define VELA_BIN(name, fx, what) std::fprintf(f, "const uint BINARY_%s = %du;\n", #name, int(Binary::name));
#include "core/binary.def"
#undef VELA_BIN
        std::fprintf(f, "const uint STEP_FAMILY_SHIFT = %uu, STEP_FAMILY_MASK = %uu, STEP_OP_MASK = %uu;\n",
                     step::family_shift, step::family_mask, step::op_mask);
        std::fprintf(f,
                     "const uint STEP_LEVEL1 = %uu, STEP_UNARY = %uu, STEP_BINARY = %uu, STEP_BIAS = %uu, "
                     "STEP_BACKWARD = %uu;\n",
                     step::level1 >> step::family_shift, step::unary >> step::family_shift,
                     step::binary >> step::family_shift, step::bias >> step::family_shift,
                     step::backward >> step::family_shift);
        std::fprintf(f, "const uint STEP_VEC4 = %uu, STEP_SYNC = %uu;\n\n", step::vec4, step::sync);
    }

    std::fprintf(f, "// y = f(x) for vela::Unary op; q holds the parameters p0..p3.\n"
                    "float unary_f(uint op, float x, vec4 q) {\n"
                    "    float p0 = q.x, p1 = q.y, p2 = q.z, p3 = q.w;\n    switch (op) {\n");
#define VELA_ACT(name, fx, d, from, what)                                                    \
    std::fprintf(f, "    case %du: return %s;  // %s\n", int(Unary::name), #fx, #name);          \
    std::fprintf(f, "    case %du: return %s;  // %s_prime, from %s\n", int(Unary::name##_prime), #d, #name, #from);
#define VELA_FN(name, params, fx, what) \
    std::fprintf(f, "    case %du: return %s;  // %s\n", int(Unary::name), #fx, #name);
#include "core/ops.def"
#undef VELA_ACT
#undef VELA_FN
    std::fprintf(f, "    }\n    return uintBitsToFloat(0x7fc00000u);\n}\n\n");

    std::fprintf(f, "// c = f(a, b) for vela::Binary op (core/binary.def).\n"
                    "float binary_s(uint op, float x, float y) {\n    switch (op) {\n");
#define VELA_BIN(name, fx, what) \
    std::fprintf(f, "    case %du: return %s;  // %s\n", int(vela::Binary::name), #fx, #name);
#include "core/binary.def"
#undef VELA_BIN
    std::fprintf(f, "    }\n    return uintBitsToFloat(0x7fc00000u);\n}\n\n");

    std::fprintf(f, "// a = act(x) for vela::Act act (dense's epilogue).\n"
                    "float act_f(uint act, float x) {\n    switch (act) {\n    case %du: return x;  // identity\n",
                 int(Act::identity));
#define VELA_ACT(name, fx, d, from, what) std::fprintf(f, "    case %du: return %s;  // %s\n", int(Act::name), #fx, #name);
#define VELA_FN(name, params, fx, what)
#include "core/ops.def"
#undef VELA_ACT
#undef VELA_FN
    std::fprintf(f, "    }\n    return uintBitsToFloat(0x7fc00000u);\n}\n\n");

    std::fprintf(f, "// act′ for vela::Act act, from the activation a or the pre-activation z as the table says.\n"
                    "float act_prime_f(uint act, float x) {\n    switch (act) {\n    case %du: return 1.0f;  // identity\n",
                 int(Act::identity));
#define VELA_ACT(name, fx, d, from, what) \
    std::fprintf(f, "    case %du: return %s;  // %s, from %s\n", int(Act::name), #d, #name, #from);
#define VELA_FN(name, params, fx, what)
#include "core/ops.def"
#undef VELA_ACT
#undef VELA_FN
    std::fprintf(f, "    }\n    return uintBitsToFloat(0x7fc00000u);\n}\n");
    return std::fclose(f) == 0 ? 0 : 1;
}

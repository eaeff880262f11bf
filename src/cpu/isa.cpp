// Which path of the own loops the process runs (isa.hpp).
#include "cpu/isa.hpp"

#include <cstdlib>
#include <cstring>

namespace vela::cpu {

namespace {

bool has_v4() {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

bool has_v3() {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2");
}

}  // namespace

bool isa_supported(Isa isa) {
    static const bool v3 = has_v3(), v4 = has_v4();
    return isa == Isa::base || (isa == Isa::v3 && v3) || (isa == Isa::v4 && v4);
}

namespace {
struct Names {
    const char *word, *arch, *describe;
};
constexpr Names kNames[kIsaCount] = {{"base", "x86-64", "x86-64 (SSE2, 4 lanes)"},
                                     {"v3", "x86-64-v3", "x86-64-v3 (AVX2 + FMA, 8 lanes)"},
                                     {"v4", "x86-64-v4", "x86-64-v4 (AVX-512 + FMA, 16 lanes)"}};
}  // namespace

const char* isa_name(Isa isa) { return kNames[int(isa)].word; }
const char* isa_arch(Isa isa) { return kNames[int(isa)].arch; }
std::string isa_describe(Isa isa) { return kNames[int(isa)].describe; }

IsaChoice choose_isa(const char* env, bool v3_ok, bool v4_ok) {
    IsaChoice c;
    c.isa = v4_ok ? Isa::v4 : v3_ok ? Isa::v3 : Isa::base;
    c.how = "detected";
    if (!env || !*env) return c;
    const std::string have = std::string(v4_ok ? "v4, " : "") + (v3_ok ? "v3, " : "") + "base";
    int k = 0;
    while (k < kIsaCount && std::strcmp(env, isa_name(Isa(k))) != 0) k++;
    if (k == kIsaCount) {
        c.error = "VELA_CPU_ISA is '" + std::string(env) + "' but must be base, v3 or v4 (this CPU runs " + have +
                  "; unset it to take the best)";
        return c;
    }
    const Isa want = Isa(k);
    if ((want == Isa::v4 && !v4_ok) || (want == Isa::v3 && !v3_ok)) {
        c.error = "VELA_CPU_ISA=" + std::string(env) + " asks for the " + isa_describe(want) +
                  " loops but this CPU lacks " + (want == Isa::v4 ? "AVX-512 (F, DQ, BW, VL)" : "AVX2, FMA or BMI2") +
                  " (it runs " + have + ")";
        return c;
    }
    c.isa = want;
    c.how = "VELA_CPU_ISA=" + std::string(env);
    return c;
}

const IsaChoice& isa_choice() {
    static const IsaChoice c = choose_isa(std::getenv("VELA_CPU_ISA"), isa_supported(Isa::v3), isa_supported(Isa::v4));
    return c;
}

}  // namespace vela::cpu

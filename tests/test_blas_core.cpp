// The choice of OpenBLAS's kernels (cpu/blas_core.hpp): the decision on
// synthetic feature sets, the switch itself on this machine, the respect of a
// set OPENBLAS_CORETYPE and of VELA_BLAS_CORE=off, and the self-check catching
// a wrong product.
#include <catch2/catch.hpp>
#include <cblas.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <strings.h>

#include "cpu/blas_core.hpp"

using namespace vela::cpu;

namespace {

CpuFeatures features(bool amd, bool avx, bool avx2, bool avx512, bool bf16) {
    CpuFeatures f;
    f.amd = amd, f.avx = avx, f.fma = avx2, f.avx2 = avx2, f.avx512 = avx512, f.avx512_bf16 = bf16;
    return f;
}

bool same(const std::string& a, const char* b) { return strcasecmp(a.c_str(), b) == 0; }

// Restores the environment variable and the core on scope exit.
struct Restore {
    std::string core = openblas_get_corename();
    const char* env_names[2] = {"OPENBLAS_CORETYPE", "VELA_BLAS_CORE"};
    std::string saved[2];
    bool had[2];
    Restore() {
        for (int i = 0; i < 2; ++i)
            if ((had[i] = std::getenv(env_names[i]) != nullptr)) saved[i] = std::getenv(env_names[i]);
    }
    ~Restore() {
        for (int i = 0; i < 2; ++i) had[i] ? setenv(env_names[i], saved[i].c_str(), 1) : unsetenv(env_names[i]);
        switch_blas_core(core);
    }
};

// An sgemm that leaves out the last term of every sum (a broken kernel's edge case).
void short_gemm(CBLAS_ORDER o, CBLAS_TRANSPOSE ta, CBLAS_TRANSPOSE tb, blasint m, blasint n, blasint k, float alpha,
                const float* a, blasint lda, const float* b, blasint ldb, float beta, float* c, blasint ldc) {
    cblas_sgemm(o, ta, tb, m, n, k - 1, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace

TEST_CASE("better_blas_core: the widest kernels the features allow, only when the pick underuses them",
          "[blas_core]") {
    const CpuFeatures emerald = features(false, true, true, true, true), skx = features(false, true, true, true, false),
                      intel2 = features(false, true, true, false, false), zen = features(true, true, true, false, false),
                      avx = features(false, true, false, false, false), sse = features(false, false, false, false, false);
    CHECK(better_blas_core(emerald, "Prescott") == "Cooperlake");
    CHECK(better_blas_core(skx, "Prescott") == "SkylakeX");
    CHECK(better_blas_core(skx, "Haswell") == "SkylakeX");
    CHECK(better_blas_core(zen, "Prescott") == "Zen");
    CHECK(better_blas_core(intel2, "Prescott") == "Haswell");
    CHECK(better_blas_core(intel2, "Sandybridge") == "Haswell");
    CHECK(better_blas_core(avx, "Nehalem") == "Sandybridge");
    // Already at the features' width, or above it: kept.
    CHECK(better_blas_core(zen, "Zen") == "");
    CHECK(better_blas_core(zen, "Haswell") == "");
    CHECK(better_blas_core(skx, "SkylakeX") == "");
    CHECK(better_blas_core(emerald, "Cooperlake") == "");
    CHECK(better_blas_core(emerald, "SapphireRapids") == "");
    CHECK(better_blas_core(sse, "Prescott") == "");
    // A name this table does not know (a newer OpenBLAS's core): left alone.
    CHECK(better_blas_core(emerald, "GraniteRapids") == "");
}

TEST_CASE("switch_blas_core re-selects OpenBLAS's kernels; each passes the self-check", "[blas_core]") {
    Restore restore;
    const CpuFeatures f = cpu_features();
    INFO("this processor: " << describe(f) << ", OpenBLAS at " << restore.core);
    std::string why;
    REQUIRE(switch_blas_core("Prescott"));
    CHECK(same(openblas_get_corename(), "Prescott"));
    CHECK(blas_self_check(&why));
    CHECK(why.empty());
    if (f.avx2 && f.fma) {
        const char* wide = f.amd ? "Zen" : "Haswell";
        REQUIRE(switch_blas_core(wide));
        CHECK(same(openblas_get_corename(), wide));
        CHECK(blas_self_check(&why));
        INFO(why);
    }
    // The variable was only lent to OpenBLAS.
    CHECK((std::getenv("OPENBLAS_CORETYPE") != nullptr) == restore.had[0]);
}

TEST_CASE("decide_blas_core: switches an underusing pick, respects OPENBLAS_CORETYPE and VELA_BLAS_CORE=off",
          "[blas_core]") {
    Restore restore;
    const CpuFeatures f = cpu_features();
    REQUIRE(switch_blas_core("Prescott"));
    const std::string want = better_blas_core(f, "Prescott");

    SECTION("unset: the better core, after the self-check") {
        unsetenv("OPENBLAS_CORETYPE");
        unsetenv("VELA_BLAS_CORE");
        auto t0 = std::chrono::steady_clock::now();
        BlasCore r = decide_blas_core();
        double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        std::printf("  decide_blas_core: %s -> %s in %.2f ms (switch and self-check)\n", r.picked.c_str(),
                    r.core.c_str(), ms);
        CHECK(same(r.picked, "Prescott"));
        if (!want.empty()) {
            CHECK(same(r.core, want.c_str()));
            CHECK(same(openblas_get_corename(), want.c_str()));
            CHECK(r.how.find("chosen by vela") != std::string::npos);
        } else {
            CHECK(same(r.core, "Prescott"));
        }
        CHECK(std::getenv("OPENBLAS_CORETYPE") == nullptr);
    }
    SECTION("OPENBLAS_CORETYPE set: respected") {
        setenv("OPENBLAS_CORETYPE", "Prescott", 1);
        unsetenv("VELA_BLAS_CORE");
        BlasCore r = decide_blas_core();
        CHECK(same(r.core, "Prescott"));
        CHECK(same(openblas_get_corename(), "Prescott"));
        CHECK(r.how.find("respected") != std::string::npos);
        // Said, not acted on, when the processor could use wider kernels (every x86-64 with AVX can).
        const bool hint = r.how.find("unset OPENBLAS_CORETYPE to let vela choose") != std::string::npos;
        CHECK(hint == !want.empty());
        if (hint) CHECK(r.how.find(want + "'s kernels would use") != std::string::npos);
    }
    SECTION("VELA_BLAS_CORE=off: OpenBLAS's pick") {
        unsetenv("OPENBLAS_CORETYPE");
        setenv("VELA_BLAS_CORE", "off", 1);
        BlasCore r = decide_blas_core();
        CHECK(same(r.core, "Prescott"));
        CHECK(same(openblas_get_corename(), "Prescott"));
        CHECK(r.how.find("VELA_BLAS_CORE=off") != std::string::npos);
    }
}

TEST_CASE("blas_self_check catches a product that is wrong", "[blas_core]") {
    std::string why;
    CHECK_FALSE(blas_self_check(&why, &short_gemm));
    CHECK(why.find("sgemm") != std::string::npos);
    CHECK(why.find("float64 says") != std::string::npos);
}

// User kernels below the Lua layer: libshaderc compilation and its caches
// (src/userk/compiler.cpp) and Device::run_user on every usable device
// with a shader written here by hand against the push layout of
// core/user_kernel.hpp, checked against float64 on the host.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/ops.hpp"
#include "core/map_expr.hpp"
#include "core/registry.hpp"
#include "core/user_kernel.hpp"
#include "cpu/cpu_device.hpp"
#include "every_device.hpp"
#include "userk/compiler.hpp"
#include "userk/glsl.hpp"
#include "userk/host_runner.hpp"

using namespace vela;

namespace {

using vela::test::usable_devices;

// y ← a·x + b·x² over n elements; the general (non-elementwise) layout: views carry rows and cols.
const char* kAxpx2 = R"(#version 450
#extension GL_GOOGLE_cpp_style_line_directive : require
#include "common.glsl"
layout(constant_id = 0) const uint WG = 64;
layout(local_size_x_id = 0) in;
layout(push_constant) uniform Push { View x; View y; uint n; float a; float b; } p;
void main() {
    uint k = global_index(WG);
    if (k >= p.n) return;
    uint i = k % p.x.rows, j = k / p.x.rows;
    float v = load_f32(p.x.addr, view_index2(p.x, i, j));
#line 1 "user"
    float r = p.a * v + p.b * v * v;
#line 1 "vela-end"
    store_f32(p.y.addr, view_index2(p.y, i, j), r);
}
)";

uint32_t bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

}  // namespace

TEST_CASE("user kernels: libshaderc compiles, then the memory cache answers", "[user_kernels]") {
    std::string src = std::string(kAxpx2) + "// " + std::to_string(std::rand()) + "\n";  // a fresh source
    userk::CompiledKernel a = userk::compile_user("axpx2", src, "    float r = p.a * v + p.b * v * v;");
    REQUIRE(a.spirv);
    REQUIRE(a.spirv->size() > 5);
    CHECK((*a.spirv)[0] == 0x07230203u);  // the SPIR-V magic number
    userk::CompiledKernel b = userk::compile_user("axpx2", src, "");
    CHECK(b.from == userk::CompiledKernel::memory);
    CHECK(b.spirv == a.spirv);
    CHECK(std::strcmp(a.module, b.module) == 0);
    CHECK(std::string(a.module).rfind("user:", 0) == 0);
}

TEST_CASE("user kernels: a compile error names the kernel and the user's line", "[user_kernels]") {
    std::string src = kAxpx2;
    std::string user = "    float r = p.a * v +\n    frob(v);";
    size_t at = src.find("    float r = p.a * v + p.b * v * v;");
    src.replace(at, std::strlen("    float r = p.a * v + p.b * v * v;"), user);
    try {
        userk::compile_user("frobber", src, user);
        FAIL("no error");
    } catch (const Error& e) {
        std::string m = e.what();
        CHECK(m.find("frobber: GLSL compile error") == 0);
        CHECK(m.find("line 2:") != std::string::npos);
        CHECK(m.find("2 |     frob(v);") != std::string::npos);
        CHECK(m.find("global_index") == std::string::npos);  // nothing of the preamble
    }
}

TEST_CASE("user kernels: run_user on every device against float64", "[user_kernels]") {
    userk::CompiledKernel c = userk::compile_user("axpx2", kAxpx2, "");
    UserKernel k;
    k.name = intern("axpx2");
    k.module = c.module;
    k.spirv = c.spirv;
    k.elementwise = false;
    for (Device* d : usable_devices()) {
        INFO(d->name());
        const int64_t R = 37, C = 23;
        std::vector<float> host(size_t(R * C));
        for (size_t i = 0; i < host.size(); ++i) host[i] = float(std::sin(double(i)) * 3);
        Matrix x = from_host(*d, R, C, host.data());
        Matrix big = zeros(*d, C + 4, R + 5);
        Matrix y = view(big, 2, 3, C, R).t();  // a transposed, strided output view, R×C
        UserCall call;
        call.kernel = &k;
        call.mats = {x, y};
        call.written = {false, true};
        call.scalars = {bits(1.5f), bits(-0.25f)};
        call.invocations = uint64_t(R * C);
        try {
            d->run_user(call);
        } catch (const Error& e) {
            // a machine with a hardware GPU may have no software driver for the cpu's runner
            if (d->name() != "cpu" || std::string(e.what()).find("none is installed") == std::string::npos) throw;
            WARN("skipped on the cpu: " << e.what());
            continue;
        }
        std::vector<float> got = to_host(y);
        for (int64_t j = 0; j < C; ++j)
            for (int64_t i = 0; i < R; ++i) {
                double v = host[size_t(i + j * R)];
                double want = 1.5 * v - 0.25 * v * v;
                REQUIRE(std::fabs(got[size_t(i + j * R)] - want) <= 1e-5 * (1 + std::fabs(want)));
            }
        // the rest of the big matrix is untouched
        std::vector<float> all = to_host(big);
        CHECK(all[0] == 0.0f);
        CHECK(all.back() == 0.0f);
    }
}

// The cpu runs general kernels with the runner it received at registration (src/backends.cpp):
// the cpu code calls no Vulkan code. Without one, the clear error; with another, that one runs.
namespace runner_probe {
int calls = 0;
void count(const UserCall& call, void* const* host, const size_t* bytes) {
    ++calls;
    REQUIRE(call.mats.size() == 1);
    REQUIRE(bytes[0] >= 4 * sizeof(float));
    static_cast<float*>(host[0])[call.mats[0].offset] = 42.0f;  // proves it got the matrix's own memory
}
}  // namespace runner_probe

TEST_CASE("user kernels: the cpu's runner is the one given at registration", "[user_kernels]") {
    UserKernel k;
    k.name = intern("probe");
    k.module = intern("user:probe");
    k.elementwise = false;  // no native program: the runner's work
    Device& cpu = get_device("cpu");
    Matrix big = zeros(cpu, 4, 4);
    Matrix x = view(big, 2, 1, 2, 2);
    UserCall call;
    call.kernel = &k;
    call.mats = {x};
    call.written = {true};
    call.invocations = 4;
    struct Restore {  // the test binary registered userk::run_on_host (tests/main.cpp)
        ~Restore() { cpu::set_host_runner(userk::run_on_host); }
    } restore;

    cpu::set_host_runner(nullptr);
    try {
        cpu.run_user(call);
        FAIL("no error without a runner");
    } catch (const Error& e) {
        std::string m = e.what();
        CHECK(m.find("cpu: probe: kernels written at the prompt run on the cpu through a software Vulkan driver") == 0);
        CHECK(m.find("none was given to the cpu device at registration") != std::string::npos);
        CHECK(m.find(":to(\"vulkan:0\")") != std::string::npos);
    }
    CHECK(to_host(big) == std::vector<float>(16, 0.0f));

    cpu::set_host_runner(runner_probe::count);
    cpu.run_user(call);
    CHECK(runner_probe::calls == 1);
    std::vector<float> got = to_host(big);
    REQUIRE(x.offset > 0);  // a view inside big: the runner saw the buffer's start and the view's offset
    CHECK(got[size_t(x.offset)] == 42.0f);
    got[size_t(x.offset)] = 0;
    CHECK(got == std::vector<float>(16, 0.0f));
}

TEST_CASE("user kernels: the native subset of map expressions (core/map_expr.cpp)", "[user_kernels]") {
    const std::vector<std::string> x = {"x"}, xy = {"x", "y"}, none = {}, a = {"a"};
    // inside: GLSL's literals, operators, ?:, float(), the op table's and GLSL's scalar functions
    for (const char* e : {"tanh(x)", "x", "x > 0.0 ? x : a * (exp(x) - 1.0)", "x * (1/2)", "010 + 0x1F * x",
                          "1e-3 * x + .5", "max(x, 0) + clamp(x, -1, 1)", "float(x > 0.0) // comment", "/* c */ -x",
                          "isnan(x) || x != x ? 0.0 : x", "!(x < 1.0) ^^ true ? 1.0 : 2", "mix(x, 1.0, 0.5)"})
        CHECK(parse_map(e, x, a) != nullptr);
    CHECK(parse_map("x * y", xy, none)->nodes.size() == 3);
    // outside: the driver runs them
    for (const char* e : {"vec2(x, 1.0).x", "x.x", "abs(-2) * x", "x * (1/0)", "x * (7 % -2)", "x << 1", "x, x",
                          "int(x)", "x * 1u", "1.0lf * x", "foo(x)", "exp_f", "x = 1.0", "x++", "z"})
        CHECK(parse_map(e, x, a) == nullptr);
    // the result is always the last node, computed (x alone: x + (−0))
    auto p = parse_map("x", x, none);
    REQUIRE(p);
    CHECK(p->nodes.back().op == MapProgram::add);
}

TEST_CASE("user kernels: every loop condition of a kernel body checks the stop word, lines kept", "[user_kernels]") {
    using userk::guard_loops;
    // written out by hand: for, while, do-while, an empty condition, nesting
    CHECK(guard_loops("for (uint i = 0u; i < n; ++i) s += f(i);") ==
          "for (uint i = 0u;vela_go() && ( i < n); ++i) s += f(i);");
    CHECK(guard_loops("while(a[i] > 0.0)\n  ++i;") == "while(vela_go() && (a[i] > 0.0))\n  ++i;");
    CHECK(guard_loops("do { x *= 2.0; } while (x < 1e5);") == "do { x *= 2.0; } while (vela_go() && (x < 1e5));");
    CHECK(guard_loops("for (;;) break;") == "for (;vela_go();) break;");
    CHECK(guard_loops("for (int i = 0; i < 3; ++i)\n for (int j = min(i, 2); j\n < 4; ++j) {}") ==
          "for (int i = 0;vela_go() && ( i < 3); ++i)\n for (int j = min(i, 2);vela_go() && ( j\n < 4); ++j) {}");
    // untouched: comments, names that contain the words, a condition that declares a variable
    const char* same[] = {"// for (;;) {}\nx = 1.0;", "/* while (true) */ y = 2.0;", "float fore = 1.0, whiled = 2.0;",
                          "while (bool go = f()) {}", "for (int i = 0; i < 2"};
    for (const char* s : same) CHECK(guard_loops(s) == s);
    // the line count never changes (errors quote the user's lines)
    std::string body = "float a = 0.0;\nfor (uint i = 0u;\n i < 4u;\n ++i)\n  a += 1.0;\nwhile (a > 0.0) a -= 1.0;\n";
    std::string out = guard_loops(body);
    CHECK(std::count(out.begin(), out.end(), '\n') == std::count(body.begin(), body.end(), '\n'));
    CHECK(out.find("vela_go() && (a > 0.0)") != std::string::npos);
}

// The drivers a test run claims to cover are the drivers it sees.
// scripts/test.sh names them in VELA_TEST_DRIVERS (comma-separated
// substrings of a driver or device name, in vulkan:N order), one pass per
// set of drivers; a driver that failed to load would otherwise shrink the run
// to fewer devices without a word. Also: no built-in shader needs a feature
// vela does not ask for (64-bit integers, 8- or 16-bit storage, float64).
#include <catch2/catch.hpp>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "core/registry.hpp"

namespace vela::vk {
const uint32_t* shader_spirv(const char* name, size_t* count);
}

using namespace vela;

namespace {

std::string lower(std::string s) {
    for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> out;
    size_t at = 0;
    while (at <= s.size()) {
        size_t comma = s.find(',', at);
        if (comma == std::string::npos) comma = s.size();
        if (comma > at) out.push_back(lower(s.substr(at, comma - at)));
        at = comma + 1;
    }
    return out;
}

}  // namespace

TEST_CASE("vulkan drivers: every driver the run names is listed, usable, in vulkan:N order", "[vulkan]") {
    const char* e = std::getenv("VELA_TEST_DRIVERS");
    if (!e || !*e) {
        WARN("VELA_TEST_DRIVERS is not set (scripts/test.sh sets it): nothing to check");
        return;
    }
    std::vector<std::string> want = split(e);
    std::vector<DeviceInfo> vk;
    for (const DeviceInfo& d : list_devices())
        if (d.id.rfind("vulkan:", 0) == 0) vk.push_back(d);
    REQUIRE(vk.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) {
        INFO(vk[i].id << ": " << vk[i].name << " (" << vk[i].driver << "), expected " << want[i]);
        CHECK(vk[i].id == "vulkan:" + std::to_string(i));
        CHECK((lower(vk[i].name).find(want[i]) != std::string::npos ||
               lower(vk[i].driver).find(want[i]) != std::string::npos));
        CHECK(vk[i].usable);
        // Selecting the device by a part of its name gives the same device.
        CHECK(get_device("vulkan:" + want[i]).name() == vk[i].id);
    }
}

TEST_CASE("vulkan drivers: no shader declares a capability vela does not enable", "[vulkan]") {
    // SPIR-V capability numbers: Float64 10, Int64 11, Int16 22, Int8 39,
    // StorageBuffer16BitAccess 4433, StorageBuffer8BitAccess 4448, and their uniform forms.
    const uint32_t banned[] = {10, 11, 22, 39, 4433, 4434, 4448, 4449};
    std::vector<std::string> shaders;  // every shaders/*.comp of the source tree
    for (const auto& f : std::filesystem::directory_iterator(std::string(VELA_SOURCE_DIR) + "/shaders"))
        if (f.path().extension() == ".comp") shaders.push_back(f.path().stem().string());
    REQUIRE(shaders.size() > 10);
    // Every shader, and the 64-bit-address variant of a portable one
    // (VELA_INT64_SHADERS in CMakeLists.txt) where built. A *_i64 shader runs
    // only on devices with shaderInt64 (Caps::int64): it adds Int64 and
    // nothing else banned; every other shader declares none of them.
    std::vector<std::string> modules;
    for (const std::string& name : shaders) {
        modules.push_back(name);
        size_t n = 0;
        if (!name.ends_with("_i64") && vk::shader_spirv((name + "_i64").c_str(), &n)) modules.push_back(name + "_i64");
    }
    size_t variants = 0;
    for (const std::string& name : modules) {
        INFO("shader module " << name);
        const bool i64 = name.ends_with("_i64");
        variants += i64;
        size_t n = 0;
        const uint32_t* w = vk::shader_spirv(name.c_str(), &n);
        REQUIRE(w);
        REQUIRE(n > 5);
        bool int64 = false;
        for (size_t i = 5; i < n;) {
            uint32_t op = w[i] & 0xffff, len = w[i] >> 16;
            REQUIRE(len > 0);
            if (op == 17) {  // OpCapability
                int64 |= w[i + 1] == 11;
                for (uint32_t b : banned)
                    if (!(i64 && b == 11)) CHECK(w[i + 1] != b);
            }
            i += len;
        }
        if (i64) CHECK(int64);
    }
    CHECK(variants >= 10);  // mm_regblock and the elementwise shaders at least
}

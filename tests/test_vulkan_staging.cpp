// The staging transfer path (discrete GPUs) exercised on lavapipe: a second
// device object on vulkan:0 made with force_staging, so every upload and
// download goes through host-visible staging memory and the copy shader.
// Also checks that the pipeline cache is written to $XDG_CACHE_HOME/vela.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "core/ops.hpp"
#include "core/registry.hpp"
#include "vulkan/device.hpp"

using namespace vela;

TEST_CASE("vulkan: staging transfers and the on-disk pipeline cache", "[vulkan]") {
    uint64_t messages = vk::validation_message_count();
    auto& phys = vk::Context::get().physical();
    REQUIRE(!phys.empty());
    namespace fs = std::filesystem;
    fs::path dir = fs::temp_directory_path() / ("vela-cache-test-" + std::to_string(getpid()));
    fs::remove_all(dir);
    const char* old = std::getenv("XDG_CACHE_HOME");
    std::string saved = old ? old : "";
    setenv("XDG_CACHE_HOME", dir.c_str(), 1);
    {
        vk::VulkanDevice dev(phys[0], "vulkan:0 (staging)", true);
        CHECK(!dev.mapped());
        std::vector<float> v(300);
        for (size_t i = 0; i < v.size(); ++i) v[i] = float(i) * 0.5f - 7;
        Matrix a = from_host(dev, 20, 15, v.data());
        CHECK(to_host(a) == v);
        // Strided, transposed views both ways.
        Matrix t = view(a, 1, 2, 4, 3).t();  // 3×4
        std::vector<float> tv = to_host(t);
        for (int64_t i = 0; i < 3; ++i)
            for (int64_t j = 0; j < 4; ++j) REQUIRE(tv[size_t(i + j * 3)] == v[size_t((1 + j) + (2 + i) * 20)]);
        std::vector<float> w = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
        dev.upload(t, w.data());
        for (int64_t i = 0; i < 3; ++i)
            for (int64_t j = 0; j < 4; ++j) REQUIRE(get(a, 1 + j, 2 + i) == w[size_t(i + j * 3)]);
        // uint8, a kernel and a reduction on the staged device.
        std::vector<uint8_t> px = {0, 1, 2, 250, 251, 255, 7};
        Matrix u = from_host_u8(dev, 7, 1, px.data());
        Matrix uf = zeros(dev, 7, 1);
        copy(u, uf);
        CHECK(sum(uf) == 766.0);
        std::vector<float> pf = to_host(u);
        for (size_t i = 0; i < px.size(); ++i) CHECK(pf[i] == float(px[i]));
    }
    if (old) setenv("XDG_CACHE_HOME", saved.c_str(), 1);
    else unsetenv("XDG_CACHE_HOME");
    bool cached = false;
    for (auto& e : fs::directory_iterator(dir / "vela")) cached |= e.path().extension() == ".bin" && fs::file_size(e) > 0;
    CHECK(cached);
    fs::remove_all(dir);
    CHECK(vk::validation_message_count() == messages);
}

// Ctrl-C during a host wait drops the work still queued on a Vulkan device
// that has VK_EXT_conditional_rendering: the wait ends at once, the error says
// how many kernels were dropped, the next read does not wait for them, work
// finished before stays, and later work runs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <string>

#include "core/error.hpp"
#include "core/ops.hpp"
#include "core/registry.hpp"
#include "vulkan/backend.hpp"
#include "vulkan/device.hpp"

using namespace vela;

TEST_CASE("vulkan: Ctrl-C in a wait drops the queued kernels", "[vulkan][drop]") {
    uint64_t messages = vk::validation_message_count();
    Device& d = get_device("vulkan:0");
    auto& vd = static_cast<vk::VulkanDevice&>(d);
    Matrix done = zeros(d, 4, 1);
    fill(done, 5.0f);
    Matrix a = zeros(d, 512, 512), c = zeros(d, 512, 512);
    fill(a, 0.5f);
    d.sync();
    // Seconds of work on any device: at least 200 products (seconds on a software
    // device), more where half a second of timed products shows a fast one (an
    // H100 ran 200 in milliseconds, before the Ctrl-C came). A device without
    // conditional rendering cannot drop it and runs it all (SwiftShader:
    // minutes), so it gets a little.
    int products = 4;
    if (vd.physical().conditional) {
        int timed = 0;
        auto c0 = std::chrono::steady_clock::now();
        while (std::chrono::steady_clock::now() - c0 < std::chrono::milliseconds(500)) {
            mm(1.0f, a, a, 0.0f, c);
            d.sync();
            ++timed;
        }
        products = std::max(200, 8 * timed);  // ≥ 4 s of products, each timed with its own wait
    }
    for (int i = 0; i < products; ++i) mm(1.0f, a, a, 0.0f, c);
    d.flush();
    interrupt_flag() = true;  // as the shell's SIGINT handler does
    std::string message;
    auto t0 = std::chrono::steady_clock::now();
    try {
        d.sync();
    } catch (const Interrupted& e) {
        message = e.what();
    }
    double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(interrupt_flag() == false);
    if (!vd.physical().conditional) {
        WARN(d.name() << " lacks VK_EXT_conditional_rendering: the wait stops, the work still runs");
        d.sync();
        return;
    }
    INFO(message);
    REQUIRE(message.find("dropped up to") != std::string::npos);
    CHECK(message.find("undefined values") != std::string::npos);
    CHECK(waited < 1.0);
    t0 = std::chrono::steady_clock::now();
    (void)get(c, 0, 0);  // undefined, but it does not wait for 200 products
    CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 1.0);
    CHECK(get(done, 3, 0) == 5.0f);  // finished before the Ctrl-C: kept
    mm(1.0f, a, a, 0.0f, c);         // the predicate is back on: new work runs
    CHECK(get(c, 511, 511) == 128.0f);
    CHECK(vk::validation_message_count() == messages);
}

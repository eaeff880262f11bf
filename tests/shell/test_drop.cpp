// Ctrl-C during a host wait drops the work still queued on the device: the
// next read returns at once instead of after every queued kernel.
#include <catch2/catch.hpp>

#include <chrono>

#include "process.hpp"

using vela_test::Pty;

TEST_CASE("prompt: Ctrl-C in a wait drops the queued kernels, the next read is prompt", "[shell][pty][drop]") {
    Pty pty({}, {{"VELA_SAY_WAITS", "1"}});  // the stream says when the host blocks
    REQUIRE(pty.expect("> "));
    pty.send("print(pcall(device, 'vulkan:0'))\n");
    REQUIRE(pty.expect("\r\n"));
    if (!pty.expect("true", 10)) {
        WARN("no vulkan:0: nothing is queued on the cpu");
        return;
    }
    REQUIRE(pty.expect("> "));
    // n products queued without a wait: the stream's ring holds Stream::kRing
    // command buffers of kBatch kernels (1,024), and recording past it waits
    // for the oldest. An H200 queued 24,000 products (a count sized by a
    // timed loop): the host blocked in mm as the ring filled, those waits
    // ended before the Ctrl-C came, and the key stopped the Lua loop instead
    // of a wait. So the products are made long, not many: their size doubles
    // from 512 until 8 take 40 ms, and 300 take 1.5 s or more (a software
    // device splits a k over 1,024 into dispatches, but stops at 512).
    pty.send("s = 256 repeat s = 2 * s a = rand(s, s, 1) c = zeros(s, s) mm(a, a, c) sync() t0 = clock() "
             "for i = 1, 8 do mm(a, a, c) end sync() dt = clock() - t0 until dt >= 0.04 or s >= 8192 "
             "ok = c:get(1, 1) n = 300\n");
    REQUIRE(pty.expect("\r\n> ", 60));
    // n queued products: seconds at least. Ctrl-C
    // goes in once the host blocks in the read's wait (VELA_SAY_WAITS prints
    // that line as it blocks), so it lands in the wait, however slow the build.
    pty.send("for i = 1, n do mm(a, a, c) end v = c:get(1, 1)\n");
    REQUIRE(pty.expect("vela: the host waits for the device", 60));
    pty.interrupt();
    // Generous deadlines: on a loaded 2-core machine the kernel that is
    // running when Ctrl-C lands still has to finish. The point of the test
    // is the next read, timed below.
    REQUIRE(pty.expect("interrupted", 60));
    REQUIRE(pty.expect("> ", 30));
    if (pty.output().find("cannot drop them") != std::string::npos) {
        // No VK_EXT_conditional_rendering (SwiftShader): the wait stops, the queued products still run.
        WARN("vulkan:0 cannot drop queued kernels: " << pty.output().substr(pty.output().rfind("interrupted")));
        return;
    }
    bool dropped = pty.output().find("dropped up to") != std::string::npos;
    INFO(pty.output());
    REQUIRE(dropped);
    CHECK(pty.output().find("undefined values") != std::string::npos);
    auto t0 = std::chrono::steady_clock::now();
    pty.send("print('read', c:get(1, 1) ~= nil)\n");
    CHECK(pty.expect("read\ttrue", 10));
    double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(dt < 1.0);
    // The device still works: a fresh product is right.
    pty.send("x = ones(4, 4) y = zeros(4, 4) mm(x, x, y) print('sum', sum(y))\n");
    CHECK(pty.expect("sum\t64.0", 10));
    CHECK(pty.output().find("vela: validation") == std::string::npos);  // with VELA_VALIDATE=1 (ctest)
}

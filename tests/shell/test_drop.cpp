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
    // n: at least 400 products (seconds to minutes on a software device), more
    // where a second of timed products shows a fast device (an H100 ran 400
    // before the Ctrl-C came).
    pty.send("a = rand(512, 512, 1) c = zeros(512, 512) ok = c:get(1, 1) t0, k = os.time(), 0 "
             "repeat mm(a, a, c) sync() k = k + 1 until os.time() - t0 >= 2 n = math.max(400, 4 * k)\n");
    REQUIRE(pty.expect("\r\n> ", 30));
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

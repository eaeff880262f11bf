// Issue 14, at the prompt through a pseudo-terminal: every report prints
// once, Torch7/PyTorch names give one clear error, and what a new user
// types first works.
#include <catch2/catch.hpp>

#include <string>

#include "session.hpp"

using vela_test::Pty;
using vela_test::Session;

namespace {

size_t count(const std::string& hay, const std::string& needle) {
    size_t n = 0;
    for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + needle.size())) ++n;
    return n;
}

}  // namespace

TEST_CASE("session: data.show and plot print once", "[shell][pty][issue14]") {
    Session s;
    // A 2×2 "image" (rows 0 255, 0 255): one text line, drawn once, no table of strings after it.
    std::string out = s.run("data.show(from{{0}, {255}, {0}, {255}}, 1)");
    CHECK(count(out, "█") == 1);  // one text line: the darker pixel of each column pair
    CHECK(out.find('{', out.find("\r\n")) == std::string::npos);
    CHECK(out.find('"') == std::string::npos);
    out = s.run("plot({3, 2, 1}, {height = 3, title = 'once'})");
    CHECK(count(out, "once") == 2);  // the echoed line and the title
    CHECK(out.find('"') == std::string::npos);
    out = s.run("data.show_weights(nn.linear(4, 2, 'relu', {seed = 1}), 2)");
    CHECK(out.find('"') == std::string::npos);
}

TEST_CASE("session: Torch7 and PyTorch names give one error naming vela's spelling", "[shell][pty][issue14]") {
    Session s;
    struct Case {
        const char *line, *says;
    } cases[] = {
        {"nn.Linear(784, 10)", "nn.Linear: vela spells it nn.linear(inputs, outputs [, activation])"},
        {"nn.Sequential()", "nn.Sequential: vela spells it nn.sequential{layer, ...}"},
        {"nn.ReLU()", "nn.ReLU: activations are an argument of the layer: nn.linear(784, 128, 'relu')"},
        {"nn.CrossEntropyLoss()", "nn.CrossEntropyLoss: vela spells it nn.softmax_xent()"},
        {"torch.zeros(2, 2)", "torch.zeros: vela spells it zeros(rows, cols)"},
        {"torch.Tensor(2, 2)", "torch.Tensor: vela spells it matrix(rows, cols)"},
        {"require 'nn'", "require 'nn': vela's nn is already the global nn"},
        {"optim.SGD(net, 0.1)", "optim.SGD: vela spells it optim.sgd{lr = 0.1, momentum = 0.9}"},
        {"optim.sgd(0.1)", "optim.sgd: takes a table of options, e.g. optim.sgd{lr = 0.1, momentum = 0.9}; got a number"},
    };
    for (const Case& c : cases) {
        INFO(c.line);
        std::string out = s.run(c.line);
        CHECK(count(out, c.says) == 1);
        CHECK(out.find("attempt to") == std::string::npos);
    }
    // The session lives on.
    CHECK(s.run("1 + 1").find("\r\n2") != std::string::npos);
}

TEST_CASE("session: time, bench, who, mem, devices, stats print once", "[shell][pty][issue14]") {
    Session s;
    std::string out = s.run("time(function() end)");
    CHECK(count(out, "s\r\n") == 1);  // "0.31 µs", no second line with the raw number
    CHECK(out.find("e-0") == std::string::npos);
    out = s.run("bench(function() end, {n = 3})");
    CHECK(count(out, "median") == 1);
    CHECK(!s.run("who_m = zeros(2, 3)").empty());
    out = s.run("who()");
    CHECK(count(out, "who_m ") == 1);
    CHECK(count(out, "in what is listed") == 1);
    out = s.run("mem()");
    CHECK(count(out, "cpu ") == 1);
    CHECK(count(out, "reserved") == 1);
    out = s.run("devices()");
    CHECK(count(out, "*  ") == 1);  // one current device (the cpu here; a GPU machine starts on its GPU)
    CHECK(count(out, "device: cpu") + count(out, "devices: cpu") == 1);
    out = s.run("stats()");
    CHECK(count(out, "dispatches") == 1);
}

TEST_CASE("session: who after training step by step lists the net, not its buffers", "[shell][pty][issue14]") {
    Session s;
    CHECK(!s.run("net = nn.sequential{nn.linear(16, 8, 'relu', {seed = 1}), nn.linear(8, 4, nil, {seed = 2})}").empty());
    CHECK(!s.run("opt = optim.sgd{lr = 0.1, momentum = 0.9} lf = nn.softmax_xent()").empty());
    CHECK(!s.run("x = rand(16, 32, 3) y = from{{1, 2, 3, 4, 1, 2, 3, 4}} y = from({(function() local t = {} for i = 1, 32 do t[i] = i % 4 + 1 end return t end)()})").empty());
    for (int i = 0; i < 3; ++i)
        CHECK(!s.run("lf:forward(net:forward(x), y) net:backward(lf:backward()) opt:step(net);").empty());
    CHECK(!s.run("for i = 1, 63 do _G['v' .. i % 2] = x:col(1) end").empty());  // views come and go
    std::string out = s.run("who()");
    CHECK(count(out, "\r\nnet ") == 1);
    CHECK(count(out, "network") == 1);
    CHECK(count(out, "\r\nopt ") == 1);
    CHECK(count(out, "\r\nx ") == 1);
    CHECK(count(out, "\r\n- ") == 0);  // no nameless rows
    CHECK(count(out, "internal matri") == 1);
    size_t lines = count(out, "\r\n");
    CHECK(lines <= 12);  // header, a row per global, the folded line: not 300 rows
    out = s.run("#who{all = true} > 20");
    CHECK(out.find("true") != std::string::npos);
}

TEST_CASE("session: nn.fit returns a history printing as one line; confusion prints once", "[shell][pty][issue14]") {
    Session s;
    CHECK(!s.run("sets = data.mnist() train = data.subset(sets.train, 1, 600) test = data.subset(sets.test, 1, 200)").empty());
    CHECK(!s.run("net = nn.sequential{nn.linear(784, 16, 'relu', {seed = 1}), nn.linear(16, 10, nil, {seed = 2})}").empty());
    std::string out = s.run("nn.fit(net, train, {epochs = 2, batch = 100, every = 2, test = test})", 120);
    CHECK(count(out, "history of 2 epochs") == 1);
    CHECK(out.find("batch_loss = {") == std::string::npos);  // no history table dump
    CHECK(count(out, "epoch 2/2  loss") == 1);
    // On a terminal the bar is erased at the end of each epoch: every \r is followed by an erase to the line's end.
    std::string printed = out.substr(out.find("\r\n"));  // after the echoed command
    CHECK(count(printed, "\r") - count(printed, "\r\n") == count(printed, "\x1b[K"));
    CHECK(count(printed, "ETA") >= 1);  // the bar was drawn
    out = s.run("nn.confusion(net, test)");
    CHECK(count(out, "confusion: rows are the true class") == 1);
    CHECK(count(out, "overall") == 1);
    CHECK(out.find("{") == std::string::npos);
    out = s.run("nn.evaluate(net, test)");
    CHECK(count(out, "\r\n0.") == 1);
}

TEST_CASE("session: printopts, m:size, scalar operators and reductions at the prompt", "[shell][pty][issue14]") {
    Session s;
    std::string out = s.run("ones(7, 2)");
    CHECK(count(out, "\r\n  1  1") == 7);  // a small matrix prints whole
    CHECK(!s.run("printopts{rows = 2, cols = 2}").empty());
    out = s.run("ones(40, 40)");
    CHECK(count(out, "⋱") == 1);
    CHECK(count(out, "\r\n") == 5);  // echo, header, two rows and the ⋮ line
    out = s.run("printopts('default')");
    CHECK(count(out, "threshold = 1000") == 1);
    out = s.run("a = from{{1, 2}, {3, 4}} a:size()");
    CHECK(out.empty() == false);
    out = s.run("a:size()");
    CHECK(out.find("\r\n2\t2") != std::string::npos);
    out = s.run("(a + 1):get(2, 2), (10 - a):get(1, 1), (a / 2):get(1, 2), max(a), mean(a)");
    CHECK(out.find("5.0\t9.0\t1.0\t4.0\t2.5") != std::string::npos);
    out = s.run("sum(a, 1)");
    CHECK(out.find("matrix 1×2 float32") != std::string::npos);
    CHECK(out.find("  4  6") != std::string::npos);
}

TEST_CASE("session: Ctrl-C while Ctrl-D waits for queued kernels leaves at once", "[shell][pty][issue14][vulkan]") {
    if (vela_test::run_vela({"-e", "device('vulkan:0')"}).status != 0) {
        WARN("no vulkan:0: nothing queues");
        return;
    }
    Session s({"--device", "vulkan:0"});
    // Tens of seconds of GEMMs queued without a wait: k products took 1-2 s, 16·k more are queued
    // (at least 16 × 17 GFLOP; an H200 ran 8 in milliseconds). The product in flight when Ctrl-C
    // comes still finishes: on a loaded 2-core machine one took 4-5 s, so the exit is given 15 s,
    // against the 16-32 s the queue takes at the speed just measured.
    CHECK(!s.run("a = rand(2048, 2048, 1) c = zeros(2048, 2048) t0, k = os.time(), 0 "
                 "repeat mm(a, a, c) sync() k = k + 1 until os.time() - t0 >= 2 "
                 "for i = 1, 16 * k do mm(a, a, c) end").empty());
    s.pty.send("\x04");
    CHECK(s.pty.expect("(Ctrl-C drops them)"));
    s.pty.interrupt();  // the shell is waiting, not reading a line
    CHECK(s.pty.wait_exit(15) == 130);  // not the seconds the queue would take
}

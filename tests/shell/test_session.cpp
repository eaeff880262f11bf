// Issue 14, at the prompt through a pseudo-terminal: every report prints
// once, Torch7/PyTorch names give one clear error, and what a new user
// types first works.
#include <catch2/catch.hpp>

#include <string>

#include "process.hpp"

using vela_test::Pty;

namespace {

struct Session {
    Pty pty;
    explicit Session(const std::vector<std::string>& args = {}, const std::map<std::string, std::string>& env = {})
        : pty(args, env) {
        REQUIRE(pty.expect("> "));
    }
    // Sends a line and returns everything printed up to the next prompt
    // (the echoed line included); "" when no prompt came back.
    std::string run(const std::string& line, double timeout_s = 60) {
        size_t before = pty.output().size();
        pty.send(line + "\n");
        if (!pty.expect("\r\n> ", timeout_s)) return "";
        std::string out = pty.output().substr(before);
        return out.substr(0, out.size() - 2);  // without the new prompt
    }
};

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

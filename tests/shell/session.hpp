// A session at vela's prompt through a pseudo-terminal, for the [pty] tests.
#pragma once
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "process.hpp"

namespace vela_test {

// A pty session at its first prompt.
struct Session {
    Pty pty;
    explicit Session(const std::vector<std::string>& args = {}, const std::map<std::string, std::string>& env = {})
        : pty(args, env) {
        REQUIRE(pty.expect("> "));
    }
    // Sends a line and waits for `needle` in what follows.
    bool run(const std::string& line, const std::string& needle) {
        pty.send(line + "\n");
        return pty.expect(needle);
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

}  // namespace vela_test

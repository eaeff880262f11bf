// Output that fits the screen (issue 25): at the prompt, in a terminal of 80
// and of 160 columns, a 30×30 matrix, help(), help(nn) and devices() print no
// line wider than the terminal; ??name shows a Lua function's source.
#include <catch2/catch.hpp>

#include <set>
#include <sstream>

#include "process.hpp"

using vela_test::Pty;

namespace {

// The display width of each line of pty output: escape sequences (the line
// editor's) and carriage returns dropped, UTF-8 counted by characters.
std::vector<std::pair<size_t, std::string>> lines_of(const std::string& out) {
    std::vector<std::pair<size_t, std::string>> lines;
    std::string line;
    size_t w = 0;
    for (size_t i = 0; i < out.size(); i++) {
        unsigned char c = static_cast<unsigned char>(out[i]);
        if (c == 0x1b) {  // CSI: ESC [ ... final byte in @..~
            if (i + 1 < out.size() && out[i + 1] == '[') {
                i += 2;
                while (i < out.size() && !(out[i] >= '@' && out[i] <= '~')) i++;
            }
            continue;
        }
        if (c == '\r') continue;
        if (c == '\n') {
            lines.emplace_back(w, line);
            line.clear();
            w = 0;
            continue;
        }
        line += char(c);
        w += (c & 0xC0) != 0x80;
    }
    lines.emplace_back(w, line);
    return lines;
}

// Runs `command` at a prompt `columns` wide; the lines it printed (up to the next prompt).
std::vector<std::pair<size_t, std::string>> printed(const std::string& command, int columns) {
    Pty pty({}, {{"COLUMNS", ""}}, columns);
    REQUIRE(pty.expect("> "));
    pty.send(command + "\n");
    REQUIRE(pty.expect(command));
    REQUIRE(pty.expect("\n> ", 30));
    std::string out = pty.output();
    size_t from = out.rfind(command);
    return lines_of(out.substr(from + command.size(), out.size() - from - command.size() - 2));
}

size_t widest(const std::vector<std::pair<size_t, std::string>>& lines) {
    size_t w = 0;
    for (const auto& [n, l] : lines) w = std::max(w, n);
    return w;
}

}  // namespace

TEST_CASE("widths: a 30x30 matrix fits 80 and 160 columns, in column blocks", "[shell][pty][widths]") {
    for (int cols : {80, 160}) {
        auto lines = printed("randn(30, 30, 1)", cols);
        INFO("columns " << cols);
        CHECK(widest(lines) <= size_t(cols));
        CHECK(widest(lines) > size_t(cols) - 20);  // the blocks use the width
        size_t blocks = 0, rows = 0;
        for (const auto& [n, l] : lines) {
            if (l.rfind("Columns ", 0) == 0) blocks++;
            else if (n > 0 && l.find("matrix") == std::string::npos) rows++;
        }
        CHECK(rows == 30 * blocks);  // every block has all 30 rows
        CHECK(blocks >= (cols == 80 ? 5u : 3u));
        CHECK(lines[2].second.rfind("Columns 1 to ", 0) == 0);  // [0] ends the echo, [1] "matrix 30×30 ..."
    }
}

TEST_CASE("widths: help(), help(nn), devices() fit 80 columns; help() has no repeated section", "[shell][pty][widths]") {
    for (const char* cmd : {"help()", "help(nn)", "devices()", "?nn.fit"}) {
        auto lines = printed(cmd, 80);
        INFO(cmd);
        CHECK(lines.size() > 3);
        CHECK(widest(lines) <= 80);
    }
    auto lines = printed("help()", 80);
    std::set<std::string> titles;
    bool sections = false;  // after the introduction's blank line (lines[0] ends the echoed command)
    for (size_t i = 1; i < lines.size(); i++) {
        const std::string& l = lines[i].second;
        if (l.empty()) sections = true;
        if (!sections || l.empty() || l[0] == ' ') continue;
        std::string title = l.substr(0, l.find("  "));
        INFO(l);
        CHECK(titles.insert(title).second);  // one section per title
    }
    CHECK(titles.count("optimizer steps"));  // 15 characters: not cut
    CHECK(titles.count("regularization"));
    CHECK(widest(printed("help()", 160)) > 80);  // wider terminals get longer lines
}

TEST_CASE("widths: ??name prints a Lua function's source", "[shell][pty][widths]") {
    auto lines = printed("??nn.linear", 100);
    std::string all;
    for (const auto& [n, l] : lines) all += l + "\n";
    CHECK(all.find("-- nn.linear, ") != std::string::npos);
    CHECK(all.find("function nn.linear(inputs, outputs, activation, opts)") != std::string::npos);
    auto mm = printed("??mm", 100);
    CHECK(mm.size() > 1);
    CHECK(mm[1].second.find("mm is built in (C++)") != std::string::npos);
}

// The prompt, driven through a pseudo-terminal as a user would drive it.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "session.hpp"

using vela_test::Pty;
using vela_test::Session;

TEST_CASE("prompt: an expression prints its value without return", "[shell][pty]") {
    Session s;
    CHECK(s.run("1+1", "\r\n2\r\n> "));
    CHECK(s.run("'a' .. 'b', 2^10", "ab\t1024.0"));
}

TEST_CASE("prompt: an assignment and a trailing ';' print nothing", "[shell][pty]") {
    Session s;
    CHECK(s.run("x = 3", "x = 3\r\n> "));
    CHECK(s.run("x;", "x;\r\n> "));
    CHECK(s.run("x * 2", "\r\n6\r\n> "));
}

TEST_CASE("prompt: _ holds the last printed value", "[shell][pty]") {
    Session s;
    CHECK(s.run("6 * 7", "42"));
    CHECK(s.run("_ + 1", "\r\n43\r\n> "));
}

TEST_CASE("prompt: a multi-line for loop continues on >> and runs", "[shell][pty]") {
    Session s;
    s.pty.send("for i = 1, 3 do\n");
    CHECK(s.pty.expect(">> "));
    s.pty.send("  io.write(i * 11, ' ')\n");
    CHECK(s.pty.expect(">> "));
    s.pty.send("end\n");
    CHECK(s.pty.expect("11 22 33"));
    // An expression may span lines too.
    s.pty.send("{1,\n");
    CHECK(s.pty.expect(">> "));
    CHECK(s.run("2}", "{1, 2}"));
}

TEST_CASE("prompt: tables print nested with sorted keys", "[shell][pty]") {
    Session s;
    CHECK(s.run("{3, 4, z = 1, a = 'x', sub = {k = true}}", "{3, 4, a = \"x\", sub = {k = true}, z = 1}"));
    // Deep nesting is cut, long tables are cut with a count.
    CHECK(s.run("{{{{{1}}}}}", "{{{{...}}}}"));
    CHECK(s.run("t = {} for i = 1, 100 do t[i] = i end", "> "));
    CHECK(s.run("t", "... (60 more)"));
}

TEST_CASE("prompt: an error prints its message and a traceback, the session lives on", "[shell][pty]") {
    Session s;
    CHECK(s.run("keep = 41", "> "));
    s.pty.send("error('boom')\n");
    CHECK(s.pty.expect("boom"));
    CHECK(s.pty.expect("stack traceback:"));
    CHECK(s.pty.expect("> "));
    CHECK(s.run("keep + 1", "\r\n42\r\n"));
    // A syntax error too.
    CHECK(s.run("x = = 1", "unexpected symbol"));
    CHECK(s.run("keep", "\r\n41\r\n"));
}

TEST_CASE("prompt: Ctrl-C stops a running loop and returns to a working prompt", "[shell][pty]") {
    Session s;
    CHECK(s.run("n = 7", "> "));
    s.pty.send("while true do end\n");
    CHECK(s.pty.expect("while true do end\r\n"));
    s.pty.interrupt();  // after Enter it is for this command, even before it starts
    CHECK(s.pty.expect("interrupted"));
    CHECK(s.pty.expect("> "));
    CHECK(s.run("n * 6", "\r\n42\r\n"));
    // It works a second time (the handler is set again for each command).
    s.pty.send("while true do end\n");
    CHECK(s.pty.expect("while true do end\r\n"));
    s.pty.interrupt();  // after Enter it is for this command, even before it starts
    CHECK(s.pty.expect("interrupted"));
    CHECK(s.run("n", "\r\n7\r\n"));
}

TEST_CASE("prompt: Ctrl-C stops a host wait on the device", "[shell][pty]") {
    Session s;
    // The answer is assembled so the echoed line cannot match it.
    s.pty.send("print('vul' .. 'kan: ' .. tostring(pcall(device, 'vulkan')))\n");
    REQUIRE(s.pty.expect("vulkan: "));
    REQUIRE(s.pty.expect("\r\n"));
    if (s.pty.output().find("vulkan: true") == std::string::npos) {
        WARN("no Vulkan device: nothing waits on the cpu");
        return;
    }
    CHECK(s.pty.expect("> "));
    CHECK(s.run("n = 7 a = rand(1024, 1024) c = zeros(1024, 1024)", "> "));
    // Seconds of work on a software GPU; the host waits in sync().
    s.pty.send("for i = 1, 60 do mm(a, a, c) end io.write('wait', 'ing\\n') sync()\n");
    CHECK(s.pty.expect("waiting\r\n"));  // the kernels are queued; the host is in, or at, sync()
    s.pty.interrupt();
    CHECK(s.pty.expect("interrupted"));
    CHECK(s.pty.expect("> "));
    CHECK(s.run("n * 6", "\r\n42\r\n"));
}

TEST_CASE("prompt: Ctrl-C at the prompt clears the line", "[shell][pty]") {
    Session s;
    s.pty.send("this is not lua");
    CHECK(s.pty.expect("lua"));
    s.pty.send("\x03");
    CHECK(s.pty.expect("> "));
    CHECK(s.run("1 + 2", "\r\n3\r\n"));
    // At a continuation prompt it drops the unfinished chunk.
    s.pty.send("for i = 1, 2 do\n");
    CHECK(s.pty.expect(">> "));
    s.pty.send("\x03");
    CHECK(s.pty.expect("> "));
    CHECK(s.run("2 + 2", "\r\n4\r\n"));
}

TEST_CASE("prompt: Ctrl-D leaves with exit code 0", "[shell][pty]") {
    Session s;
    s.pty.send("\x04");
    CHECK(s.pty.wait_exit() == 0);
}

TEST_CASE("prompt: tab completes globals and table fields", "[shell][pty]") {
    Session s;
    // "string.fo" + TAB becomes string.format: the call only works if it did.
    s.pty.send("string.fo\t");
    CHECK(s.pty.expect("rmat"));
    CHECK(s.run("('<%d>', 41 + 1)", "<42>"));
    s.pty.send("my_long_global = 5\n");
    CHECK(s.pty.expect("> "));
    s.pty.send("my_long_g\t");
    CHECK(s.pty.expect("lobal"));
    CHECK(s.run(" * 2", "\r\n10\r\n"));
}

TEST_CASE("prompt: tab completes methods after ':' through the metatable", "[shell][pty]") {
    Session s;
    CHECK(s.run("s = 'xy'", "> "));
    s.pty.send("s:up\t");
    CHECK(s.pty.expect("per"));
    CHECK(s.run("()", "\r\nXY\r\n"));
    // A table whose methods live in its metatable's __index table.
    CHECK(s.run("Point = {} Point.__index = Point function Point:norm1() return self.x + self.y end", "> "));
    CHECK(s.run("p = setmetatable({x = 2, y = 3}, Point)", "> "));
    s.pty.send("p:no\t");
    CHECK(s.pty.expect("rm1"));
    CHECK(s.run("()", "\r\n5\r\n"));
}

TEST_CASE("prompt: a matrix's methods complete after ':'", "[shell][pty]") {
    Session s;
    CHECK(s.run("m = from{{1, 2}, {3, 4}}", "> "));
    s.pty.send("m:tot\t");
    CHECK(s.pty.expect("able"));
    CHECK(s.run("()", "{{1.0, 2.0}, {3.0, 4.0}}"));
    // A second TAB lists every method.
    s.pty.send("m:\t\t");
    CHECK(s.pty.expect("m:view"));
    s.pty.send("\x03");
    CHECK(s.pty.expect("\r\n> "));  // the new prompt; the listing redraws "> m:" on its own line
    // A matrix prints through its __tostring; help knows its methods.
    CHECK(s.run("m", "matrix 2×2 float32"));
    CHECK(s.run("help(m.view)", "x:view(i, j, rows, cols)"));
    CHECK(s.run("help(mm)", "mm(alpha, a, b, beta, c)"));
    CHECK(s.run("?addmm", "called mm in vela"));
}

TEST_CASE("prompt: tab completes file names inside a string", "[shell][pty]") {
    vela_test::TempFile f("return 1", ".lua");
    std::string dir = f.path.substr(0, f.path.rfind('/') + 1);
    std::string base = f.path.substr(dir.size());
    Session s;
    // Type the directory and most of the name; TAB finishes it.
    std::string partial = base.substr(0, base.size() - 5);
    s.pty.send("dofile('" + dir + partial + "\t");
    CHECK(s.pty.expect(".lua"));
    CHECK(s.run("') + 41", "\r\n42\r\n"));
}

TEST_CASE("prompt: ?name and help(f) print documentation", "[shell][pty]") {
    Session s;
    CHECK(s.run("?help", "help([f"));
    CHECK(s.run("help(help)", "help([f"));
    CHECK(s.run("help(timing)", "wall time"));
    s.pty.send("help()\n");
    CHECK(s.pty.expect("shell"));
    CHECK(s.pty.expect("timing"));
    CHECK(s.run("?no_such_thing_here", "no help for 'no_such_thing_here'"));
    CHECK(s.run("?a\"b)", "no help for 'a\"b)'"));
    // Lua code documents itself with vela.doc.
    CHECK(s.run("function twice(x) return 2 * x end", "> "));
    CHECK(s.run("vela.doc('twice', 'twice(x)', 'Doubles x.')", "> "));
    CHECK(s.run("help(twice)", "Doubles x."));
    CHECK(s.run("twice", "function: twice(x)"));
}

TEST_CASE("prompt: timing(true) prints each command's wall time", "[shell][pty]") {
    Session s;
    CHECK(s.run("timing(true)", "true"));
    CHECK(s.pty.expect("s]"));
    CHECK(s.run("x = 1", "s]"));
    CHECK(s.run("timing(false)", "false"));
    s.pty.send("1\n");
    CHECK(s.pty.expect("\r\n1\r\n> "));
    CHECK(s.pty.rest().find("s]") == std::string::npos);
}

TEST_CASE("prompt: history is saved per line to VELA_HISTORY", "[shell][pty]") {
    vela_test::TempFile hist;
    {
        Session s({}, {{"VELA_HISTORY", hist.path}});
        CHECK(s.run("hist_a = 1", "> "));
        CHECK(s.run("hist_b = 2", "> "));
        // Saved as typed, before leaving.
        std::ifstream in(hist.path);
        std::stringstream ss;
        ss << in.rdbuf();
        CHECK(ss.str() == "hist_a = 1\nhist_b = 2\n");
        s.pty.send("\x04");
        CHECK(s.pty.wait_exit() == 0);
    }
    // A new session recalls it with the up arrow.
    Session s({}, {{"VELA_HISTORY", hist.path}});
    CHECK(s.run("hist_a = 10 hist_b = 20", "> "));
    s.pty.send("\x1b[A\x1b[A");  // two lines up: "hist_b = 2"
    s.pty.send("\n");
    CHECK(s.run("hist_b", "\r\n2\r\n"));
}

TEST_CASE("prompt: Ctrl-R finds an earlier line", "[shell][pty]") {
    Session s;
    CHECK(s.run("40 + 2", "\r\n42\r\n"));
    CHECK(s.run("x = 0", "> "));
    // Ctrl-R, then part of the line, then Enter runs it again. Each key waits
    // for libedit's answer (its "bck:" search prompt, then the line found): a
    // loaded machine once saw the keys typed ahead of the search lost.
    s.pty.send("\x12");
    CHECK(s.pty.expect("bck:"));
    s.pty.send("40 +");
    CHECK(s.pty.expect("40 + 2"));
    s.pty.send("\n");
    CHECK(s.pty.expect("42"));
    CHECK(s.run("1", "\r\n1\r\n"));
}

TEST_CASE("prompt: -i runs the script, then the prompt sees its globals", "[shell][pty]") {
    vela_test::TempFile script("from_script = 'hello'\n", ".lua");
    Pty pty({"-i", script.path});
    REQUIRE(pty.expect("> "));
    pty.send("from_script\n");
    CHECK(pty.expect("hello"));
    pty.send("\x04");
    CHECK(pty.wait_exit() == 0);
}

TEST_CASE("prompt: a chunk typed over several lines comes back from history as one entry", "[shell][pty]") {
    vela_test::TempFile hist;
    {
        Session s({}, {{"VELA_HISTORY", hist.path}});
        s.pty.send("for i = 1, 2 do\n");
        CHECK(s.pty.expect(">> "));
        s.pty.send("  io.write(i * 7, ';')\n");
        CHECK(s.pty.expect(">> "));
        s.pty.send("end\n");
        CHECK(s.pty.expect("7;14;"));
        CHECK(s.pty.expect("> "));
        std::ifstream in(hist.path);
        std::stringstream ss;
        ss << in.rdbuf();
        // One line of the file, the newlines kept as 0x1F.
        CHECK(ss.str() == "for i = 1, 2 do\x1f  io.write(i * 7, ';')\x1f" "end\n");
        s.pty.send("\x04");
        CHECK(s.pty.wait_exit() == 0);
    }
    // A new session: one up arrow brings the whole loop back, Enter runs it.
    Session s({}, {{"VELA_HISTORY", hist.path}});
    s.pty.send("\x1b[A\n");
    CHECK(s.pty.expect("7;14;"));
    CHECK(s.run("1 + 1", "\r\n2\r\n"));
}

TEST_CASE("prompt: Ctrl-D with device work queued says what it waits for", "[shell][pty][vulkan]") {
    if (vela_test::run_vela({"-e", "device('vulkan:0')"}).status != 0) {
        WARN("no vulkan:0: nothing queues");
        return;
    }
    Session s({"--device", "vulkan:0"});
    // About a second of GEMMs on the software device, queued without a wait.
    CHECK(s.run("a = rand(512, 512, 1) c = zeros(512, 512) for i = 1, 40 do mm(a, a, c) end print('que' .. 'ued')",
                "queued\r\n> "));
    s.pty.send("\x04");
    CHECK(s.pty.expect("waiting for "));
    CHECK(s.pty.expect(" queued kernels on vulkan:0 (Ctrl-C drops them)"));
    CHECK(s.pty.wait_exit(120) == 0);
}

// The command line, as lua.c users expect it: -e, -l, -i, -v, -h, --, -,
// scripts with arguments, exit codes, stdin as a script.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <fstream>
#include <sstream>

#include "process.hpp"

using vela_test::run_vela;
using vela_test::TempFile;

TEST_CASE("cli: -e runs a statement", "[shell][cli]") {
    auto r = run_vela({"-e", "print(6 * 7)"});
    CHECK(r.status == 0);
    CHECK(r.out == "42\n");
    // Several run in order, in one state.
    r = run_vela({"-e", "x = 2", "-e", "print(x + 1)"});
    CHECK(r.out == "3\n");
    // The attached form -estat too.
    r = run_vela({"-eprint('joined')"});
    CHECK(r.out == "joined\n");
}

TEST_CASE("cli: an error in -e goes to stderr with exit code 1", "[shell][cli]") {
    auto r = run_vela({"-e", "error('bad thing')"});
    CHECK(r.status == 1);
    CHECK(r.out.empty());
    CHECK(r.err.find("bad thing") != std::string::npos);
    CHECK(r.err.find("stack traceback") != std::string::npos);
}

TEST_CASE("cli: a script gets its arguments in arg and in ...", "[shell][cli]") {
    TempFile script(
        "print(#arg, arg[0] ~= nil, arg[1], arg[2])\n"
        "print(select('#', ...), ...)\n"
        "print(arg[-1] ~= nil)\n",
        ".lua");
    auto r = run_vela({script.path, "alpha", "beta"});
    CHECK(r.status == 0);
    CHECK(r.out == "2\ttrue\talpha\tbeta\n2\talpha\tbeta\ntrue\n");
    // arg[0] is the script; interpreter options sit at negative indices.
    TempFile show("print(arg[0], arg[-1], arg[-2])", ".lua");
    r = run_vela({"-e", "x=1", show.path});
    CHECK(r.out == show.path + "\tx=1\t-e\n");
}

TEST_CASE("cli: a failing script exits 1 with the message on stderr", "[shell][cli]") {
    TempFile script("local t = nil\nprint('before')\nerror('script failed here')\n", ".lua");
    auto r = run_vela({script.path});
    CHECK(r.status == 1);
    CHECK(r.out == "before\n");
    CHECK(r.err.find("script failed here") != std::string::npos);
    CHECK(r.err.find(":3:") != std::string::npos);
    // A missing script and a syntax error fail the same way.
    r = run_vela({"/nonexistent/file.lua"});
    CHECK(r.status == 1);
    CHECK(r.err.find("cannot open /nonexistent/file.lua") != std::string::npos);
    TempFile bad("x = = 1", ".lua");
    r = run_vela({bad.path});
    CHECK(r.status == 1);
    CHECK(r.err.find("unexpected symbol") != std::string::npos);
    // os.exit passes its code through.
    r = run_vela({"-e", "os.exit(3)"});
    CHECK(r.status == 3);
}

TEST_CASE("cli: stdin that is not a terminal runs as a script without prompts", "[shell][cli]") {
    auto r = run_vela({}, "x = 20\nfor i = 1, 2 do x = x + i end\nprint(x)\n");
    CHECK(r.status == 0);
    CHECK(r.out == "23\n");
    CHECK(r.err.empty());
    r = run_vela({}, "print('a')\nerror('piped failure')\n");
    CHECK(r.status == 1);
    CHECK(r.out == "a\n");
    CHECK(r.err.find("piped failure") != std::string::npos);
    // '-' names stdin explicitly, with arguments after it.
    r = run_vela({"-", "one"}, "print(arg[1])\n");
    CHECK(r.out == "one\n");
}

TEST_CASE("cli: -- ends the options", "[shell][cli]") {
    TempFile script("print(arg[1])", ".lua");
    auto r = run_vela({"--", script.path, "-v"});
    CHECK(r.status == 0);
    CHECK(r.out == "-v\n");
}

TEST_CASE("cli: -i with piped stdin runs the script and then reads commands", "[shell][cli]") {
    TempFile script("greeting = 'hi'", ".lua");
    auto r = run_vela({"-i", script.path}, "greeting .. '!'\n");
    CHECK(r.status == 0);
    CHECK(r.out.find("hi!\n") != std::string::npos);
    // Lines keep their trailing spaces (a long string may hold them); a ';'
    // followed by spaces still suppresses the value; a bare '=' is harmless.
    r = run_vela({"-i"}, "x = [[a  \nb]]\n#x\n1 + 1 ;  \n=\n=40 + 2\n");
    CHECK(r.status == 0);
    CHECK(r.out.find("> 5\n") != std::string::npos);
    CHECK(r.out.find("2\n") == r.out.find("42\n") + 1);
}

TEST_CASE("cli: -l requires a module into a global", "[shell][cli]") {
    TempFile mod("return {answer = 42}", ".lua");
    std::string dir = mod.path.substr(0, mod.path.rfind('/'));
    // The module's name must be a Lua name: a link to the file gives it one.
    std::string name = "velamod" + std::to_string(getpid());
    std::string link = dir + "/" + name + ".lua";
    REQUIRE(symlink(mod.path.c_str(), link.c_str()) == 0);
    auto r = run_vela({"-e", "package.path = '" + dir + "/?.lua;' .. package.path", "-l", name, "-e",
                       "print(" + name + ".answer)"});
    CHECK(r.status == 0);
    CHECK(r.out == "42\n");
    // -l g=mod puts module mod in the global g (Lua 5.4.4's lua.c).
    r = run_vela({"-e", "package.path = '" + dir + "/?.lua;' .. package.path", "-l", "g=" + name, "-e",
                  "print(g.answer, " + name + ")"});
    CHECK(r.status == 0);
    CHECK(r.out == "42\tnil\n");
    r = run_vela({"-l", "no_such_module_anywhere"});
    CHECK(r.status == 1);
    CHECK(r.err.find("module 'no_such_module_anywhere' not found") != std::string::npos);
    unlink(link.c_str());
}

TEST_CASE("cli: -v and -h", "[shell][cli]") {
    auto r = run_vela({"-v"});
    CHECK(r.status == 0);
    CHECK(r.out.rfind("vela " VELA_VERSION, 0) == 0);
    CHECK(r.out.find("Lua 5.4") != std::string::npos);
    r = run_vela({"-h"});
    CHECK(r.status == 0);
    CHECK(r.out.find("usage: vela [options] [script [args]]") != std::string::npos);
    CHECK(r.out.find("--device") != std::string::npos);
    CHECK(r.out.find("--list-devices") != std::string::npos);
}

TEST_CASE("cli: --version, -W, -E and LUA_INIT as lua.c has them", "[shell][cli]") {
    auto r = run_vela({"--version"});
    CHECK(r.status == 0);
    CHECK(r.out.rfind("vela " VELA_VERSION, 0) == 0);
    // Warnings are off by default; -W turns them on (in option order).
    r = run_vela({"-e", "warn('quiet')", "-W", "-e", "warn('loud')"});
    CHECK(r.status == 0);
    CHECK(r.err.find("quiet") == std::string::npos);
    CHECK(r.err.find("Lua warning: loud") != std::string::npos);
    // LUA_INIT runs first; LUA_INIT_5_4 wins over it; -E ignores both, and VELA_DEVICE.
    r = run_vela({"-e", "print(x)"}, "", {{"LUA_INIT", "x = 'init'"}});
    CHECK(r.out == "init\n");
    r = run_vela({"-e", "print(x)"}, "", {{"LUA_INIT", "x = 'init'"}, {"LUA_INIT_5_4", "x = 'init54'"}});
    CHECK(r.out == "init54\n");
    r = run_vela({"-E", "-e", "print(x, device())"}, "", {{"LUA_INIT", "x = 'init'"}, {"VELA_DEVICE", "no-such-device"}});
    CHECK(r.status == 0);
    CHECK(r.out.rfind("nil\t", 0) == 0);
    r = run_vela({"-E", "-e", "print(package.path:find('/velanoenv/', 1, true))"}, "", {{"LUA_PATH", "/velanoenv/?.lua"}});
    CHECK(r.out == "nil\n");
}

TEST_CASE("cli: an unknown option or a missing argument is an error with usage", "[shell][cli]") {
    auto r = run_vela({"-z"});
    CHECK(r.status == 1);
    CHECK(r.err.find("unrecognized option '-z'") != std::string::npos);
    CHECK(r.err.find("usage:") != std::string::npos);
    r = run_vela({"--frobnicate"});
    CHECK(r.status == 1);
    CHECK(r.err.find("unrecognized option '--frobnicate'") != std::string::npos);
    r = run_vela({"-e"});
    CHECK(r.status == 1);
    CHECK(r.err.find("'-e' needs argument") != std::string::npos);
    r = run_vela({"--device"});
    CHECK(r.status == 1);
    CHECK(r.err.find("'--device' needs an argument") != std::string::npos);
}

TEST_CASE("cli: the vela module's fields are globals in scripts", "[shell][cli]") {
    auto r = run_vela({"-e", "print(type(vela), type(help), vela.help == help, vela.version)"});
    CHECK(r.status == 0);
    CHECK(r.out == "table\tfunction\ttrue\t" VELA_VERSION "\n");
    r = run_vela({"-e", "local v = require 'vela' print(v == vela)"});
    CHECK(r.out == "true\n");
}

TEST_CASE("cli: --list-devices prints the devices and exits", "[shell][cli]") {
    auto r = run_vela({"--list-devices"});
    CHECK(r.status == 0);
    CHECK(r.out.find("cpu") != std::string::npos);
    // The same listing as devices() prints at the prompt (and print(devices()) in a script).
    auto lua = run_vela({"-e", "print(devices())"});
    CHECK(lua.out == r.out);
    CHECK(run_vela({"-e", "devices()"}).out.empty());  // the report is the value: nothing printed twice
}

TEST_CASE("cli: --device and VELA_DEVICE pick the current device", "[shell][cli]") {
    auto r = run_vela({"--device", "cpu", "-e", "print(device():name())"});
    CHECK(r.status == 0);
    CHECK(r.out == "cpu\n");
    r = run_vela({"--device=cpu", "-e", "print(zeros(2, 2):device():name())"});
    CHECK(r.out == "cpu\n");
    r = run_vela({"-e", "print(device():name())"}, "", {{"VELA_DEVICE", "cpu"}});
    CHECK(r.out == "cpu\n");
    // A spec that matches nothing stops before any code runs.
    r = run_vela({"--device", "no-such-device", "-e", "print('ran')"});
    CHECK(r.status == 1);
    CHECK(r.out.empty());
    CHECK(r.err.find("no-such-device") != std::string::npos);
}

TEST_CASE("cli: the shell starts queued device work after each command, without waiting", "[shell][cli]") {
    // Lines piped to -i run one command at a time, as typed at the prompt.
    auto probe = run_vela({"-e", "print(pcall(device, 'vulkan'))"});
    if (probe.out.rfind("true", 0) != 0) {
        WARN("no Vulkan device: the flush is a no-op on the cpu");
        return;
    }
    auto r = run_vela({"-i"},
                      "device('vulkan')\n"
                      "x = ones(4, 1)\n"
                      "s0, w0 = stats().submissions, stats().host_waits\n"
                      "scal(2, x);\n"
                      "print('flushed', stats().submissions - s0, stats().host_waits - w0)\n");
    CHECK(r.status == 0);
    // One submission for the scal, and the host never waited for it.
    CHECK(r.out.find("flushed\t1\t0") != std::string::npos);
}

TEST_CASE("cli: an installed vela works from any directory", "[shell][cli][install]") {
    // cmake --install of this very build into a scratch prefix, then the
    // installed binary run from / finds its Lua modules beside it.
    char tmpl[] = "/tmp/vela-prefix-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    std::string prefix = tmpl;
    std::string build_dir = VELA_BINARY;
    build_dir = build_dir.substr(0, build_dir.rfind('/'));
    auto inst = vela_test::run_program("cmake", {"--install", build_dir, "--prefix", prefix}, "", {}, "", 120);
    REQUIRE(inst.status == 0);
    auto r = vela_test::run_program(prefix + "/bin/vela",
                                    {"-e", "print(package.searchpath('vela.nn', package.path) ~= nil, type(nn), "
                                           "from{1, 2}:get(2))"},
                                    "", {}, "/", 30);
    CHECK(r.status == 0);
    CHECK(r.out == "true\ttable\t2.0\n");
    CHECK(r.err.empty());
    vela_test::run_program("rm", {"-rf", prefix}, "", {}, "", 30);
}

TEST_CASE("cli: --validate turns the Khronos validation layer on, and the exit is clean", "[shell][cli]") {
    // Whether the layer is loaded shows in the process's own memory map.
    const std::string probe =
        "if not pcall(device, 'vulkan') then print('no vulkan') return end "
        "x = ones(3, 1) scal(2, x) "
        "local maps = io.open('/proc/self/maps'):read('a') "
        "print(sum(x), maps:find('VkLayer_khronos_validation', 1, true) ~= nil)";
    auto r = run_vela({"--validate", "-e", probe}, "", {{"VELA_VALIDATE", ""}});
    if (r.out == "no vulkan\n") {
        WARN("no Vulkan device");
        return;
    }
    CHECK(r.status == 0);
    CHECK(r.out == "6.0\ttrue\n");
    CHECK(r.err.empty());  // no validation message, at work or at exit
    r = run_vela({"-e", probe}, "", {{"VELA_VALIDATE", ""}});
    CHECK(r.status == 0);
    CHECK(r.out == "6.0\tfalse\n");
}

TEST_CASE("cli: the examples' options: unknown ones list the valid ones, --help prints usage, device= holds", "[shell][cli]") {
    for (const char* ex : {"examples/mnist.lua", "examples/softmax_regression.lua", "examples/step_by_step.lua",
                           "examples/compare_devices.lua", "examples/neanderthal_bench.lua"}) {
        INFO(ex);
        auto r = run_vela({ex, "epoch=1"});
        CHECK(r.status == 1);
        CHECK(r.err.find("unknown option 'epoch=1'; the options are: ") != std::string::npos);
        CHECK(r.out.empty());  // nothing started
        r = run_vela({ex, "--help"});
        CHECK(r.status == 0);
        CHECK(r.out.find(std::string("build/vela ") + ex) == 0);
        CHECK(r.out.find("  --help ") != std::string::npos);
    }
    auto r = run_vela({"examples/mnist.lua", "epochs=many"});
    CHECK(r.status == 1);
    CHECK(r.err.find("option epochs wants a number, got 'many'") != std::string::npos);
    r = run_vela({"examples/mnist.lua", "device=no-such-device"});
    CHECK(r.status == 1);
    CHECK(r.err.find("no device matches \"no-such-device\"") != std::string::npos);
    // device= is where the work runs (softmax_regression names its device first).
    r = run_vela({"examples/softmax_regression.lua", "device=cpu", "iterations=2"}, "", {{"VELA_DEVICE", "vulkan:0"}});
    CHECK(r.status == 0);
    CHECK(r.out.rfind("softmax regression on cpu", 0) == 0);
}

TEST_CASE("cli: examples/step_by_step.lua runs when fed line by line to the prompt", "[shell][cli]") {
    std::ifstream in("examples/step_by_step.lua");
    std::stringstream ss;
    ss << in.rdbuf();
    // -i reads stdin as the prompt does: each line its own chunk, so a `local`
    // would be gone by the next line.
    auto r = run_vela({"-i"}, ss.str(), {}, 300);
    CHECK(r.status == 0);
    CHECK(r.err.find("stack traceback") == std::string::npos);
    CHECK(r.out.find("mean loss of the last 20 steps") != std::string::npos);
    CHECK(r.out.find("test accuracy on cpu: ") != std::string::npos);
    CHECK(r.out.find("attempt to") == std::string::npos);
}

TEST_CASE("cli: nn.fit redirected writes one line per epoch, no bar, no escapes", "[shell][cli]") {
    auto r = run_vela({"-e",
                       "sets = data.mnist() train = data.subset(sets.train, 1, 600) "
                       "net = nn.sequential{nn.linear(784, 16, 'relu', {seed = 1}), nn.linear(16, 10, nil, {seed = 2})} "
                       "print(nn.fit(net, train, {epochs = 3, batch = 100, every = 1}))"},
                      "", {}, 120);
    CHECK(r.status == 0);
    CHECK(r.out.find('\r') == std::string::npos);
    CHECK(r.out.find('\x1b') == std::string::npos);
    CHECK(r.out.find("ETA") == std::string::npos);
    size_t lines = 0;
    for (char c : r.out) lines += c == '\n';
    CHECK(lines == 5);  // three epochs and the history's two lines
    CHECK(r.out.find("history of 3 epochs (1..3)") != std::string::npos);
}

TEST_CASE("cli: os.exit with device work queued finishes it first (validation on)", "[shell][cli][vulkan]") {
    if (run_vela({"-e", "device('vulkan:0')"}).status != 0) {
        WARN("no vulkan:0: nothing queues");
        return;
    }
    // Kernels recorded and never waited for, then os.exit: the devices' teardown must find nothing left.
    std::string code = "x = rand(64, 64, 1, 'vulkan:0') y = zeros(64, 64, 'float32', 'vulkan:0') "
                       "for i = 1, 50 do tanh(x, y) axpy(0.5, y, x) end os.exit(7)";
    for (int k = 0; k < 3; ++k) {
        auto r = run_vela({"--validate", "-e", code});
        CHECK(r.status == 7);
        CHECK(r.err.find("Validation") == std::string::npos);
    }
}

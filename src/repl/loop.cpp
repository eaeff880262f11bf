// The interactive loop, lua.c's doREPL grown up: read a chunk (continuing on
// ">> " while it is incomplete), try it as an expression first so values
// print without "return", run it, print the results, then start the device
// on whatever the command queued.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/error.hpp"
#include "core/registry.hpp"
#include "lua/text.hpp"
#include "lua/vela.hpp"
#include "repl/lineedit.hpp"
#include "repl/repl.hpp"

namespace vela::repl {

namespace {

bool timing_on = false;

// timing([on]): with an argument, turns the per-command clock on or off;
// returns whether it is on.
int l_timing(lua_State* L) {
    if (!lua_isnone(L, 1)) timing_on = lua_toboolean(L, 1);
    lua_pushboolean(L, timing_on);
    return 1;
}

const char* const eofmark = "<eof>";

// display(x): shows x as the prompt shows a value; in a notebook (src/jupyter)
// the kernel replaces it by one that sends rich output.
int l_display(lua_State* L) {
    luaL_checkany(L, 1);
    std::string s = show(L, 1) + "\n";
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
    return 0;
}

}  // namespace

bool incomplete(lua_State* L, int status) {
    if (status != LUA_ERRSYNTAX) return false;
    size_t n;
    const char* msg = lua_tolstring(L, -1, &n);
    size_t m = std::strlen(eofmark);
    return n >= m && std::strcmp(msg + n - m, eofmark) == 0;
}

namespace {

std::string rtrim(const std::string& s) {
    size_t e = s.find_last_not_of(" \t\r");
    return e == std::string::npos ? "" : s.substr(0, e + 1);
}

// Compiles `code` as an expression ("return code"); on success the function
// is on the stack.
bool load_expression(lua_State* L, const std::string& code) {
    std::string ret = "return ";
    ret += code;
    if (luaL_loadbuffer(L, ret.data(), ret.size(), "=stdin") == LUA_OK) return true;
    lua_pop(L, 1);
    return false;
}

struct Command {
    bool print = true;  // false for a trailing ';'
    std::string arg;    // the name after '?', passed to help
};

// Reads one complete chunk and leaves its compiled function (or a syntax
// error message) on the stack. Returns the load status, or -1 at end of
// input and -2 when Ctrl-C dropped what was typed.
int read_command(lua_State* L, LineEditor& ed, Command& cmd) {
    std::string line;
    for (;;) {
        auto st = ed.read("> ", line);
        if (st == LineEditor::Status::eof) return -1;
        if (st == LineEditor::Status::interrupted) return -2;
        if (!rtrim(line).empty()) break;
    }
    std::string code = line.substr(line.find_first_not_of(" \t"));

    // ?name: help for a name, passed as the chunk's argument so any text is
    // safe; a bare ? lists the topics.
    if (code[0] == '?') {
        ed.remember(line);
        std::string name = rtrim(code.substr(1));
        size_t b = name.find_first_not_of(" \t");
        cmd.print = false;
        // ??name: the Lua source of a Lua function.
        bool source = b != std::string::npos && name[b] == '?';
        if (source) b = name.find_first_not_of(" \t", b + 1);
        if (b != std::string::npos) cmd.arg = name.substr(b);
        const char* call = b == std::string::npos ? "help()" : source ? "help(..., 'source')" : "help(...)";
        return luaL_loadbuffer(L, call, std::strlen(call), "=stdin");
    }
    if (code[0] == '=') code = code.substr(1);  // lua 5.2 habit: =expr
    // A chunk typed over several lines goes into the history as one entry
    // (as lua.c keeps it), once it is complete or given up on.
    std::string typed = line;

    for (;;) {
        // A trailing ';' (after any spaces) means: run, but print nothing.
        std::string trimmed = rtrim(code);
        cmd.print = trimmed.empty() || trimmed.back() != ';';
        std::string expr = cmd.print ? trimmed : rtrim(trimmed.substr(0, trimmed.size() - 1));
        if (!expr.empty() && load_expression(L, expr)) {
            ed.remember(typed);
            return LUA_OK;
        }
        int status = luaL_loadbuffer(L, code.data(), code.size(), "=stdin");
        if (status == LUA_OK) {
            ed.remember(typed);
            return status;
        }
        // Either form waiting for more ("for i = 1, 3 do", "{1,") asks for
        // the next line.
        std::string ret = "return ";
        ret += expr;
        bool more = incomplete(L, status);
        if (!more) {
            int s2 = luaL_loadbuffer(L, ret.data(), ret.size(), "=stdin");
            more = incomplete(L, s2);
            lua_pop(L, 1);
        }
        if (!more) {
            ed.remember(typed);
            return status;
        }
        lua_pop(L, 1);
        auto st = ed.read(">> ", line);
        if (st == LineEditor::Status::interrupted) return -2;
        if (st == LineEditor::Status::eof) {
            ed.remember(typed);
            return luaL_loadbuffer(L, code.data(), code.size(), "=stdin");
        }
        typed += '\n';
        typed += line;
        code += '\n';
        code += line;  // as typed: a long string may end in spaces
    }
}

}  // namespace

void after_command(bool wait) {
    InterruptScope scope;
    for (Device* d : open_devices()) {
        try {
            if (wait) d->sync();
            else d->flush();
        } catch (const vela::Error& e) {
            std::fprintf(stderr, "%s: %s\n", d->name().c_str(), e.what());
        }
    }
}

namespace {

// At Ctrl-D: waits for what the session left queued on each device, saying
// so first, so a long queue is not a silent hang. Ctrl-C during the wait
// leaves at once without it (the process exit drops the device's work).
void drain_at_exit() {
    InterruptScope scope;
    for (Device* d : open_devices()) {
        uint64_t n = d->queued();
        if (n == 0) continue;
        std::fprintf(stderr, "waiting for %llu queued kernel%s on %s (Ctrl-C drops them)\n", (unsigned long long)n,
                     n == 1 ? "" : "s", d->name().c_str());
        std::fflush(stderr);
        try {
            d->sync();
        } catch (const vela::Interrupted&) {
            std::fputs("\n", stdout);
            std::fflush(stdout);
            std::fflush(stderr);
            std::_Exit(130);
        } catch (const vela::Error& e) {
            std::fprintf(stderr, "%s: %s\n", d->name().c_str(), e.what());
        }
    }
}

void print_time(double s) {
    std::printf("[%s]\n", lua::format_seconds(s, true).c_str());
    std::fflush(stdout);
}

}  // namespace

void open_shell_functions(lua_State* L) {
    lua_register(L, "display", l_display);
    vela::lua::doc("display", "display(x)",
                   "Shows x as the prompt shows a value, and returns nothing. In a notebook it sends x as rich\n"
                   "output: a matrix as a table (text/html), anything else as text. display(zeros(2, 3)).");
    lua_register(L, "timing", l_timing);
    vela::lua::doc("timing", "timing([on])",
                   "timing(true) prints the wall time of each command at the prompt after it runs,\n"
                   "queued device work included (the shell waits for it); timing(false) stops.");
}

void print_banner() {
    std::printf("vela %s (%s)  help() lists topics, ?name explains one, Ctrl-D leaves\n", VELA_VERSION,
                LUA_RELEASE);
    std::fflush(stdout);
}

void run_repl(lua_State* L) {
    InterruptScope session;
    LineEditor ed(L);
    for (;;) {
        lua_settop(L, 0);
        vela::interrupt_flag().store(false);  // at the prompt Ctrl-C belongs to the line editor
        Command cmd;
        int status = read_command(L, ed, cmd);
        if (status == -1) break;
        if (status == -2) continue;
        if (status != LUA_OK) {
            report(L, status, nullptr);
            continue;
        }
        double t0 = lua::now();
        int narg = 0;
        if (!cmd.arg.empty()) {
            lua_pushlstring(L, cmd.arg.data(), cmd.arg.size());
            narg = 1;
        }
        status = docall(L, narg, LUA_MULTRET);
        if (status == LUA_OK) {
            InterruptScope scope;  // printing a matrix waits for the device
            if (cmd.print) print_results(L, 0);
        } else {
            report(L, status, nullptr);
        }
        std::fflush(stdout);
        after_command(timing_on);
        if (timing_on) print_time(lua::now() - t0);
    }
    lua_settop(L, 0);
    std::fputs("\n", stdout);
    std::fflush(stdout);
    drain_at_exit();
}

}  // namespace vela::repl

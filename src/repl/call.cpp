// Running a chunk: lua_pcall with a traceback handler, and Ctrl-C.
//
// Ctrl-C while Lua code runs works as in lua.c: the C signal handler cannot
// touch the Lua state safely, so it only installs a hook that raises
// "interrupted!" at the next instruction. Code that waits in C++ (a device
// sync, a download) never reaches a hook; it polls vela::interrupt_flag(),
// which the same handler sets. A second Ctrl-C before either notices
// terminates the process (SIG_DFL), the way out of a truly stuck call.
//
// The kernel may run a handler on any thread that does not block SIGINT (the
// cpu pool's, a Vulkan driver's), at the same moment the main thread starts a
// call. So every handler sets the flag first and then looks at `running`,
// while docall publishes `running` first and then looks at the flag: with
// both sequentially consistent, at least one of them sees the other and the
// hook is set. (Before, a Ctrl-C right after Enter was lost about once in 40
// tries under load: its handler ran on another thread between docall reading
// the flag and installing its own handler.)
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

#include "core/error.hpp"
#include "repl/repl.hpp"

namespace vela::repl {

static void lstop(lua_State* L, lua_Debug*) {
    lua_sethook(L, nullptr, 0, 0);
    luaL_error(L, "interrupted!");
}

// The state whose call is running, or null between calls.
static std::atomic<lua_State*> running{nullptr};

void deliver_interrupt() {
    vela::interrupt_flag().store(true);
    if (lua_State* L = running.load()) lua_sethook(L, lstop, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
}

static void laction(int sig) {
    std::signal(sig, SIG_DFL);  // a second Ctrl-C ends the process
    deliver_interrupt();
}

// Drops the frames that only say how the shell called the chunk ("[C]: in ?")
// and keeps the traceback to a few lines: at a prompt the first frames are
// the ones that matter.
static std::string shorten(const std::string& tb) {
    const size_t max_frames = 8;
    std::string out;
    size_t frames = 0, pos = 0;
    bool in_trace = false;
    while (pos <= tb.size()) {
        size_t nl = tb.find('\n', pos);
        if (nl == std::string::npos) nl = tb.size();
        std::string line = tb.substr(pos, nl - pos);
        pos = nl + 1;
        if (!in_trace) {
            if (line == "stack traceback:") in_trace = true;
            out += (out.empty() ? "" : "\n") + line;
            continue;
        }
        if (line == "\t[C]: in ?") continue;
        if (++frames > max_frames) {
            out += "\n\t...";
            break;
        }
        out += "\n" + line;
    }
    // A traceback with no frame left says nothing.
    const std::string empty = "\nstack traceback:";
    if (out.size() >= empty.size() && out.compare(out.size() - empty.size(), empty.size(), empty) == 0)
        out.erase(out.size() - empty.size());
    return out;
}

int msghandler(lua_State* L) {
    const char* msg = lua_tostring(L, 1);
    if (msg == nullptr) {  // error object is not a string
        if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING) return 1;
        msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    }
    luaL_traceback(L, L, msg, 1);
    std::string tb = shorten(lua_tostring(L, -1));
    lua_pushlstring(L, tb.data(), tb.size());
    return 1;
}

int docall(lua_State* L, int narg, int nres) {
    int base = lua_gettop(L) - narg;  // function index
    lua_pushcfunction(L, msghandler);
    lua_insert(L, base);
    // A Ctrl-C pressed after the line was entered but before this call began
    // (the shell clears the flag before it reads a command) is for this call:
    // it stops at its first instruction, as a user who pressed Enter then
    // Ctrl-C expects, instead of the key being lost.
    auto old = std::signal(SIGINT, laction);
    running.store(L);
    if (vela::interrupt_flag().load()) laction(SIGINT);
    int status = lua_pcall(L, narg, nres, base);
    running.store(nullptr);
    std::signal(SIGINT, old);
    lua_sethook(L, nullptr, 0, 0);  // a Ctrl-C that came as the call returned
    vela::interrupt_flag().store(false);  // delivered, or the call ended first
    lua_remove(L, base);
    return status;
}

static void set_flag(int) { deliver_interrupt(); }

InterruptScope::InterruptScope() : old_(std::signal(SIGINT, set_flag)) {}
InterruptScope::~InterruptScope() { std::signal(SIGINT, old_); }

int report(lua_State* L, int status, const char* progname) {
    if (status != LUA_OK) {
        const char* msg = lua_tostring(L, -1);
        if (msg == nullptr) msg = "(error object is not a string)";
        if (progname) std::fprintf(stderr, "%s: ", progname);
        std::fprintf(stderr, "%s\n", msg);
        std::fflush(stderr);
        lua_pop(L, 1);
    }
    return status;
}

}  // namespace vela::repl

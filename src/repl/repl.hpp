// The shell's pieces, shared by src/main.cpp (the command line) and the
// interactive loop. Modelled on lua.c of Lua 5.4: small functions with one
// job each (docall, report, the loop, the state set-up).
#pragma once
#include <lua.hpp>

#include <string>
#include <vector>

namespace vela::repl {

// ---- call.cpp: running chunks ------------------------------------------------
// lua_pcall with a traceback message handler and a SIGINT handler that stops
// Lua code (a hook, as lua.c) and C++ waits (vela::interrupt_flag()).
int docall(lua_State* L, int narg, int nres);

// What a Ctrl-C does from a signal handler on any thread: sets
// vela::interrupt_flag() and, while docall runs a chunk, the hook that stops
// it at its next instruction.
void deliver_interrupt();
// Prints the error message on top of the stack (to stderr, prefixed with
// progname when not null) when status is not LUA_OK, and pops it.
int report(lua_State* L, int status, const char* progname);
// The message handler docall installs, also used by the loop: the message
// plus a traceback cut short to what helps at a prompt.
int msghandler(lua_State* L);
// While alive, Ctrl-C only sets vela::interrupt_flag(): for the host's waits
// on a device outside any Lua call (the flush and sync after a command), and
// for the whole prompt session, so a Ctrl-C between two commands never ends
// the shell. docall and the line editor put back what they replace.
struct InterruptScope {
    InterruptScope();
    ~InterruptScope();
    InterruptScope(const InterruptScope&) = delete;
    InterruptScope& operator=(const InterruptScope&) = delete;

private:
    void (*old_)(int);
};

// ---- state.cpp: the Lua state every mode shares --------------------------------
// Opens the standard libraries, preloads "vela", points package.path at the
// project's Lua modules, makes the fields of require "vela" globals and loads
// nn, optim, data, plot as globals when they exist. Returns false (after
// printing why) when "vela" itself cannot be loaded.
bool setup_state(lua_State* L);
// The directory holding the project's Lua modules (lua/ in the source tree
// from a build tree; <prefix>/share/vela/lua when installed).
std::string lua_dir();

// ---- pretty.cpp: how values look at the prompt ---------------------------------
// Renders the value at idx for the prompt: strings as they are, tables
// nested with sorted keys and bounded depth and length, userdata through
// __tostring. Never raises (a failing __tostring is shown as such).
std::string show(lua_State* L, int idx);
// Prints every value on the stack above `base`, one line each (tab separated
// on one line when all are short), sets _ to the first.
void print_results(lua_State* L, int base);

// ---- complete.cpp: tab completion ---------------------------------------------
// Candidates for the word ending at `end` in `line`: globals and keywords,
// table fields after '.', methods after ':', file names inside a string.
// Each candidate is the full replacement for line[start, end).
struct Completion {
    int start = 0;
    std::vector<std::string> words;
};
Completion complete(lua_State* L, const std::string& line, int end);

// ---- loop.cpp: the interactive loop ----------------------------------------------
// Reads, runs and prints until end of input (Ctrl-D). Without a terminal it
// still shows prompts and reads line by line (vela -i < file); main() runs
// piped stdin as one script instead when -i was not given.
void run_repl(lua_State* L);
// Whether a load status is a syntax error at the end of input ("<eof>"):
// the chunk is incomplete, and the prompt asks for another line.
bool incomplete(lua_State* L, int status);
// After a command: starts queued device work without waiting, so the device
// runs while the user types; with wait, waits for it (timing(true)).
void after_command(bool wait);
void print_banner();
// Defines timing() and registers the shell's own help entries.
void open_shell_functions(lua_State* L);

}  // namespace vela::repl

// Watching what a Lua function does, kernel by kernel and line by line: one
// Lua call hook (observe.cpp) serves profile (names each kernel after the
// user's call), trace (host waits, transfers and submissions by source line)
// and diverge (each kernel re-run on a reference device and compared).
#pragma once
#include <lua.hpp>
#include <string>

#include "core/device.hpp"

namespace vela::lua {

// kernels.cpp registers its functions here (the module table on top of the
// stack, after luaL_setfuncs), so the hook knows a kernel call from any other
// C function, whatever local name Lua code gave it.
void note_kernels(lua_State* L, const luaL_Reg* list);
// The same for one kernel written at the prompt (user_kernels.cpp): the
// function at idx is a kernel called `name`.
void note_user_kernel(lua_State* L, int idx, const char* name);

// While on, every kernel call sets vela::current_call() to its name and a
// fresh id, so devices name the kernels they time after the user's call.
void label_kernels(lua_State* L, bool on);

// "file:line" of the innermost Lua frame at or above `level`, and of the
// user's line: the first frame outside vela's own Lua modules (nn, optim, ...).
struct Where {
    std::string inner, user;
};
Where where(lua_State* L, int level);

// compare's check of a row: while on, every kernel call whose matrices live
// on another device than `dev` is noted; guard_end returns the first such call
// ("mm at stdin:1 with a matrix on vulkan:0", "" when none) and turns it off.
void guard_begin(lua_State* L, Device* dev);
std::string guard_end(lua_State* L);

// The table on top gets a metatable that prints it as `text` (the prompt
// shows it once) and names it (__name, e.g. "vela.Profile").
void set_report(lua_State* L, const char* name, std::string text);

void open_observe(lua_State* L);  // diverge, trace

}  // namespace vela::lua

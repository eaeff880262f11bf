// The Lua state every mode shares (script, -e, the prompt): standard
// libraries, the "vela" module and its fields as globals, and the Lua
// modules of lua/vela/ as globals when they exist.
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstdio>
#include <string>
#include <sys/stat.h>

#include "bench/native.hpp"
#include "dist/dist.hpp"
#include "core/error.hpp"
#include "core/exe_dir.hpp"
#include "core/registry.hpp"
#include "lua/vela.hpp"
#include "repl/repl.hpp"

namespace vela::repl {

static bool exists(const std::string& path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0;
}

// A binary in a CMake build directory (CMakeCache.txt beside it) uses the
// source tree's lua/ so edits need no install; an installed binary uses the
// modules installed beside it, wherever the prefix was moved.
std::string lua_dir() {
    std::string dir = exe_dir();
    if (exists(dir + "/CMakeCache.txt") && exists(VELA_SOURCE_LUA_DIR)) return VELA_SOURCE_LUA_DIR;
    std::string installed = dir + "/../share/vela/lua";
    char buf[PATH_MAX];
    return ::realpath(installed.c_str(), buf) ? std::string(buf) : installed;
}

static void set_package_path(lua_State* L) {
    std::string dir = lua_dir();
    lua_getglobal(L, "package");
    lua_getfield(L, -1, "path");
    std::string path = dir + "/?.lua;" + dir + "/?/init.lua;" + lua_tostring(L, -1);
    lua_pop(L, 1);
    lua_pushlstring(L, path.data(), path.size());
    lua_setfield(L, -2, "path");
    lua_getfield(L, -1, "preload");
    lua_pushcfunction(L, luaopen_vela);
    lua_setfield(L, -2, "vela");
    lua_pushcfunction(L, luaopen_vela_bench_native);
    lua_setfield(L, -2, "vela.bench_native");
    lua_pushcfunction(L, luaopen_vela_dist_native);
    lua_setfield(L, -2, "vela.dist_native");
    lua_pop(L, 2);
}

// Copies every field of the table on top into the globals, except where a
// global of that name exists already (the standard library wins).
static void export_fields(lua_State* L) {
    lua_pushglobaltable(L);
    lua_pushnil(L);
    while (lua_next(L, -3)) {
        if (lua_type(L, -2) == LUA_TSTRING) {
            lua_pushvalue(L, -2);
            if (lua_rawget(L, -4) == LUA_TNIL) {
                lua_pop(L, 1);
                lua_pushvalue(L, -2);
                lua_pushvalue(L, -2);
                lua_rawset(L, -5);
            } else {
                lua_pop(L, 1);
            }
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
}

static int require_vela(lua_State* L) {
    lua_getglobal(L, "require");
    lua_pushliteral(L, "vela");
    lua_call(L, 1, 1);
    lua_pushvalue(L, -1);
    lua_setglobal(L, "vela");
    export_fields(L);
    return 0;
}

// Loads vela.<name> into the global <name> when the module file exists; a
// module that exists but fails to load says why, once, and the shell goes on.
static void load_module(lua_State* L, const char* name) {
    lua_getglobal(L, "package");
    lua_getfield(L, -1, "searchpath");
    lua_pushfstring(L, "vela.%s", name);
    lua_getfield(L, -3, "path");
    lua_call(L, 2, 1);
    bool found = !lua_isnil(L, -1);
    lua_pop(L, 2);
    if (!found) return;
    lua_getglobal(L, "require");
    lua_pushfstring(L, "vela.%s", name);
    if (lua_pcall(L, 1, 1, 0) == LUA_OK) {
        lua_setglobal(L, name);
    } else {
        std::fprintf(stderr, "vela: module 'vela.%s' failed to load: %s\n", name, lua_tostring(L, -1));
        lua_pop(L, 1);
    }
}

// os.exit, as the shell installs it: queued device work finishes first (as
// when a script ends), then Lua's own os.exit (upvalue 1). Without it the
// process would exit with kernels still recorded, and the devices' static
// destructors would submit them while the Vulkan layers are being torn down.
static int os_exit(lua_State* L) {
    for (Device* d : open_devices()) {
        try {
            d->sync();
        } catch (const vela::Error& e) {
            std::fprintf(stderr, "vela: %s: %s\n", d->name().c_str(), e.what());
        }
    }
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
}

static void wrap_os_exit(lua_State* L) {
    lua_getglobal(L, "os");
    lua_getfield(L, -1, "exit");
    lua_pushcclosure(L, os_exit, 1);
    lua_setfield(L, -2, "exit");
    lua_pop(L, 1);
}

bool setup_state(lua_State* L) {
    luaL_openlibs(L);
    wrap_os_exit(L);
    set_package_path(L);
    lua_pushcfunction(L, require_vela);
    if (docall(L, 0, 0) != LUA_OK) {
        report(L, LUA_ERRRUN, "vela");
        return false;
    }
    open_shell_functions(L);
    for (const char* m : {"nn", "optim", "data", "plot", "torch", "dist", "parallel"}) load_module(L, m);
    return true;
}

}  // namespace vela::repl

// The argument checks every binding file uses (declared in lua/check.hpp):
// sizes, 1-based indices and seeds, each with a message naming the function
// and the argument.
#include <cmath>
#include <cstring>
#include <string>

#include "lua/check.hpp"

namespace vela::lua {

static constexpr lua_Number kMaxDim = 2147483647.0;  // 2^31 − 1

int64_t check_size(lua_State* L, int arg, const char* fn, const char* what) {
    if (lua_isinteger(L, arg)) {
        lua_Integer n = lua_tointeger(L, arg);
        if (n >= 0 && n <= lua_Integer(kMaxDim)) return n;
    }
    lua_Number x = luaL_checknumber(L, arg);
    if (!(x >= 0) || x != std::floor(x))
        luaL_error(L, "%s: %s must be a non-negative integer, got %s", fn, what, luaL_tolstring(L, arg, nullptr));
    if (x > kMaxDim)
        luaL_error(L, "%s: %s must be at most 2147483647, got %s", fn, what, luaL_tolstring(L, arg, nullptr));
    return int64_t(x);
}

int64_t check_index(lua_State* L, int arg, const char* fn, const char* what, int64_t n) {
    lua_Integer k;
    if (lua_isinteger(L, arg)) {
        k = lua_tointeger(L, arg);
    } else {
        lua_Number x = luaL_checknumber(L, arg);
        if (x != std::floor(x) || !(std::fabs(x) < 9.0e15))
            luaL_error(L, "%s: %s must be an integer, got %s", fn, what, luaL_tolstring(L, arg, nullptr));
        k = lua_Integer(x);
    }
    if (k < 1 || k > n) {
        if (n == 0) luaL_error(L, "%s: %s %I is out of range (the extent is 0)", fn, what, k);
        luaL_error(L, "%s: %s %I is out of range 1..%I%s", fn, what, k, lua_Integer(n),
                   k == 0 ? " (indices are 1-based)" : "");
    }
    return k - 1;
}

uint64_t check_seed(lua_State* L, int arg, const char* fn) {
    lua_Number x = luaL_checknumber(L, arg);
    if (!(x >= 0) || x != std::floor(x) || x >= 18446744073709551616.0)
        luaL_error(L, "%s: seed must be a non-negative integer, got %s", fn, luaL_tolstring(L, arg, nullptr));
    return lua_isinteger(L, arg) ? uint64_t(lua_tointeger(L, arg)) : uint64_t(x);
}

void check_option_keys(lua_State* L, int idx, const char* fn, std::initializer_list<const char*> keys) {
    idx = lua_absindex(L, idx);
    bool unknown = false;
    lua_pushnil(L);
    while (!unknown && lua_next(L, idx)) {
        lua_pop(L, 1);
        bool known = false;
        if (lua_type(L, -1) == LUA_TSTRING)
            for (const char* k : keys) known = known || std::strcmp(k, lua_tostring(L, -1)) == 0;
        if (!known) {
            unknown = true;
            lua_pop(L, 1);
        }
    }
    if (!unknown) return;
    // One wording for Lua's and C's option tables: options.check says it.
    lua_getglobal(L, "require");
    lua_pushliteral(L, "vela.options");
    if (lua_pcall(L, 1, 1, 0) == LUA_OK && lua_istable(L, -1) && lua_getfield(L, -1, "check") == LUA_TFUNCTION) {
        lua_pushstring(L, fn);
        lua_pushvalue(L, idx);
        lua_createtable(L, int(keys.size()), 0);
        int i = 0;
        for (const char* k : keys) lua_pushstring(L, k), lua_rawseti(L, -2, ++i);
        lua_pushinteger(L, 3);  // options.check, this C function, then its Lua caller
        lua_call(L, 4, 0);      // raises
    }
    std::string list;
    for (const char* k : keys) list += (list.empty() ? "" : ", ") + std::string(k);
    luaL_error(L, "%s: unknown option in the options table; options: %s", fn, list.c_str());
}

}  // namespace vela::lua

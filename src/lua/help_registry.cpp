// The documentation registry behind help() (help.cpp): doc() fills it beside
// each binding, vela.doc from Lua code. A value's documented name is found by
// resolving each registered name to the value it names now and comparing; the
// matches are cached in a weak table.
#include <map>
#include <string>

#include "lua/help.hpp"
#include "lua/help_registry.hpp"
#include "lua/vela.hpp"

namespace vela::lua {

namespace help {

std::map<std::string, Entry>& registry() {
    static std::map<std::string, Entry> docs;  // function-local: doc() may run during static init
    return docs;
}

bool split_name(const std::string& name, std::string& owner, std::string& field, char& sep) {
    size_t p = name.find_last_of(".:");
    if (p == std::string::npos) return false;
    owner = name.substr(0, p);
    field = name.substr(p + 1);
    sep = name[p];
    return true;
}

namespace {

const char* const cache_key = "vela.help.byvalue";

// Replaces the value on top with its field k, found without running code:
// a table's own field, else along its metatables' __index tables; for a
// userdata, its metatable's __index table or the metatable itself.
void field_of(lua_State* L, const std::string& k) {
    for (int hops = 0; hops < 5; ++hops) {
        if (lua_type(L, -1) == LUA_TTABLE) {
            lua_pushlstring(L, k.data(), k.size());
            if (lua_rawget(L, -2) != LUA_TNIL) {
                lua_remove(L, -2);
                return;
            }
            lua_pop(L, 1);
        }
        if (!lua_getmetatable(L, -1)) break;
        if (!push_methods(L, -1)) {
            lua_pop(L, 1);  // the metatable
            break;
        }
        lua_remove(L, -2);  // the metatable
        lua_remove(L, -2);  // the value: its methods table replaces it
    }
    lua_pop(L, 1);
    lua_pushnil(L);
}

// Pushes the value `name` refers to now, or nil: "Matrix:x" is a method of
// the matrix userdata; "a.b" walks the globals and, for a module not made
// global, package.loaded["vela.a"]; a plain name is a global or a field of
// the vela module.
void resolve(lua_State* L, const std::string& name) {
    std::string owner, field;
    char sep;
    if (!split_name(name, owner, field, sep)) {
        lua_pushglobaltable(L);
        field_of(L, name);
        if (lua_isnil(L, -1)) {
            lua_pop(L, 1);
            lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
            lua_getfield(L, -1, "vela");
            lua_remove(L, -2);
            field_of(L, name);
        }
        return;
    }
    if (owner == "Matrix") {
        luaL_getmetatable(L, "vela.Matrix");
        if (push_methods(L, -1)) lua_remove(L, -2);
    } else {
        resolve(L, owner);
        if (lua_isnil(L, -1)) {
            lua_pop(L, 1);
            lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
            std::string mod = "vela.";
            mod += owner;
            lua_getfield(L, -1, mod.c_str());
            lua_remove(L, -2);
        }
    }
    field_of(L, field);
}

// The weak table function -> name, made on first use.
void push_cache(lua_State* L) { push_weak_table(L, cache_key); }

}  // namespace

std::string name_of(lua_State* L, int idx) {
    idx = lua_absindex(L, idx);
    if (!lua_isfunction(L, idx) && !lua_isuserdata(L, idx) && !lua_istable(L, idx)) return "";
    push_cache(L);
    lua_pushvalue(L, idx);
    if (lua_rawget(L, -2) == LUA_TSTRING) {
        std::string n = lua_tostring(L, -1);
        lua_pop(L, 2);
        return n;
    }
    lua_pop(L, 1);
    // A miss: resolve every name; modules loaded since the last look are found too.
    std::string found;
    for (const auto& [name, e] : registry()) {
        resolve(L, name);
        if (lua_isfunction(L, -1)) {
            lua_pushvalue(L, -1);
            lua_pushlstring(L, name.data(), name.size());
            lua_rawset(L, -4);
            if (found.empty() && lua_rawequal(L, -1, idx)) found = name;
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return found;
}

void push_named(lua_State* L, const std::string& name) {
    resolve(L, name);
    if (!lua_isnil(L, -1)) return;
    lua_pop(L, 1);
    name_of(L, LUA_REGISTRYINDEX);  // a value no entry names: the miss fills the cache with every documented function
    push_cache(L);
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        if (lua_type(L, -1) == LUA_TSTRING && name == lua_tostring(L, -1)) {
            lua_pop(L, 1);
            lua_remove(L, -2);
            return;  // the key: the function
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    lua_pushnil(L);
}

// vela.doc(name, signature, text [, fn]): documents Lua code the way the
// C++ bindings document theirs; fn, when given, is tied to the entry at once.
// vela.doc(fn) -> the name fn is documented under, or nil; vela.doc(name) ->
// signature, text, or nil: the queries the documentation test makes.
int l_doc(lua_State* L) {
    if (lua_gettop(L) == 1) {
        if (lua_isfunction(L, 1)) {
            std::string n = name_of(L, 1);
            if (n.empty()) return 0;
            lua_pushlstring(L, n.data(), n.size());
            return 1;
        }
        const char* q = luaL_checkstring(L, 1);
        auto it = registry().find(q);
        if (it == registry().end()) return 0;
        lua_pushlstring(L, it->second.signature.data(), it->second.signature.size());
        lua_pushlstring(L, it->second.text.data(), it->second.text.size());
        return 2;
    }
    const char* name = luaL_checkstring(L, 1);
    const char* sig = luaL_checkstring(L, 2);
    const char* text = luaL_checkstring(L, 3);
    if (!lua_isnoneornil(L, 4)) luaL_checktype(L, 4, LUA_TFUNCTION);
    doc(name, sig, text);
    if (lua_isfunction(L, 4)) {
        push_cache(L);
        lua_pushvalue(L, 4);
        lua_pushstring(L, name);
        lua_rawset(L, -3);
    }
    return 0;
}

}  // namespace help

bool push_methods(lua_State* L, int mt) {
    mt = lua_absindex(L, mt);
    if (!lua_istable(L, mt)) return false;
    lua_pushliteral(L, "__index");
    int t = lua_rawget(L, mt);
    if (t == LUA_TTABLE) return true;
    if (t == LUA_TFUNCTION && lua_iscfunction(L, -1) && lua_getupvalue(L, -1, 1)) {
        if (lua_istable(L, -1)) {
            lua_remove(L, -2);
            return true;
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return false;
}

void doc(const char* name, const char* signature, const char* text) {
    help::registry()[name] = help::Entry{signature ? signature : "", text ? text : ""};
}

void doc(std::initializer_list<DocEntry> entries) {
    for (const DocEntry& e : entries) doc(e.name, e.signature, e.text);
}

std::string signature_of(lua_State* L, int idx) {
    if (!lua_isfunction(L, idx)) return "";
    int top = lua_gettop(L);
    std::string name = help::name_of(L, idx);
    lua_settop(L, top);
    if (name.empty()) return "";
    const help::Entry& e = help::registry().at(name);
    return e.signature.empty() ? name : e.signature;
}

}  // namespace vela::lua

// How values look at the prompt. Tables print nested with sorted keys, on one
// line when they fit and one entry per line when they do not, cut at a depth
// and a length so a big table never floods the terminal. Only __tostring runs
// user code, and it runs protected.
#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "lua/help.hpp"
#include "lua/text.hpp"
#include "repl/repl.hpp"

namespace vela::repl {

using vela::lua::safe_tostring;

namespace {

constexpr int max_depth = 3;          // nested tables deeper than this show as {...}
constexpr int max_entries = 40;       // entries shown per table
constexpr size_t inline_width = 72;   // a table fits on one line up to this width


std::string quote(const std::string& s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\t': out += "\\t"; break;
            case '\r': out += "\\r"; break;
            default:
                if (c < 32 || c == 127) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\%d", c);
                    out += buf;
                } else {
                    out += char(c);
                }
        }
    }
    return out + "\"";
}

bool is_identifier(const std::string& s) {
    static const std::set<std::string> keywords = {
        "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "goto", "if", "in",
        "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while"};
    if (s.empty() || !(isalpha((unsigned char)s[0]) || s[0] == '_')) return false;
    for (char c : s)
        if (!(isalnum((unsigned char)c) || c == '_')) return false;
    return !keywords.count(s);
}

std::string first_line(const std::string& s) {
    size_t nl = s.find('\n');
    return nl == std::string::npos ? s : s.substr(0, nl) + " ...";
}

bool has_tostring(lua_State* L, int idx) {
    if (luaL_getmetafield(L, idx, "__tostring") == LUA_TNIL) return false;
    lua_pop(L, 1);
    return true;
}

std::string render(lua_State* L, int idx, int depth, const std::string& indent, std::set<const void*>& path);

// A value inside a table: strings quoted, multi-line __tostring cut to its
// first line.
std::string render_nested(lua_State* L, int idx, int depth, const std::string& indent,
                          std::set<const void*>& path) {
    switch (lua_type(L, idx)) {
        case LUA_TSTRING: return quote(lua_tostring(L, idx));
        case LUA_TTABLE: return render(L, idx, depth, indent, path);
        case LUA_TFUNCTION: {
            std::string sig = vela::lua::signature_of(L, idx);
            if (!sig.empty()) return "function: " + sig;
            return safe_tostring(L, idx);
        }
        default: return first_line(safe_tostring(L, idx));
    }
}

struct Key {
    int type;
    double num = 0;
    std::string text;
    int ref;  // index of the key in the scratch table
};

bool key_less(const Key& a, const Key& b) {
    auto rank = [](int t) { return t == LUA_TNUMBER ? 0 : t == LUA_TSTRING ? 1 : t == LUA_TBOOLEAN ? 2 : 3; };
    if (rank(a.type) != rank(b.type)) return rank(a.type) < rank(b.type);
    if (a.type == LUA_TNUMBER) return a.num < b.num;
    return a.text < b.text;
}

std::string render(lua_State* L, int idx, int depth, const std::string& indent, std::set<const void*>& path) {
    idx = lua_absindex(L, idx);
    if (has_tostring(L, idx)) return first_line(safe_tostring(L, idx));
    const void* self = lua_topointer(L, idx);
    if (path.count(self)) return "<cycle>";
    if (depth >= max_depth) {
        lua_pushnil(L);
        bool empty = !lua_next(L, idx);
        if (!empty) lua_pop(L, 2);
        return empty ? "{}" : "{...}";
    }
    if (!lua_checkstack(L, 16)) return "{...}";
    path.insert(self);
    std::string inner = indent + "  ";
    std::vector<std::string> items;
    bool multiline = false;

    // The sequence part first, in order, without keys.
    lua_Integer n = 0;
    while (lua_rawgeti(L, idx, n + 1) != LUA_TNIL) {
        ++n;
        if (n <= max_entries) items.push_back(render_nested(L, -1, depth + 1, inner, path));
        lua_pop(L, 1);
    }
    lua_pop(L, 1);

    // Then every other key, sorted: numbers, strings, booleans, the rest. The
    // keys wait in a scratch table (not on the stack, which is small); past
    // max_sorted of them the rest are only counted.
    constexpr size_t max_sorted = 10000;
    int base = lua_gettop(L);
    lua_newtable(L);
    int scratch = lua_gettop(L);
    std::vector<Key> keys;
    size_t others = 0;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        if (lua_isinteger(L, -1) && lua_tointeger(L, -1) >= 1 && lua_tointeger(L, -1) <= n) continue;
        if (++others > max_sorted) continue;
        Key k;
        k.type = lua_type(L, -1);
        if (k.type == LUA_TNUMBER) k.num = lua_tonumber(L, -1);
        else if (k.type == LUA_TSTRING) k.text = lua_tostring(L, -1);
        else k.text = safe_tostring(L, -1);
        k.ref = int(keys.size()) + 1;
        lua_pushvalue(L, -1);
        lua_rawseti(L, scratch, k.ref);
        keys.push_back(k);
    }
    std::sort(keys.begin(), keys.end(), key_less);
    size_t total = size_t(n) + others;
    for (const Key& k : keys) {
        if (items.size() >= size_t(max_entries)) break;
        lua_rawgeti(L, scratch, k.ref);
        std::string key;
        if (k.type == LUA_TSTRING && is_identifier(k.text)) key = k.text;
        else if (k.type == LUA_TSTRING) key = "[" + quote(k.text) + "]";
        else key = "[" + safe_tostring(L, -1) + "]";
        lua_rawget(L, idx);
        items.push_back(key + " = " + render_nested(L, -1, depth + 1, inner, path));
        lua_pop(L, 1);
    }
    lua_settop(L, base);
    path.erase(self);

    if (total > items.size()) items.push_back("... (" + std::to_string(total - items.size()) + " more)");
    if (items.empty()) return "{}";
    size_t width = indent.size() + 2;
    for (const std::string& s : items) {
        width += s.size() + 2;
        if (s.find('\n') != std::string::npos) multiline = true;
    }
    if (!multiline && width <= inline_width) {
        std::string out = "{";
        for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
        return out + "}";
    }
    std::string out = "{\n";
    for (const std::string& s : items) out += inner + s + ",\n";
    return out + indent + "}";
}

}  // namespace

std::string show(lua_State* L, int idx) {
    idx = lua_absindex(L, idx);
    switch (lua_type(L, idx)) {
        case LUA_TSTRING: {
            size_t n;
            const char* p = lua_tolstring(L, idx, &n);
            return std::string(p, n);
        }
        case LUA_TTABLE: {
            if (has_tostring(L, idx)) return safe_tostring(L, idx);
            std::set<const void*> path;
            return render(L, idx, 0, "", path);
        }
        case LUA_TFUNCTION: {
            std::string sig = vela::lua::signature_of(L, idx);
            if (!sig.empty()) return "function: " + sig;
            return safe_tostring(L, idx);
        }
        default: return safe_tostring(L, idx);
    }
}

void print_results(lua_State* L, int base) {
    int top = lua_gettop(L);
    if (top <= base) return;
    std::string out;
    for (int i = base + 1; i <= top; ++i) {
        std::string s = show(L, i);
        if (i > base + 1) out += (out.find('\n') != std::string::npos || s.find('\n') != std::string::npos) ? "\n" : "\t";
        out += s;
    }
    out += "\n";
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
    lua_pushvalue(L, base + 1);
    lua_setglobal(L, "_");
}

}  // namespace vela::repl

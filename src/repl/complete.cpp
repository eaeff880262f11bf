// Tab completion: what the word before the cursor can become.
//   string.fo      fields of the table `string`
//   m:ad           methods of m, found through its metatable's __index
//   "data/mn       file names, inside a string literal
//   pri            globals and keywords
// Values are found with raw lookups and __index tables only, so completing
// never runs user code.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <string>

#include "lua/help.hpp"
#include "repl/repl.hpp"

namespace vela::repl {

namespace {

const char* const keywords[] = {"and", "break", "do", "else", "elseif", "end", "false", "for", "function",
                                "goto", "if", "in", "local", "nil", "not", "or", "repeat", "return", "then",
                                "true", "until", "while"};

bool ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

// Where the string literal around `end` starts (the index after its quote),
// or -1 when `end` is in code. Comments and long strings count as code: a
// file name is never completed there.
int string_start(const std::string& line, int end) {
    char quote = 0;
    int start = -1;
    for (int i = 0; i < end; ++i) {
        char c = line[i];
        if (quote) {
            if (c == '\\') ++i;
            else if (c == quote) quote = 0;
        } else if (c == '"' || c == '\'') {
            quote = c;
            start = i + 1;
        } else if (c == '-' && i + 1 < end && line[i + 1] == '-') {
            return -1;
        }
    }
    return quote ? start : -1;
}

void add_keys(lua_State* L, int t, const std::string& prefix, bool functions_only, std::set<std::string>& out) {
    t = lua_absindex(L, t);
    lua_pushnil(L);
    while (lua_next(L, t)) {
        if (lua_type(L, -2) == LUA_TSTRING) {
            std::string k = lua_tostring(L, -2);
            bool callable = lua_isfunction(L, -1) || (lua_istable(L, -1) && luaL_getmetafield(L, -1, "__call") != LUA_TNIL &&
                                                      (lua_pop(L, 1), true));
            bool hidden = k.compare(0, 2, "__") == 0 && prefix.compare(0, 2, "__") != 0;
            if (k.compare(0, prefix.size(), prefix) == 0 && !hidden && (!functions_only || callable) &&
                std::all_of(k.begin(), k.end(), ident_char) && !k.empty() && !isdigit((unsigned char)k[0]))
                out.insert(k);
        }
        lua_pop(L, 1);
    }
}

// The names after "<value>." or "<value>:": the value's own fields when it is
// a table, then along its metatables' method tables (vela::lua::push_methods).
// A userdata without one may keep its methods in the metatable itself.
void add_members(lua_State* L, const std::string& prefix, bool methods, std::set<std::string>& out) {
    int top = lua_gettop(L);
    for (int hops = 0; hops < 6; ++hops) {
        bool is_table = lua_istable(L, -1);
        if (is_table) add_keys(L, -1, prefix, methods, out);
        if (!lua_getmetatable(L, -1)) break;
        if (vela::lua::push_methods(L, -1)) {
            lua_remove(L, -2);
            lua_remove(L, -2);
            continue;
        }
        if (!is_table) add_keys(L, -1, prefix, methods, out);
        break;
    }
    lua_settop(L, top);
}

// Pushes the value of a dotted path ("a.b.c") from the globals, raw lookups
// and __index tables only; nil when any step is missing.
void push_path(lua_State* L, const std::string& path) {
    lua_pushglobaltable(L);
    size_t pos = 0;
    while (pos <= path.size()) {
        size_t dot = path.find('.', pos);
        if (dot == std::string::npos) dot = path.size();
        std::string k = path.substr(pos, dot - pos);
        pos = dot + 1;
        bool found = false;
        for (int hops = 0; hops < 6 && !lua_isnil(L, -1); ++hops) {
            if (lua_istable(L, -1)) {
                lua_pushlstring(L, k.data(), k.size());
                if (lua_rawget(L, -2) != LUA_TNIL) {
                    lua_remove(L, -2);
                    found = true;
                    break;
                }
                lua_pop(L, 1);
            }
            if (!lua_getmetatable(L, -1)) break;
            if (!vela::lua::push_methods(L, -1)) {
                lua_pop(L, 1);
                break;
            }
            lua_remove(L, -2);  // the metatable
            lua_remove(L, -2);  // the value: its methods replace it
        }
        if (!found) {
            lua_pop(L, 1);
            lua_pushnil(L);
            return;
        }
    }
}

Completion complete_file(const std::string& typed, int start) {
    Completion c;
    c.start = start;
    size_t slash = typed.rfind('/');
    std::string dirpart = slash == std::string::npos ? "" : typed.substr(0, slash + 1);
    std::string base = slash == std::string::npos ? typed : typed.substr(slash + 1);
    std::string dir = dirpart.empty() ? "." : dirpart;
    if (dir[0] == '~') {
        const char* home = std::getenv("HOME");
        if (home) dir = home + dir.substr(1);
    }
    DIR* d = opendir(dir.c_str());
    if (!d) return c;
    while (dirent* e = readdir(d)) {
        std::string name = e->d_name;
        if (name == "." || name == "..") continue;
        if (name[0] == '.' && (base.empty() || base[0] != '.')) continue;
        if (name.compare(0, base.size(), base) != 0) continue;
        struct stat st;
        bool is_dir = ::stat((dir + "/" + name).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
        c.words.push_back(dirpart + name + (is_dir ? "/" : ""));
    }
    closedir(d);
    std::sort(c.words.begin(), c.words.end());
    return c;
}

}  // namespace

Completion complete(lua_State* L, const std::string& line, int end) {
    end = std::min<int>(end, int(line.size()));
    int s = string_start(line, end);
    if (s >= 0) return complete_file(line.substr(s, end - s), s);

    // The expression before the cursor: names joined by '.', maybe one ':'.
    int start = end;
    while (start > 0 && (ident_char(line[start - 1]) || line[start - 1] == '.' || line[start - 1] == ':')) --start;
    std::string expr = line.substr(start, end - start);
    Completion c;
    c.start = start;
    std::set<std::string> names;
    int top = lua_gettop(L);
    size_t sep = expr.find_last_of(".:");
    if (sep == std::string::npos) {
        lua_pushglobaltable(L);
        add_members(L, expr, false, names);
        for (const char* k : keywords)
            if (std::string(k).compare(0, expr.size(), expr) == 0) names.insert(k);
        for (const std::string& n : names) c.words.push_back(n);
    } else {
        std::string base = expr.substr(0, sep), prefix = expr.substr(sep + 1);
        bool method = expr[sep] == ':';
        if (base.find(':') == std::string::npos && !base.empty()) {
            push_path(L, base);
            if (!lua_isnil(L, -1)) add_members(L, prefix, method, names);
        }
        for (const std::string& n : names) c.words.push_back(base + expr[sep] + n);
    }
    lua_settop(L, top);
    return c;
}

}  // namespace vela::repl

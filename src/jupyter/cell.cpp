// A notebook cell compiled as the shell compiles what is typed at its prompt
// (repl/loop.cpp), with one addition: the last statement's value is shown.
#include <cstring>
#include <string>
#include <vector>

#include "jupyter/kernel.hpp"
#include "repl/repl.hpp"

namespace vela::jupyter {

namespace {

std::string trim(const std::string& s) {
    size_t b = s.find_first_not_of(" \t\r\n");
    if (b == std::string::npos) return "";
    size_t e = s.find_last_not_of(" \t\r\n");
    return s.substr(b, e - b + 1);
}

bool try_load(lua_State* L, const std::string& text, const std::string& name) {
    if (luaL_loadbuffer(L, text.data(), text.size(), name.c_str()) == LUA_OK) return true;
    lua_pop(L, 1);
    return false;
}

// The starts of the cell's lines (at most the last 64: a longer final
// statement is rare, and each try compiles the whole cell).
std::vector<size_t> line_starts(const std::string& code) {
    std::vector<size_t> starts{0};
    for (size_t i = 0; i < code.size(); ++i)
        if (code[i] == '\n' && i + 1 < code.size()) starts.push_back(i + 1);
    if (starts.size() > 64) starts.erase(starts.begin(), starts.end() - 64);
    return starts;
}

// Compiles the cell with its trailing lines returned, for the first split
// where those lines are one expression and the lines before them are whole
// statements (so the return is at the cell's top level, never inside a loop
// whose body happens to end with a call). Pushes the function when found.
bool load_with_last_returned(lua_State* L, const std::string& body, const std::string& name) {
    std::vector<size_t> starts = line_starts(body);
    for (size_t k = starts.size(); k-- > 1;) {
        std::string head = body.substr(0, starts[k]), tail = body.substr(starts[k]);
        if (!try_load(L, "return " + tail, name)) continue;
        lua_pop(L, 1);
        if (!try_load(L, head, name)) continue;
        lua_pop(L, 1);
        if (try_load(L, head + "return " + tail, name)) return true;
    }
    return false;
}

}  // namespace

int load_cell(lua_State* L, const std::string& text, const std::string& chunkname, Cell& cell) {
    std::string name = "=" + chunkname;
    std::string code = trim(text);
    if (!code.empty() && code[0] == '?') {
        cell.print = false;
        cell.help = trim(code.substr(1));
        const char* call = cell.help.empty() ? "help()" : "help(...)";
        return luaL_loadbuffer(L, call, std::strlen(call), name.c_str());
    }
    if (!code.empty() && code.back() == ';') {
        cell.print = false;
        code = trim(code.substr(0, code.size() - 1));
    }
    // Line numbers in messages are the cell's: the text keeps its lines.
    std::string body = text.substr(0, text.find_last_not_of(" \t\r\n;") + 1);
    if (!code.empty() && try_load(L, "return " + body, name)) return LUA_OK;
    int status = luaL_loadbuffer(L, body.data(), body.size(), name.c_str());
    if (status == LUA_OK) {
        // A cell of statements whose last one is also an expression (a call)
        // shows that call's values, as a notebook user expects.
        if (load_with_last_returned(L, body, name)) lua_remove(L, -2);
        return LUA_OK;
    }
    // Statements, then a last line that is an expression ("m = zeros(2, 2)\nm").
    if (load_with_last_returned(L, body, name)) {
        lua_remove(L, -2);  // the statements' syntax error
        return LUA_OK;
    }
    return status;
}

std::string completeness(lua_State* L, const std::string& text) {
    std::string code = trim(text);
    if (code.empty() || code[0] == '?') return "complete";
    int top = lua_gettop(L);
    int s1 = luaL_loadbuffer(L, code.data(), code.size(), "=cell");
    bool more = repl::incomplete(L, s1);
    lua_settop(L, top);
    if (s1 == LUA_OK) return "complete";
    std::string ret = "return " + code;
    int s2 = luaL_loadbuffer(L, ret.data(), ret.size(), "=cell");
    more = more || repl::incomplete(L, s2);
    lua_settop(L, top);
    if (s2 == LUA_OK) return "complete";
    return more ? "incomplete" : "invalid";
}

size_t byte_offset(const std::string& text, int pos) {
    size_t i = 0;
    for (int n = 0; i < text.size() && n < pos; ++n) {
        ++i;
        while (i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) ++i;
    }
    return i;
}

int code_points(const std::string& text, size_t bytes) {
    int n = 0;
    for (size_t i = 0; i < bytes && i < text.size(); ++i)
        if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) ++n;
    return n;
}

}  // namespace vela::jupyter

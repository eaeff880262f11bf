// The text helpers of lua/text.hpp.
#include "lua/text.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace vela::lua {

double now() {
    using namespace std::chrono;
    return duration<double>(steady_clock::now().time_since_epoch()).count();
}

const char* format_bytes(char* out, size_t size, uint64_t bytes) {
    static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = double(bytes);
    int u = 0;
    while (v >= 1024 && u < 4) v /= 1024, u++;
    if (u == 0)
        std::snprintf(out, size, "%llu B", (unsigned long long)bytes);
    else
        std::snprintf(out, size, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s", v, units[u]);
    return out;
}

std::string format_seconds(double s, bool brief) {
    char buf[32];
    if (s >= 1)
        std::snprintf(buf, sizeof buf, brief ? "%.2f s" : "%.3f s", s);
    else if (s >= 1e-3)
        std::snprintf(buf, sizeof buf, brief ? "%.1f ms" : "%.3f ms", s * 1e3);
    else
        std::snprintf(buf, sizeof buf, brief ? "%.0f µs" : "%.2f µs", s * 1e6);
    return buf;
}

void out(const std::string& s) {
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
}

size_t screen_width() {
    winsize ws{};
    if (isatty(1) && ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
    if (const char* c = std::getenv("COLUMNS")) {
        char* end = nullptr;
        long n = std::strtol(c, &end, 10);
        if (end != c && *end == '\0' && n >= 20 && n <= 10000) return size_t(n);
    }
    return 80;
}

// Display width of UTF-8 text (×, µ, … count as one column).
size_t width_of(const std::string& s) {
    size_t w = 0;
    for (unsigned char c : s) w += (c & 0xC0) != 0x80;
    return w;
}

// Cuts text longer than n columns, ending it with "…".
std::string clip(const std::string& s, size_t n) {
    if (width_of(s) <= n) return s;
    std::string r;
    size_t w = 0;
    for (size_t k = 0; k < s.size(); k++) {
        unsigned char c = static_cast<unsigned char>(s[k]);
        if ((c & 0xC0) != 0x80 && ++w > n - 1) break;
        r += s[k];
    }
    return r + "…";
}

// Rows as aligned columns, two spaces apart; the columns flagged in
// `right` are right-aligned (numbers). Row 0 is the header.
std::string table_text(const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right) {
    std::vector<size_t> w;
    for (const auto& r : rows) {
        if (w.size() < r.size()) w.resize(r.size(), 0);
        for (size_t c = 0; c < r.size(); c++) w[c] = std::max(w[c], width_of(r[c]));
    }
    std::string s;
    for (const auto& r : rows) {
        std::string line;
        for (size_t c = 0; c < r.size(); c++) {
            std::string pad(w[c] - width_of(r[c]), ' ');
            bool ra = c < right.size() && right[c];
            line += ra ? pad + r[c] : r[c] + (c + 1 < r.size() ? pad : "");
            if (c + 1 < r.size()) line += "  ";
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        s += line + "\n";
    }
    return s;
}

static int summary_tostring(lua_State* L) {
    lua_pushvalue(L, lua_upvalueindex(1));
    return 1;
}

void set_report(lua_State* L, const std::string& text) {
    lua_createtable(L, 0, 1);
    lua_pushlstring(L, text.data(), text.size());
    lua_pushcclosure(L, summary_tostring, 1);
    lua_setfield(L, -2, "__tostring");
    lua_setmetatable(L, -2);
}

static int tostring_k(lua_State* L) {
    luaL_tolstring(L, 1, nullptr);
    return 1;
}

// luaL_tolstring in protected mode: a failing __tostring must not leave the
// printer half done.
std::string safe_tostring(lua_State* L, int idx) {
    idx = lua_absindex(L, idx);
    lua_pushcfunction(L, tostring_k);
    lua_pushvalue(L, idx);
    std::string s;
    if (lua_pcall(L, 1, 1, 0) == LUA_OK) {
        size_t n;
        const char* p = lua_tolstring(L, -1, &n);
        s = p ? std::string(p, n) : std::string("?");
    } else {
        const char* e = lua_tostring(L, -1);
        s = std::string("<__tostring failed: ") + (e ? e : "?") + ">";
    }
    lua_pop(L, 1);
    return s;
}

void push_weak_table(lua_State* L, const char* key) {
    if (lua_getfield(L, LUA_REGISTRYINDEX, key) == LUA_TTABLE) return;
    lua_pop(L, 1);
    lua_newtable(L);
    lua_newtable(L);
    lua_pushliteral(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, key);
}

}  // namespace vela::lua

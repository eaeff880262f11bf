// Values as Jupyter's MIME bundles: every value as the prompt prints it
// (text/plain), a matrix also as an HTML table built from that same printed
// form, so the notebook summarizes exactly as the shell does. Also the Lua
// side of rich output: display(x), vela._display_bundle{...} (plot's SVG) and
// vela._progress(line [, final]) (nn.fit's one updating line).
#include <chrono>
#include <sstream>
#include <string>
#include <vector>

#include "jupyter/kernel.hpp"
#include "jupyter/publish.hpp"
#include "lua/check.hpp"
#include "lua/vela.hpp"
#include "repl/repl.hpp"

namespace vela::jupyter {

namespace {

std::string escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '&':
                out += "&amp;";
                break;
            case '"':
                out += "&quot;";
                break;
            default:
                out += c;
        }
    }
    return out;
}

std::vector<std::string> split_lines(const std::string& s) {
    std::vector<std::string> lines;
    std::istringstream in(s);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

std::vector<std::string> split_words(const std::string& s) {
    std::vector<std::string> words;
    std::istringstream in(s);
    for (std::string w; in >> w;) words.push_back(w);
    return words;
}

// display(x): x as rich output, in place; returns nothing.
int l_display(lua_State* L) {
    luaL_checkany(L, 1);
    publish_display(mime_bundle(L, 1), "", false);
    return 0;
}

// vela._display_bundle{[mime] = text, ...}: shows a bundle made in Lua (plot's SVG
// with its text fallback).
int l_display_bundle(lua_State* L) {
    luaL_checktype(L, 1, LUA_TTABLE);
    nlohmann::json data = nlohmann::json::object();
    lua_pushnil(L);
    while (lua_next(L, 1)) {
        if (lua_type(L, -2) != LUA_TSTRING || lua_type(L, -1) != LUA_TSTRING)
            return luaL_error(L, "vela._display_bundle: expected {[mime type] = string}, got a %s key with a %s value",
                              luaL_typename(L, -2), luaL_typename(L, -1));
        size_t n;
        const char* v = lua_tolstring(L, -1, &n);
        data[lua_tostring(L, -2)] = std::string(v, n);
        lua_pop(L, 1);
    }
    publish_display(data, "", false);
    return 0;
}

// vela._progress(line [, final]): one line updated in place; the next line
// after a final one starts a new display. Updates that are not final come at
// most every 0.1 s: nn.fit on a small set runs hundreds of epochs a second,
// and eight messages an epoch overflowed the iopub socket, which then
// dropped the cell's error and its idle status (the notebook showed the cell
// running forever).
int l_progress(lua_State* L) {
    static std::string id;
    static int count = 0;
    static std::chrono::steady_clock::time_point last{};
    std::string text = luaL_checkstring(L, 1);
    bool final = lua_toboolean(L, 2);
    const auto now = std::chrono::steady_clock::now();
    if (!id.empty() && !final && now - last < std::chrono::milliseconds(100)) return 0;
    last = now;
    nlohmann::json data = {{"text/plain", text}};
    if (id.empty()) {
        id = "vela-progress-" + std::to_string(++count);
        publish_display(data, id, false);
    } else {
        publish_display(data, id, true);
    }
    if (final) id.clear();
    return 0;
}

}  // namespace

std::string matrix_html(const std::string& printed) {
    std::vector<std::string> lines = split_lines(printed);
    if (lines.empty()) return "";
    // "matrix 3×4 float32 on cpu"
    std::vector<std::string> head = split_words(lines[0]);
    std::string html = "<div class=\"vela-matrix\">";
    if (head.size() == 5 && head[0] == "matrix" && head[3] == "on")
        html += "<div><b>matrix</b> shape <b>" + escape(head[1]) + "</b>, dtype <b>" + escape(head[2]) +
                "</b>, device <b>" + escape(head[4]) + "</b></div>";
    else
        html += "<div>" + escape(lines[0]) + "</div>";
    size_t first = 1;
    if (lines.size() > 1 && lines[1].find('*') != std::string::npos) {  // the scale line, "1e+06 *"
        html += "<div>values × " + escape(split_words(lines[1])[0]) + "</div>";
        first = 2;
    }
    if (lines.size() > first) {
        html += "<table style=\"font-family: monospace\">";
        for (size_t i = first; i < lines.size(); ++i) {
            html += "<tr>";
            for (const std::string& w : split_words(lines[i]))
                html += "<td style=\"text-align: right\">" + escape(w) + "</td>";
            html += "</tr>";
        }
        html += "</table>";
    }
    return html + "</div>";
}

nlohmann::json mime_bundle(lua_State* L, int idx) {
    idx = lua_absindex(L, idx);
    std::string plain = repl::show(L, idx);
    nlohmann::json data = {{"text/plain", plain}};
    if (luaL_testudata(L, idx, vela::lua::kMatrixType)) data["text/html"] = matrix_html(plain);
    return data;
}

void open_rich(lua_State* L) {
    lua_register(L, "display", l_display);
    lua_getglobal(L, "vela");
    if (lua_istable(L, -1)) {
        lua_pushcfunction(L, l_display_bundle);
        lua_setfield(L, -2, "_display_bundle");
        lua_pushcfunction(L, l_progress);
        lua_setfield(L, -2, "_progress");
    }
    lua_pop(L, 1);
}

}  // namespace vela::jupyter

// save and load (NumPy's .npy and .npz, so numpy.load reads what vela wrote and
// vela reads what NumPy wrote: the formats are src/lua/npy.cpp), the seed
// sequence checkpoints keep, and the terminal's width.
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/ops.hpp"
#include "core/registry.hpp"
#include "lua/check.hpp"
#include "lua/npy.hpp"
#include "lua/vela.hpp"

namespace vela::lua {

namespace {

using namespace npy;

bool ends_with(const std::string& s, const char* suffix) {
    size_t n = std::strlen(suffix);
    return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

/* ---------------------------------------------------------------------- */
/* the Lua functions                                                      */
/* ---------------------------------------------------------------------- */

// The matrices load made from 1-D arrays (a weak set in the registry), so
// save writes them back 1-D (shape (n,)) while they are still n×1.
const char* const kOneD = "vela.npy.one_d";

void push_one_d(lua_State* L) {
    if (lua_getfield(L, LUA_REGISTRYINDEX, kOneD) == LUA_TTABLE) return;
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushliteral(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_pushvalue(L, -1);
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lua_setfield(L, LUA_REGISTRYINDEX, kOneD);
}

// Whether the matrix at idx came from a 1-D array and is still a column.
bool is_one_d(lua_State* L, int idx, const Matrix& m) {
    idx = lua_absindex(L, idx);
    push_one_d(L);
    lua_pushvalue(L, idx);
    bool one_d = lua_rawget(L, -2) != LUA_TNIL && m.cols == 1;
    lua_pop(L, 2);
    return one_d;
}

// Marks the matrix on top as made from a 1-D array.
void mark_one_d(lua_State* L) {
    push_one_d(L);
    lua_pushvalue(L, -2);
    lua_pushboolean(L, 1);
    lua_rawset(L, -3);
    lua_pop(L, 1);
}

// save(path, m)  |  save(path, {name = m | string, ...}). Runs inside
// guarded(): every failure is a vela::Error, so no C++ object is alive when
// the Lua error is raised.
void save_value(lua_State* L) {
    std::string path = lua_tostring(L, 1);
    std::string what = "save: '" + path + "'";
    if (Matrix* m = test_matrix(L, 2)) {
        if (ends_with(path, ".npz"))
            throw Error(what + " ends in .npz but the value is one matrix (give a table of named matrices, or "
                               "name the file .npy)");
        if (!ends_with(path, ".npy"))  // numpy.save appends .npy; writing NumPy bytes to x.txt would surprise
            throw Error(what + ": a matrix is written as NumPy .npy; name the file ….npy (a table of named "
                               "matrices: .npz)");
        check_live("save", "m", *m);
        Array a = from_matrix(*m);
        a.one_d = is_one_d(L, 2, *m);
        write_file(path, npy_bytes(a), what);
        return;
    }
    if (!lua_istable(L, 2))
        throw Error(std::string("save: the value must be a matrix (.npy) or a table of named matrices (.npz), got ") +
                    luaL_typename(L, 2));
    lua_pushnil(L);
    if (!lua_next(L, 2)) throw Error(what + ": the table is empty, nothing to write (give {name = m, ...})");
    lua_pop(L, 2);
    std::map<std::string, Entry> entries;
    lua_pushnil(L);
    while (lua_next(L, 2)) {
        if (lua_type(L, -2) != LUA_TSTRING) {
            std::string t = luaL_typename(L, -2);
            lua_pop(L, 2);
            throw Error(what + ": every key must be a name (a string), got a " + t + " key");
        }
        std::string name = lua_tostring(L, -2);
        Entry e;
        if (Matrix* m = test_matrix(L, -1)) {
            bool one_d = is_one_d(L, -1, *m);
            lua_pop(L, 1);
            if (name.empty() || name.find('/') != std::string::npos || name.find('\\') != std::string::npos)
                throw Error(what + ": '" + name + "' is not a member name for a .npz");
            check_live("save", name.c_str(), *m);
            e.array = from_matrix(*m);
            e.array.one_d = one_d;
        } else if (lua_type(L, -1) == LUA_TSTRING) {
            size_t len;
            const char* t = lua_tolstring(L, -1, &len);
            e.is_text = true;
            e.text.assign(t, len);
            lua_pop(L, 1);
        } else {
            std::string t = luaL_typename(L, -1);
            lua_pop(L, 2);
            throw Error(what + ": the value of '" + name + "' is a " + t + " (expected a matrix or a string)");
        }
        entries[name] = std::move(e);
    }
    write_npz(path, entries, what);
}

// A path is a string: a number would silently become a file named "2".
void check_path(lua_State* L) {
    if (lua_type(L, 1) != LUA_TSTRING) luaL_typeerror(L, 1, "string (a file path)");
}

int l_save(lua_State* L) {
    check_nargs(L, 2);
    check_path(L);
    guarded(L, [&] { save_value(L); });
    return 0;
}

// load(path [, dev]) -> matrix (.npy) | {name = matrix | string, ...} (.npz).
// The file decides which: a zip's "PK" or NumPy's magic.
void load_value(lua_State* L, Device& dev) {
    std::string path = lua_tostring(L, 1);
    std::string what = "load: '" + path + "'";
    std::string bytes = read_file(path, what);
    if (bytes.size() >= 6 && std::memcmp(bytes.data(), "\x93NUMPY", 6) == 0) {
        Array a = parse_npy(bytes, what);
        Matrix m = to_matrix(a, dev);
        push_matrix(L, std::move(m));
        if (a.one_d) mark_one_d(L);
        return;
    }
    if (bytes.size() < 4 || std::memcmp(bytes.data(), "PK\x03\x04", 4) != 0)
        throw Error(what + " is neither a .npy file (\\x93NUMPY magic) nor a .npz (zip) file");
    bytes.clear();
    std::map<std::string, Entry> entries = read_npz(path, what);
    std::vector<std::pair<std::string, Matrix>> mats;
    for (auto& [name, e] : entries)
        if (!e.is_text) mats.emplace_back(name, to_matrix(e.array, dev));
    lua_createtable(L, 0, int(entries.size()));
    for (auto& [name, m] : mats) {
        push_matrix(L, std::move(m));
        if (entries[name].array.one_d) mark_one_d(L);
        lua_setfield(L, -2, name.c_str());
    }
    for (auto& [name, e] : entries) {
        if (!e.is_text) continue;
        lua_pushlstring(L, e.text.data(), e.text.size());
        lua_setfield(L, -2, name.c_str());
    }
}

int l_load(lua_State* L) {
    check_nargs(L, 2);
    check_path(L);
    Device* d = test_device(L, 2);
    Device& dev = d ? *d : current_device();
    lua_settop(L, 1);
    guarded(L, [&] { load_value(L, dev); });
    return 1;
}

// _seed_sequence() -> seed, count  |  _seed_sequence(seed, count): the state
// of rand/randn's seed sequence, for checkpoints (nn.save keeps it).
int l_seed_sequence(lua_State* L) {
    if (lua_gettop(L) >= 2) {
        set_seed_sequence(uint64_t(luaL_checkinteger(L, 1)), uint64_t(luaL_checkinteger(L, 2)));
        return 0;
    }
    uint64_t s, c;
    seed_sequence(s, c);
    lua_pushinteger(L, lua_Integer(s));
    lua_pushinteger(L, lua_Integer(c));
    return 2;
}

// terminal_width() -> columns of the terminal on stdout, or nil when stdout
// is not a terminal (a pipe, a file): progress bars draw only on a terminal.
int l_terminal_width(lua_State* L) {
    check_nargs(L, 0);
    if (!isatty(1)) return 0;
    winsize ws{};
    int cols = ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 80;
    lua_pushinteger(L, cols);
    return 1;
}

}  // namespace

void open_io(lua_State* L) {
    static const luaL_Reg fns[] = {
        {"save", l_save}, {"load", l_load}, {"_seed_sequence", l_seed_sequence},
        {"terminal_width", l_terminal_width}, {nullptr, nullptr}};
    luaL_setfuncs(L, fns, 0);
    doc("terminal_width", "terminal_width() -> columns | nil",
        "The width of the terminal on stdout, or nil when stdout is not a terminal (redirected to a file or a "
        "pipe): nn.fit draws its progress bar only on a terminal, sized to it.");
    doc("save", "vela.save(path, m)  |  vela.save(path, {name = m, ...})",
        "Writes a matrix as NumPy .npy (float32 or uint8, Fortran order: numpy.load reads it as rows×cols), or a "
        "table of named matrices as .npz (numpy.savez's layout; string values become text members). The file is "
        "written under a temporary name and renamed when complete. In the shell: save(path, m). torch.save / "
        "numpy.save.");
    doc("vela.load", "vela.load(path [, dev]) -> matrix  |  {name = matrix, ...}",
        "Reads a .npy (a matrix; 1-D arrays become n×1 columns; float64 and int arrays are converted to float32) "
        "or a .npz (a table of matrices) written by vela or NumPy, onto dev (default: the current device). A bad, "
        "truncated or foreign file is an error naming it. The shell's global load is Lua's: call vela.load. "
        "torch.load / numpy.load.");
}

}  // namespace vela::lua

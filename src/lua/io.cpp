// save and load (NumPy's .npy and .npz, so numpy.load reads what vela wrote and
// vela reads what NumPy wrote: the formats are src/lua/npy.cpp), the seed
// sequence checkpoints keep, and the terminal's width.
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
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
#include "lua/file_io.hpp"
#include "lua/npy.hpp"
#include "lua/npz.hpp"
#include "lua/vela.hpp"

namespace vela::lua {

namespace {

bool ends_with(const std::string& s, const char* suffix) {
    size_t n = std::strlen(suffix);
    return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// A Ctrl-C that came after the last moment a save could still be abandoned:
// the file is saved, and the message says so (the shell's "interrupted!"
// would read as a failed save).
void interrupted_after(const std::string& what) {
    if (interrupt_flag().exchange(false))
        throw Interrupted(what + ": interrupted after the file was written in full (it is saved)");
}

// A matrix that load made from a 1-D (or 0-D) NumPy array remembers it, so
// that saving that matrix writes the array's shape again: a table in the
// registry, weak in its keys (the matrices' userdata), maps each such matrix
// to its ndim. Copies, views and results are new userdata: 2-D.
constexpr const char* kNdimKey = "vela.npy_ndim";

void mark_ndim(lua_State* L, int idx, int ndim) {
    if (ndim == 2) return;
    idx = lua_absindex(L, idx);
    if (lua_getfield(L, LUA_REGISTRYINDEX, kNdimKey) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_createtable(L, 0, 1);
        lua_pushliteral(L, "k");
        lua_setfield(L, -2, "__mode");
        lua_setmetatable(L, -2);
        lua_pushvalue(L, -1);
        lua_setfield(L, LUA_REGISTRYINDEX, kNdimKey);
    }
    lua_pushvalue(L, idx);
    lua_pushinteger(L, ndim);
    lua_rawset(L, -3);
    lua_pop(L, 1);
}

// The ndim to save the matrix at idx with (2 unless load marked it).
int marked_ndim(lua_State* L, int idx) {
    idx = lua_absindex(L, idx);
    int ndim = 2;
    if (lua_getfield(L, LUA_REGISTRYINDEX, kNdimKey) == LUA_TTABLE) {
        lua_pushvalue(L, idx);
        if (lua_rawget(L, -2) == LUA_TNUMBER) ndim = int(lua_tointeger(L, -1));
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return ndim;
}

/* ---------------------------------------------------------------------- */
/* the Lua functions                                                      */
/* ---------------------------------------------------------------------- */

// save(path, m)  |  save(path, {name = m | string, ...}). Runs inside
// guarded(): every failure is a vela::Error, so no C++ object is alive when
// the Lua error is raised.
void save_value(lua_State* L) {
    std::string path = lua_tostring(L, 1);
    std::string what = "save: '" + path + "'";
    if (path.find('\0') != std::string::npos) throw Error("save: the path contains a NUL byte");
    if (Matrix* m = test_matrix(L, 2)) {
        if (ends_with(path, ".npz"))
            throw Error(what + " ends in .npz but the value is one matrix (give a table of named matrices, or "
                               "name the file .npy)");
        // An extension other than .npy (x.txt, x.csv) would hold NumPy bytes by surprise; none is left as given.
        std::string base = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
        if (base.find('.') != std::string::npos && base.find_last_of('.') > 0 && !ends_with(path, ".npy"))
            throw Error(what + ": a matrix is written as NumPy .npy; name the file ….npy (a table of named "
                               "matrices: .npz)");
        check_live("save", "m", *m);
        files::Writer w(path, what);
        std::string header = npy::header_for(*m, marked_ndim(L, 2));
        w.write(header.data(), header.size());
        npy::write_data(*m, [&](const void* p, size_t n) { w.write(p, n); });
        w.commit();
        interrupted_after(what);
        return;
    }
    if (!lua_istable(L, 2))
        throw Error(std::string("save: the value must be a matrix (.npy) or a table of named matrices (.npz), got ") +
                    luaL_typename(L, 2));
    lua_pushnil(L);
    if (!lua_next(L, 2)) throw Error(what + ": the table is empty, nothing to write (give {name = m, ...})");
    lua_pop(L, 2);
    std::map<std::string, npz::Member> entries;  // sorted by name: the file does not depend on table order
    lua_pushnil(L);
    while (lua_next(L, 2)) {
        if (lua_type(L, -2) != LUA_TSTRING) {
            std::string t = luaL_typename(L, -2);
            lua_pop(L, 2);
            throw Error(what + ": every key must be a name (a string), got a " + t + " key");
        }
        size_t klen;
        const char* k = lua_tolstring(L, -2, &klen);
        std::string name(k, klen);
        npz::Member e;
        e.name = name;
        if (name.empty() || name.find('/') != std::string::npos || name.find('\\') != std::string::npos ||
            name.find('\0') != std::string::npos || name.size() > 60000) {
            lua_pop(L, 2);
            throw Error(what + ": '" + name.c_str() + "' (" + std::to_string(klen) +
                        " bytes) is not a member name for a .npz (no '/', '\\' or NUL byte)");
        }
        if (Matrix* m = test_matrix(L, -1)) {
            e.ndim = marked_ndim(L, -1);
            lua_pop(L, 1);
            check_live("save", name.c_str(), *m);
            e.matrix = *m;
        } else if (lua_type(L, -1) == LUA_TSTRING) {
            size_t len;
            const char* t = lua_tolstring(L, -1, &len);
            e.is_text = true;
            e.text.assign(t, len);
            lua_pop(L, 1);
            if (ends_with(name, ".npy"))
                throw Error(what + ": the text member '" + name + "' would read back as a matrix (its name ends in .npy)");
        } else {
            std::string t = luaL_typename(L, -1);
            lua_pop(L, 2);
            throw Error(what + ": the value of '" + name + "' is a " + t + " (expected a matrix or a string)");
        }
        entries[name] = std::move(e);
    }
    std::vector<npz::Member> members;
    for (auto& [name, e] : entries) members.push_back(std::move(e));
    npz::write(path, members, what);
    interrupted_after(what);
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
    if (path.find('\0') != std::string::npos) throw Error("load: the path contains a NUL byte");
    bool zip;
    {
        files::Reader r(path, what);  // a regular file, or an error
        char magic[6] = {0};
        r.read(magic, size_t(std::min<uint64_t>(6, r.size())));
        zip = r.size() >= 4 && (std::memcmp(magic, "PK\x03\x04", 4) == 0 || std::memcmp(magic, "PK\x05\x06", 4) == 0);
        if (!zip && !(r.size() >= 6 && std::memcmp(magic, "\x93NUMPY", 6) == 0))
            throw Error(what + " is neither a .npy file (\\x93NUMPY magic) nor a .npz (zip) file");
    }
    if (!zip) {
        files::Reader r(path, what);
        npy::ReadFn read = [&](void* dst, size_t n) { r.read(dst, n); };
        npy::Header h = npy::read_header(read, r.size(), what);
        push_matrix(L, npy::read_data(h, read, dev, what));
        mark_ndim(L, -1, h.ndim);
        return;
    }
    std::vector<npz::Member> members = npz::read(path, dev, what);
    lua_createtable(L, 0, int(members.size()));
    for (npz::Member& m : members) {
        if (m.is_text) lua_pushlstring(L, m.text.data(), m.text.size());
        else {
            push_matrix(L, std::move(m.matrix));
            mark_ndim(L, -1, m.ndim);
        }
        lua_setfield(L, -2, m.name.c_str());
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

// vela._files.npz_index(path, fn) -> {name = {rows =, cols =, dtype =} | "text", ...}: a
// .npz's members without loading a matrix (checkpoints check shapes first).
int l_npz_index(lua_State* L) {
    check_path(L);
    std::string fn = luaL_checkstring(L, 2);
    lua_settop(L, 2);
    guarded(L, fn.c_str(), [&] {
        std::string path = lua_tostring(L, 1);
        std::vector<npz::Member> members = npz::read(path, current_device(), fn + ": '" + path + "'", true);
        lua_createtable(L, 0, int(members.size()));
        for (npz::Member& m : members) {
            if (m.is_text) {
                lua_pushlstring(L, m.text.data(), m.text.size());
            } else {
                lua_createtable(L, 0, 3);
                lua_pushinteger(L, m.rows);
                lua_setfield(L, -2, "rows");
                lua_pushinteger(L, m.cols);
                lua_setfield(L, -2, "cols");
                lua_pushstring(L, m.dtype == DType::u8 ? "uint8" : "float32");
                lua_setfield(L, -2, "dtype");
            }
            lua_setfield(L, -2, m.name.c_str());
        }
    });
    return 1;
}

// vela._files.write_bytes(path, bytes, fn): a save of bytes made in Lua (net:save's
// format), through the same temporary-and-rename as save.
int l_write_bytes(lua_State* L) {
    check_path(L);
    size_t len;
    const char* bytes = luaL_checklstring(L, 2, &len);
    std::string fn = luaL_checkstring(L, 3);
    guarded(L, fn.c_str(), [&] {
        std::string what = fn + ": '" + lua_tostring(L, 1) + "'";
        files::Writer w(lua_tostring(L, 1), what);
        w.write(bytes, len);
        w.commit();
        interrupted_after(what);
    });
    return 0;
}

// vela._files.read_bytes(path, fn [, n]) -> the file's bytes (a regular file, within
// host memory), or its first n bytes.
int l_read_bytes(lua_State* L) {
    check_path(L);
    std::string fn = luaL_checkstring(L, 2);
    lua_Integer head = luaL_optinteger(L, 3, -1);
    guarded(L, fn.c_str(), [&] {
        std::string path = lua_tostring(L, 1), what = fn + ": '" + path + "'";
        files::Reader r(path, what);
        uint64_t n = head >= 0 ? std::min<uint64_t>(uint64_t(head), r.size()) : r.size();
        files::check_host_memory(n, what, "to read it");
        std::string s(size_t(n), '\0');
        r.read(s.data(), s.size());
        lua_pushlstring(L, s.data(), s.size());
    });
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
    // For checkpoint.lua only, in a table of their own: the checks that call
    // every function of vela with random arguments would write files with them.
    static const luaL_Reg internal[] = {
        {"npz_index", l_npz_index}, {"write_bytes", l_write_bytes}, {"read_bytes", l_read_bytes}, {nullptr, nullptr}};
    luaL_newlib(L, internal);
    lua_setfield(L, -2, "_files");
    doc("terminal_width", "terminal_width() -> columns | nil",
        "The width of the terminal on stdout, or nil when stdout is not a terminal (redirected to a file or a "
        "pipe): nn.fit draws its progress bar only on a terminal, sized to it.");
    doc("save", "vela.save(path, m)  |  vela.save(path, {name = m, ...})",
        "Writes a matrix as NumPy .npy (float32 or uint8, Fortran order: numpy.load reads it as rows×cols), or a "
        "table of named matrices as .npz (numpy.savez's layout; string values become text members). Matrices stream "
        "from the device in pieces (no host copy of the whole); the file is written to a temporary beside the "
        "target and renamed when complete, so a failed, killed or interrupted save leaves the old file. A symlink is "
        "written through, an existing file keeps its mode, and a target that is not a regular file is refused. In "
        "the shell: save(path, m). A matrix that vela.load made from a 1-D array of n (an n×1 column) is saved as "
        "shape (n,) again while it is that matrix and n×1 (a 0-D array likewise as ()); copies, views and results "
        "are written 2-D. torch.save / numpy.save. Example: vela.save('/tmp/w.npy', ones(2, 3))");
    doc("vela.load", "vela.load(path [, dev]) -> matrix  |  {name = matrix, ...}",
        "Reads a .npy (a matrix; 1-D arrays become n×1 columns, which vela.save writes back 1-D; float64 and int "
        "arrays are converted to float32) "
        "or a .npz (a table of matrices) written by vela or NumPy, onto dev (default: the current device). A bad, "
        "truncated, hostile or foreign file is an error naming it: sizes are checked against the file before "
        "anything is allocated, and devices, pipes and directories are refused. The shell's global load is Lua's: call vela.load. "
        "torch.load / numpy.load.");
}

}  // namespace vela::lua

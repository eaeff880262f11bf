// Saving and loading matrices in NumPy's formats, so numpy.load reads what
// vela wrote and vela reads what NumPy wrote:
//   .npy  one array: the "\x93NUMPY" header (a Python dict literal giving
//         descr, fortran_order and shape), then the raw elements. vela writes
//         version 1.0, float32 ('<f4') or uint8 ('|u1'), 2-D, fortran_order
//         True (column-major, as vela stores matrices), the header padded to
//         a multiple of 64 bytes as NumPy pads it. It reads versions 1-3,
//         either order, 0-, 1- and 2-D, and '<f4', '|u1', '<f8', '<i4', '<i8'
//         (the last three converted to float32).
//   .npz  a zip of .npy members, one per name (numpy.savez's layout), through
//         libzip; stored (savez) or deflated (savez_compressed) both read.
//         A string value is stored as a member of its own name (a text
//         file), and comes back as a string: checkpoints keep their
//         description that way.
// Every file is written under a temporary name in the same directory and
// renamed over the target only when complete, so a killed save never leaves
// a torn file; every error names the file and what is wrong with it.
#include <sys/ioctl.h>
#include <unistd.h>
#include <zip.h>

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
#include "lua/vela.hpp"

namespace vela::lua {

namespace {

// One array as read from or written to a file: its element type, shape and
// column-major host elements.
struct Array {
    DType dtype = DType::f32;
    int64_t rows = 0, cols = 0;
    std::vector<float> f32;
    std::vector<uint8_t> u8;
};

/* ---------------------------------------------------------------------- */
/* .npy                                                                   */
/* ---------------------------------------------------------------------- */

std::string npy_bytes(const Array& a) {
    char dict[160];
    std::snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': True, 'shape': (%lld, %lld), }",
                  a.dtype == DType::u8 ? "|u1" : "<f4", (long long)a.rows, (long long)a.cols);
    std::string header = dict;
    // magic (6) + version (2) + length (2) + header, a multiple of 64, ending in '\n'.
    size_t total = 10 + header.size() + 1;
    header.append((64 - total % 64) % 64, ' ');
    header += '\n';
    std::string out("\x93NUMPY\x01\x00", 8);
    out += char(header.size() & 0xff);
    out += char(header.size() >> 8);
    out += header;
    size_t n = size_t(a.rows * a.cols);
    if (a.dtype == DType::u8) {
        out.append(reinterpret_cast<const char*>(a.u8.data()), n);
    } else {
        size_t at = out.size();
        out.resize(at + 4 * n);
        for (size_t k = 0; k < n; ++k) {  // little-endian on every host
            uint32_t bits;
            std::memcpy(&bits, &a.f32[k], 4);
            for (int b = 0; b < 4; ++b) out[at + 4 * k + size_t(b)] = char((bits >> (8 * b)) & 0xff);
        }
    }
    return out;
}

// The value after 'key': in a NumPy header dict, as its text ("'<f4'", "True", "(3, 4)").
std::string dict_value(const std::string& h, const char* key, const std::string& what) {
    std::string k = std::string("'") + key + "'";
    size_t at = h.find(k);
    if (at == std::string::npos) throw Error(what + ": the .npy header has no '" + key + "'");
    at = h.find(':', at + k.size());
    if (at == std::string::npos) throw Error(what + ": the .npy header is malformed");
    at = h.find_first_not_of(' ', at + 1);
    size_t end;
    if (h[at] == '(') end = h.find(')', at) + 1;
    else if (h[at] == '\'' || h[at] == '"') end = h.find(h[at], at + 1) + 1;
    else end = h.find_first_of(",}", at);
    if (end == std::string::npos || end == 0) throw Error(what + ": the .npy header is malformed");
    return h.substr(at, end - at);
}

uint64_t le(const unsigned char* p, int n) {
    uint64_t v = 0;
    for (int b = n - 1; b >= 0; --b) v = (v << 8) | p[b];
    return v;
}

// Parses .npy bytes; `what` is how errors name the file ("vela.load: 'x.npy'").
Array parse_npy(const std::string& s, const std::string& what) {
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    if (s.size() < 10 || std::memcmp(p, "\x93NUMPY", 6) != 0)
        throw Error(what + " is not a .npy file (no \\x93NUMPY magic)");
    int major = p[6];
    size_t hlen, start;
    if (major == 1) {
        hlen = size_t(le(p + 8, 2));
        start = 10;
    } else if (major == 2 || major == 3) {
        if (s.size() < 12) throw Error(what + " is truncated in its header");
        hlen = size_t(le(p + 8, 4));
        start = 12;
    } else {
        throw Error(what + ": .npy format version " + std::to_string(major) + " is not one of 1, 2, 3");
    }
    if (start + hlen > s.size()) throw Error(what + " is truncated in its header");
    std::string h = s.substr(start, hlen);
    std::string descr = dict_value(h, "descr", what), order = dict_value(h, "fortran_order", what),
                shape = dict_value(h, "shape", what);
    descr = descr.substr(1, descr.size() - 2);
    int size;
    DType dtype = DType::f32;
    if (descr == "<f4") size = 4;
    else if (descr == "|u1" || descr == "<u1") size = 1, dtype = DType::u8;
    else if (descr == "<f8" || descr == "<i8") size = 8;
    else if (descr == "<i4") size = 4;
    else
        throw Error(what + ": element type '" + descr +
                    "' is not one vela reads (float32 '<f4', uint8 '|u1', or '<f8', '<i4', '<i8' as float32)");
    bool fortran = order == "True";
    if (!fortran && order != "False") throw Error(what + ": fortran_order is '" + order + "'");
    std::vector<int64_t> dims;
    for (size_t i = 1; i < shape.size();) {
        size_t j = shape.find_first_of(",)", i);
        std::string d = shape.substr(i, j - i);
        size_t b = d.find_first_not_of(' ');
        if (b != std::string::npos) {
            char* end = nullptr;
            long long v = std::strtoll(d.c_str() + b, &end, 10);
            if (v < 0 || v > (1ll << 31) - 1 || (*end && *end != ' ' && *end != 'L'))
                throw Error(what + ": bad shape " + shape);
            dims.push_back(v);
        }
        i = j + 1;
    }
    if (dims.size() > 2)
        throw Error(what + ": a " + std::to_string(dims.size()) + "-D array " + shape +
                    " (vela matrices are 2-D; reshape it in NumPy first)");
    Array a;
    a.dtype = dtype;
    a.rows = dims.empty() ? 1 : dims[0];
    a.cols = dims.size() == 2 ? dims[1] : 1;  // a 1-D array of n is an n×1 column, as from{1, 2, 3}
    size_t n = size_t(a.rows) * size_t(a.cols);
    size_t data = start + hlen;
    if (s.size() - data < n * size_t(size))
        throw Error(what + " is truncated: its header says " + std::to_string(a.rows) + "×" + std::to_string(a.cols) +
                    " '" + descr + "' (" + std::to_string(n * size_t(size)) + " bytes) but " +
                    std::to_string(s.size() - data) + " bytes follow");
    if (s.size() - data > n * size_t(size)) throw Error(what + " has " + std::to_string(s.size() - data - n * size) +
                                                        " bytes after its data");
    // Element k of the file is (i, j) with k = i + j·rows (Fortran) or k = i·cols + j (C).
    auto dst = [&](size_t k) -> size_t {
        if (fortran || a.cols == 1 || a.rows == 1) return k;
        size_t i = k / size_t(a.cols), j = k % size_t(a.cols);
        return i + j * size_t(a.rows);
    };
    const unsigned char* q = p + data;
    if (dtype == DType::u8) {
        a.u8.resize(n);
        for (size_t k = 0; k < n; ++k) a.u8[dst(k)] = q[k];
    } else {
        a.f32.resize(n);
        for (size_t k = 0; k < n; ++k) {
            uint64_t bits = le(q + k * size_t(size), size);
            float v;
            if (descr == "<f4") {
                uint32_t b32 = uint32_t(bits);
                std::memcpy(&v, &b32, 4);
            } else if (descr == "<f8") {
                double d;
                std::memcpy(&d, &bits, 8);
                v = float(d);
            } else if (descr == "<i4") {
                v = float(int32_t(uint32_t(bits)));
            } else {
                v = float(int64_t(bits));
            }
            a.f32[dst(k)] = v;
        }
    }
    return a;
}

Array from_matrix(const Matrix& m) {
    Array a;
    a.dtype = m.dtype();
    a.rows = m.rows;
    a.cols = m.cols;
    std::vector<float> v = to_host(m);  // column-major; uint8 converted exactly
    if (a.dtype == DType::u8) {
        a.u8.resize(v.size());
        for (size_t k = 0; k < v.size(); ++k) a.u8[k] = uint8_t(v[k]);
    } else {
        a.f32 = std::move(v);
    }
    return a;
}

Matrix to_matrix(const Array& a, Device& dev) {
    if (a.dtype == DType::u8) return from_host_u8(dev, a.rows, a.cols, a.u8.data());
    return from_host(dev, a.rows, a.cols, a.f32.data());
}

/* ---------------------------------------------------------------------- */
/* files: whole reads, writes through a temporary name                    */
/* ---------------------------------------------------------------------- */

std::string read_file(const std::string& path, const std::string& what) {
    FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) throw Error(what + ": cannot open: " + std::strerror(errno));
    std::string s;
    char buf[1 << 16];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
    bool bad = std::ferror(f);
    std::fclose(f);
    if (bad) throw Error(what + ": read failed");
    return s;
}

std::string temp_name(const std::string& path) { return path + ".tmp-" + std::to_string(getpid()); }

void commit(const std::string& tmp, const std::string& path, const std::string& what) {
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        int e = errno;
        std::remove(tmp.c_str());
        throw Error(what + ": cannot rename the finished file into place: " + std::strerror(e));
    }
}

void write_file(const std::string& path, const std::string& bytes, const std::string& what) {
    std::string tmp = temp_name(path);
    FILE* f = std::fopen(tmp.c_str(), "wb");
    if (!f) throw Error(what + ": cannot create: " + std::strerror(errno));
    bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    ok = std::fflush(f) == 0 && ok;
    ok = fsync(fileno(f)) == 0 && ok;
    int e = errno;
    ok = std::fclose(f) == 0 && ok;
    if (!ok) {
        std::remove(tmp.c_str());
        throw Error(what + ": write failed: " + std::strerror(e));
    }
    commit(tmp, path, what);
}

// An entry of a .npz: an array, or a string (a member that is not .npy).
struct Entry {
    bool is_text = false;
    Array array;
    std::string text;
};

void write_npz(const std::string& path, const std::map<std::string, Entry>& entries, const std::string& what) {
    std::string tmp = temp_name(path);
    int err = 0;
    zip_t* z = zip_open(tmp.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
    if (!z) {
        zip_error_t ze;
        zip_error_init_with_code(&ze, err);
        std::string msg = what + ": cannot create: " + zip_error_strerror(&ze);
        zip_error_fini(&ze);
        throw Error(msg);
    }
    // The bytes must outlive zip_close, which is when libzip reads them.
    std::vector<std::string> blobs;
    blobs.reserve(entries.size());
    std::string failure;
    for (const auto& [name, e] : entries) {
        blobs.push_back(e.is_text ? e.text : npy_bytes(e.array));
        const std::string& b = blobs.back();
        zip_source_t* src = zip_source_buffer(z, b.data(), b.size(), 0);
        std::string member = e.is_text ? name : name + ".npy";
        if (!src || zip_file_add(z, member.c_str(), src, ZIP_FL_ENC_UTF_8) < 0) {
            if (src) zip_source_free(src);
            failure = what + ": cannot add '" + member + "': " + zip_strerror(z);
            break;
        }
    }
    if (failure.empty() && zip_close(z) != 0) failure = what + ": write failed: " + zip_strerror(z);
    if (!failure.empty()) {
        zip_discard(z);
        std::remove(tmp.c_str());
        throw Error(failure);
    }
    commit(tmp, path, what);
}

std::map<std::string, Entry> read_npz(const std::string& path, const std::string& what) {
    int err = 0;
    zip_t* z = zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &err);
    if (!z) {
        zip_error_t ze;
        zip_error_init_with_code(&ze, err);
        std::string msg = what + " is not a readable .npz (zip) file: " + zip_error_strerror(&ze);
        zip_error_fini(&ze);
        throw Error(msg);
    }
    std::map<std::string, Entry> out;
    std::string failure;
    zip_int64_t n = zip_get_num_entries(z, 0);
    for (zip_int64_t i = 0; i < n && failure.empty(); ++i) {
        zip_stat_t st;
        if (zip_stat_index(z, zip_uint64_t(i), 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE) ||
            !(st.valid & ZIP_STAT_NAME)) {
            failure = what + ": cannot read member " + std::to_string(i + 1) + ": " + zip_strerror(z);
            break;
        }
        std::string name = st.name;
        std::string bytes(size_t(st.size), '\0');
        zip_file_t* f = zip_fopen_index(z, zip_uint64_t(i), 0);
        zip_int64_t got = f ? zip_fread(f, bytes.data(), st.size) : -1;
        if (got != zip_int64_t(st.size)) {
            failure = what + ": member '" + name + "' is damaged or truncated: " +
                      (f ? zip_file_strerror(f) : zip_strerror(z));
        }
        if (f) zip_fclose(f);
        if (!failure.empty()) break;
        Entry e;
        try {
            if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0) {
                e.array = parse_npy(bytes, what + " member '" + name + "'");
                name.resize(name.size() - 4);
            } else {
                e.is_text = true;
                e.text = std::move(bytes);
            }
        } catch (const Error& ex) {
            failure = ex.what();
        }
        out[name] = std::move(e);
    }
    zip_discard(z);
    if (!failure.empty()) throw Error(failure);
    return out;
}

bool ends_with(const std::string& s, const char* suffix) {
    size_t n = std::strlen(suffix);
    return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
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
    if (Matrix* m = test_matrix(L, 2)) {
        if (ends_with(path, ".npz"))
            throw Error(what + " ends in .npz but the value is one matrix (give a table of named matrices, or "
                               "name the file .npy)");
        check_live("save", "m", *m);
        write_file(path, npy_bytes(from_matrix(*m)), what);
        return;
    }
    if (!lua_istable(L, 2))
        throw Error(std::string("save: the value must be a matrix (.npy) or a table of named matrices (.npz), got ") +
                    luaL_typename(L, 2));
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
            lua_pop(L, 1);
            if (name.empty() || name.find('/') != std::string::npos || name.find('\\') != std::string::npos)
                throw Error(what + ": '" + name + "' is not a member name for a .npz");
            check_live("save", name.c_str(), *m);
            e.array = from_matrix(*m);
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
        Matrix m = to_matrix(parse_npy(bytes, what), dev);
        push_matrix(L, std::move(m));
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

// NumPy's .npy and .npz formats to and from bytes and files (see npy.hpp).
#include "lua/npy.hpp"

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

namespace vela::lua::npy {

/* ---------------------------------------------------------------------- */
/* .npy                                                                   */
/* ---------------------------------------------------------------------- */

std::string npy_bytes(const Array& a) {
    char dict[160];
    if (a.one_d)
        std::snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': True, 'shape': (%lld,), }",
                      a.dtype == DType::u8 ? "|u1" : "<f4", (long long)a.rows);
    else
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
static std::string dict_value(const std::string& h, const char* key, const std::string& what) {
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

static uint64_t le(const unsigned char* p, int n) {
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
    a.one_d = dims.size() == 1;
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

static std::string temp_name(const std::string& path) { return path + ".tmp-" + std::to_string(getpid()); }

static void commit(const std::string& tmp, const std::string& path, const std::string& what) {
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

}  // namespace vela::lua::npy

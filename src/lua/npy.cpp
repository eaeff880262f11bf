// NumPy's .npy format to and from files and devices (see npy.hpp).
#include "lua/npy.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/ops.hpp"

namespace vela::lua::npy {

namespace {

// A strict reader of the header's Python dict literal: every index checked
// against the end, so a header cut anywhere (a key last, an open quote or
// parenthesis) is an error, never a read past it.
struct DictParser {
    const std::string& s;
    const std::string& what;
    size_t at = 0;

    [[noreturn]] void bad(const std::string& why) const {
        throw Error(what + ": the .npy header is malformed (" + why + " at byte " + std::to_string(at) + " of " +
                    std::to_string(s.size()) + ")");
    }
    void skip() {
        while (at < s.size() && (s[at] == ' ' || s[at] == '\t' || s[at] == '\n')) ++at;
    }
    bool peek(char c) {
        skip();
        return at < s.size() && s[at] == c;
    }
    void expect(char c) {
        if (!peek(c)) bad(std::string("expected '") + c + "'");
        ++at;
    }
    std::string quoted() {
        skip();
        if (at >= s.size() || (s[at] != '\'' && s[at] != '"')) bad("expected a quoted string");
        char q = s[at++];
        size_t end = s.find(q, at);
        if (end == std::string::npos) bad("an unterminated string");
        std::string v = s.substr(at, end - at);
        at = end + 1;
        return v;
    }
    // A value: a string, True/False, or a tuple of integers (its text, checked by the caller).
    std::string value(std::vector<int64_t>* dims) {
        skip();
        if (at >= s.size()) bad("a key without a value");
        if (s[at] == '\'' || s[at] == '"') return quoted();
        if (s[at] == '(') {
            ++at;
            while (!peek(')')) {
                skip();
                size_t b = at;
                while (at < s.size() && s[at] >= '0' && s[at] <= '9') ++at;
                if (at == b || at - b > 10) bad("a shape dimension that is not a non-negative integer");
                long long v = std::stoll(s.substr(b, at - b));
                if (v > (1ll << 31) - 1) bad("a shape dimension of " + s.substr(b, at - b) + " (at most 2^31 - 1)");
                if (at < s.size() && s[at] == 'L') ++at;  // Python 2's long
                if (dims) dims->push_back(v);
                if (!peek(',')) break;
                ++at;
            }
            expect(')');
            return "()";
        }
        size_t b = at;
        while (at < s.size() && ((s[at] >= 'A' && s[at] <= 'Z') || (s[at] >= 'a' && s[at] <= 'z'))) ++at;
        std::string word = s.substr(b, at - b);
        if (word != "True" && word != "False") bad("a value that is not a string, a tuple or True/False");
        return word;
    }
};

uint64_t le(const unsigned char* p, int n) {
    uint64_t v = 0;
    for (int b = n - 1; b >= 0; --b) v = (v << 8) | p[b];
    return v;
}

float element(const unsigned char* p, const std::string& descr) {
    uint64_t bits = le(p, descr == "<f8" || descr == "<i8" ? 8 : 4);
    if (descr == "<f4") {
        uint32_t b32 = uint32_t(bits);
        float v;
        std::memcpy(&v, &b32, 4);
        return v;
    }
    if (descr == "<f8") {
        double d;
        std::memcpy(&d, &bits, 8);
        return float(d);
    }
    if (descr == "<i4") return float(int32_t(uint32_t(bits)));
    return float(int64_t(bits));
}

}  // namespace

Header parse_dict(const std::string& dict, const std::string& what) {
    DictParser p{dict, what};
    Header h;
    bool got_descr = false, got_order = false, got_shape = false;
    std::vector<int64_t> dims;
    p.expect('{');
    while (!p.peek('}')) {
        std::string key = p.quoted();
        p.expect(':');
        std::string v = p.value(key == "shape" ? &dims : nullptr);
        if (key == "descr") h.descr = v, got_descr = true;
        else if (key == "fortran_order") {
            if (v != "True" && v != "False") p.bad("fortran_order '" + v + "'");
            h.fortran = v == "True", got_order = true;
        } else if (key == "shape") {
            if (v != "()") p.bad("a shape that is not a tuple");
            got_shape = true;
        }
        if (!p.peek(',')) break;
        ++p.at;
    }
    p.expect('}');
    if (!got_descr) throw Error(what + ": the .npy header has no 'descr'");
    if (!got_order) throw Error(what + ": the .npy header has no 'fortran_order'");
    if (!got_shape) throw Error(what + ": the .npy header has no 'shape'");
    if (h.descr == "<f4") h.elem = 4;
    else if (h.descr == "|u1" || h.descr == "<u1") h.elem = 1, h.dtype = DType::u8;
    else if (h.descr == "<f8" || h.descr == "<i8") h.elem = 8;
    else if (h.descr == "<i4") h.elem = 4;
    else
        throw Error(what + ": element type '" + h.descr +
                    "' is not one vela reads (float32 '<f4', uint8 '|u1', or '<f8', '<i4', '<i8' as float32)");
    if (dims.size() > 2) {
        std::string shape;
        for (int64_t d : dims) shape += (shape.empty() ? "(" : ", ") + std::to_string(d);
        throw Error(what + ": a " + std::to_string(dims.size()) + "-D array " + shape +
                    ") (vela matrices are 2-D; reshape it in NumPy first)");
    }
    h.ndim = int(dims.size());
    h.rows = dims.empty() ? 1 : dims[0];
    h.cols = dims.size() == 2 ? dims[1] : 1;  // a 1-D array of n is an n×1 column, as from{1, 2, 3}
    // Each dimension < 2^31, so rows·cols < 2^62 and the byte count < 2^65: computed in two steps.
    uint64_t n = uint64_t(h.rows) * uint64_t(h.cols);
    if (n > (UINT64_MAX >> 4))
        throw Error(what + ": its header's shape " + std::to_string(h.rows) + "×" + std::to_string(h.cols) +
                    " is too large (its byte count passes 2^64)");
    h.data_bytes = n * uint64_t(h.elem);
    return h;
}

Header read_header(const ReadFn& read, uint64_t total, const std::string& what) {
    unsigned char pre[12];
    if (total < 10) throw Error(what + " is not a .npy file (" + std::to_string(total) + " bytes)");
    read(pre, 10);
    if (std::memcmp(pre, "\x93NUMPY", 6) != 0) throw Error(what + " is not a .npy file (no \\x93NUMPY magic)");
    int major = pre[6];
    uint64_t hlen, start;
    if (major == 1) {
        hlen = le(pre + 8, 2);
        start = 10;
    } else if (major == 2 || major == 3) {
        if (total < 12) throw Error(what + " is truncated in its header");
        read(pre + 10, 2);
        hlen = le(pre + 8, 4);
        start = 12;
    } else {
        throw Error(what + ": .npy format version " + std::to_string(major) + " is not one of 1, 2, 3");
    }
    if (hlen > total - start) throw Error(what + " is truncated in its header");
    if (hlen > (1u << 20)) throw Error(what + ": a .npy header of " + std::to_string(hlen) + " bytes (at most 1 MiB)");
    std::string dict(size_t(hlen), '\0');
    read(dict.data(), dict.size());
    Header h = parse_dict(dict, what);
    h.header_bytes = start + hlen;
    uint64_t follow = total - h.header_bytes;
    std::string shape = std::to_string(h.rows) + "×" + std::to_string(h.cols) + " '" + h.descr + "'";
    if (follow < h.data_bytes)
        throw Error(what + " is truncated: its header says " + shape + " (" + std::to_string(h.data_bytes) +
                    " bytes) but " + std::to_string(follow) + " bytes follow");
    if (follow > h.data_bytes) throw Error(what + " has " + std::to_string(follow - h.data_bytes) + " bytes after its data");
    return h;
}

Matrix read_data(const Header& h, const ReadFn& read, Device& dev, const std::string& what) {
    Matrix m;
    try {
        m = empty(dev, h.rows, h.cols, h.dtype);  // the device checks its memory
    } catch (const Error& e) {
        std::string msg = e.what();  // "matrix: out of memory on cpu ..."
        size_t c = msg.find(": ");
        throw Error(what + ": " + (c == std::string::npos ? msg : msg.substr(c + 2)));
    }
    if (m.empty()) return m;
    // The file's order: `outer` blocks of `inner` elements (columns of rows in
    // Fortran order, rows of columns in C order). A piece is q outer × k inner.
    bool c_order = !h.fortran && h.rows > 1 && h.cols > 1;
    int64_t outer = c_order ? h.rows : h.cols, inner = c_order ? h.cols : h.rows;
    int64_t k = std::min(inner, kPiece), q = k == inner ? std::max<int64_t>(1, kPiece / inner) : 1;
    std::vector<unsigned char> raw;
    std::vector<float> f;
    std::vector<uint8_t> u;
    for (int64_t o = 0; o < outer; o += q) {
        int64_t qq = std::min(q, outer - o);
        for (int64_t i = 0; i < inner; i += k) {
            int64_t kk = std::min(k, inner - i);
            size_t n = size_t(qq * kk);
            raw.resize(n * size_t(h.elem));
            read(raw.data(), raw.size());
            // Element (oo, ii) of the piece is at oo·kk + ii in the file; the
            // device view is column-major: Fortran (kk×qq) the same, C (qq×kk) at oo + ii·qq.
            auto dst = [&](size_t idx) { return c_order ? (idx % size_t(kk)) * size_t(qq) + idx / size_t(kk) : idx; };
            Matrix v = c_order ? m.view(o, i, qq, kk) : m.view(i, o, kk, qq);
            if (h.dtype == DType::u8) {
                u.resize(n);
                for (size_t x = 0; x < n; ++x) u[dst(x)] = raw[x];
                dev.upload(v, u.data());
            } else {
                f.resize(n);
                for (size_t x = 0; x < n; ++x) f[dst(x)] = element(&raw[x * size_t(h.elem)], h.descr);
                dev.upload(v, f.data());
            }
            if (interrupt_flag().exchange(false)) throw Interrupted(what + ": interrupted");
        }
    }
    return m;
}

std::string header_for(const Matrix& m, int ndim) {
    char shape[64];
    if (ndim == 1 && m.cols == 1) std::snprintf(shape, sizeof shape, "(%lld,)", (long long)m.rows);
    else if (ndim == 0 && m.rows == 1 && m.cols == 1) std::snprintf(shape, sizeof shape, "()");
    else std::snprintf(shape, sizeof shape, "(%lld, %lld)", (long long)m.rows, (long long)m.cols);
    char dict[160];
    std::snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': True, 'shape': %s, }",
                  m.dtype() == DType::u8 ? "|u1" : "<f4", shape);
    std::string header = dict;
    // magic (6) + version (2) + length (2) + header, a multiple of 64, ending in '\n'.
    size_t total = 10 + header.size() + 1;
    header.append((64 - total % 64) % 64, ' ');
    header += '\n';
    std::string out("\x93NUMPY\x01\x00", 8);
    out += char(header.size() & 0xff);
    out += char(header.size() >> 8);
    return out + header;
}

uint64_t file_bytes(const Matrix& m, int ndim) {
    return header_for(m, ndim).size() + uint64_t(m.rows) * uint64_t(m.cols) * (m.dtype() == DType::u8 ? 1 : 4);
}

void write_data(const Matrix& m, const WriteFn& write) {
    if (m.empty()) return;
    // Pieces: whole columns where a column is small, else parts of one column.
    int64_t k = std::min(m.rows, kPiece), q = k == m.rows ? std::max<int64_t>(1, kPiece / m.rows) : 1;
    std::vector<unsigned char> bytes;
    for (int64_t j = 0; j < m.cols; j += q) {
        int64_t qq = std::min(q, m.cols - j);
        for (int64_t i = 0; i < m.rows; i += k) {
            int64_t kk = std::min(k, m.rows - i);
            std::vector<float> v = to_host(m.view(i, j, kk, qq));  // column-major; uint8 exact
            if (m.dtype() == DType::u8) {
                bytes.resize(v.size());
                for (size_t x = 0; x < v.size(); ++x) bytes[x] = uint8_t(v[x]);
            } else {
                bytes.resize(4 * v.size());
                for (size_t x = 0; x < v.size(); ++x) {  // little-endian on every host
                    uint32_t b;
                    std::memcpy(&b, &v[x], 4);
                    for (int s = 0; s < 4; ++s) bytes[4 * x + size_t(s)] = (unsigned char)((b >> (8 * s)) & 0xff);
                }
            }
            write(bytes.data(), bytes.size());
        }
    }
}

}  // namespace vela::lua::npy

// NumPy's .npz, written as a stored zip and read through libzip (see npz.hpp).
#include "lua/npz.hpp"

#include <zip.h>
#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "lua/file_io.hpp"
#include "lua/npy.hpp"

namespace vela::lua::npz {

namespace {

/* ---------------------------------------------------------------------- */
/* writing: PKWARE's APPNOTE, stored members, ZIP64 where needed          */
/* ---------------------------------------------------------------------- */

constexpr uint64_t kMax32 = 0xffffffffu;  // a 32-bit field's "see the ZIP64 record"
#ifndef VELA_ZIP64_AT
#define VELA_ZIP64_AT 0xffffffffu  // sizes and offsets from here on need ZIP64 (lowered to test it)
#endif
constexpr uint64_t kZip64At = VELA_ZIP64_AT;

struct Bytes {
    std::string s;
    void u16(uint64_t v) { for (int b = 0; b < 2; ++b) s += char((v >> (8 * b)) & 0xff); }
    void u32(uint64_t v) { for (int b = 0; b < 4; ++b) s += char((v >> (8 * b)) & 0xff); }
    void u64(uint64_t v) { for (int b = 0; b < 8; ++b) s += char((v >> (8 * b)) & 0xff); }
};

struct Written {
    std::string name;
    uint64_t offset = 0, size = 0;
    uint32_t crc = 0;
};

void dos_time(uint16_t& time, uint16_t& date) {
    std::time_t now = std::time(nullptr);
    std::tm tm{};
    localtime_r(&now, &tm);
    int year = tm.tm_year + 1900 < 1980 ? 1980 : tm.tm_year + 1900;
    time = uint16_t((tm.tm_hour << 11) | (tm.tm_min << 5) | (tm.tm_sec / 2));
    date = uint16_t(((year - 1980) << 9) | ((tm.tm_mon + 1) << 5) | tm.tm_mday);
}

// One member: its local header (sizes known in advance, the CRC patched in
// after the data), then the data through `body`.
Written write_member(files::Writer& w, const std::string& name, uint64_t size, uint16_t time, uint16_t date,
                     const std::function<void(const npy::WriteFn&)>& body) {
    Written out{name, w.offset(), size, 0};
    bool z64 = size >= kZip64At;
    Bytes h;
    h.u32(0x04034b50);
    h.u16(z64 ? 45 : 20);
    h.u16(0x0800);  // the name is UTF-8
    h.u16(0);       // stored
    h.u16(time);
    h.u16(date);
    h.u32(0);  // CRC-32, patched below
    h.u32(z64 ? kMax32 : size);
    h.u32(z64 ? kMax32 : size);
    h.u16(name.size());
    h.u16(z64 ? 20 : 0);
    h.s += name;
    if (z64) {
        h.u16(1);
        h.u16(16);
        h.u64(size);
        h.u64(size);
    }
    w.write(h.s.data(), h.s.size());
    uLong crc = crc32(0L, Z_NULL, 0);
    uint64_t wrote = 0;
    body([&](const void* p, size_t n) {
        crc = crc32(crc, static_cast<const Bytef*>(p), uInt(n));
        w.write(p, n);
        wrote += n;
    });
    if (wrote != size) throw Error("npz: member '" + name + "' wrote " + std::to_string(wrote) + " bytes, not " +
                                   std::to_string(size));
    out.crc = uint32_t(crc);
    Bytes c;
    c.u32(out.crc);
    w.write_at(out.offset + 14, c.s.data(), 4);
    return out;
}

void write_directory(files::Writer& w, const std::vector<Written>& ms, uint16_t time, uint16_t date) {
    uint64_t start = w.offset();
    Bytes d;
    for (const Written& m : ms) {
        bool big = m.size >= kZip64At, far = m.offset >= kZip64At;
        Bytes extra;
        if (big || far) {
            extra.u16(1);
            extra.u16((big ? 16 : 0) + (far ? 8 : 0));
            if (big) extra.u64(m.size), extra.u64(m.size);
            if (far) extra.u64(m.offset);
        }
        d.u32(0x02014b50);
        d.u16((3 << 8) | 45);  // made by: Unix, 4.5
        d.u16(big || far ? 45 : 20);
        d.u16(0x0800);
        d.u16(0);
        d.u16(time);
        d.u16(date);
        d.u32(m.crc);
        d.u32(big ? kMax32 : m.size);
        d.u32(big ? kMax32 : m.size);
        d.u16(m.name.size());
        d.u16(extra.s.size());
        d.u16(0);  // comment
        d.u16(0);  // disk
        d.u16(0);  // internal attributes
        d.u32(uint32_t(0100644) << 16);
        d.u32(far ? kMax32 : m.offset);
        d.s += m.name;
        d.s += extra.s;
    }
    uint64_t dir_size = d.s.size(), n = ms.size();
    bool z64 = start >= kZip64At || dir_size >= kZip64At || n >= 0xffff || kZip64At < kMax32;
    if (z64) {
        uint64_t at = start + dir_size;
        d.u32(0x06064b50);
        d.u64(44);
        d.u16((3 << 8) | 45);
        d.u16(45);
        d.u32(0);
        d.u32(0);
        d.u64(n);
        d.u64(n);
        d.u64(dir_size);
        d.u64(start);
        d.u32(0x07064b50);
        d.u32(0);
        d.u64(at);
        d.u32(1);
    }
    d.u32(0x06054b50);
    d.u16(0);
    d.u16(0);
    d.u16(z64 ? 0xffff : n);
    d.u16(z64 ? 0xffff : n);
    d.u32(z64 ? kMax32 : dir_size);
    d.u32(z64 ? kMax32 : start);
    d.u16(0);
    w.write(d.s.data(), d.s.size());
}

/* ---------------------------------------------------------------------- */
/* reading                                                                */
/* ---------------------------------------------------------------------- */

std::string zip_open_error(int err) {
    zip_error_t ze;
    zip_error_init_with_code(&ze, err);
    std::string msg = zip_error_strerror(&ze);
    zip_error_fini(&ze);
    return msg;
}

// Deflate expands at most 1032:1; a member claiming more than its bytes can hold is a lie.
constexpr uint64_t kMaxRatio = 1032;

}  // namespace

void write(const std::string& path, const std::vector<Member>& members, const std::string& what) {
    files::Writer w(path, what);
    uint16_t time, date;
    dos_time(time, date);
    std::vector<Written> done;
    for (const Member& m : members) {
        if (m.is_text) {
            done.push_back(write_member(w, m.name, m.text.size(), time, date,
                                        [&](const npy::WriteFn& put) { put(m.text.data(), m.text.size()); }));
        } else {
            std::string header = npy::header_for(m.matrix, m.ndim);
            done.push_back(write_member(w, m.name + ".npy", npy::file_bytes(m.matrix, m.ndim), time, date,
                                        [&](const npy::WriteFn& put) {
                                            put(header.data(), header.size());
                                            npy::write_data(m.matrix, put);
                                        }));
        }
    }
    write_directory(w, done, time, date);
    w.commit();
}

std::vector<Member> read(const std::string& path, Device& dev, const std::string& what, bool headers_only) {
    uint64_t file_size;
    {
        files::Reader r(path, what);  // a regular file, or an error
        file_size = r.size();
    }
    int err = 0;
    zip_t* z = zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &err);
    if (!z) throw Error(what + " is not a readable .npz (zip) file: " + zip_open_error(err));
    struct Close {
        zip_t* z;
        ~Close() { zip_discard(z); }
    } close_zip{z};
    std::vector<Member> out;
    zip_int64_t n = zip_get_num_entries(z, 0);
    for (zip_int64_t i = 0; i < n; ++i) {
        zip_stat_t st;
        if (zip_stat_index(z, zip_uint64_t(i), 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE) ||
            !(st.valid & ZIP_STAT_NAME) || !(st.valid & ZIP_STAT_COMP_SIZE))
            throw Error(what + ": cannot read member " + std::to_string(i + 1) + ": " + zip_strerror(z));
        std::string name = st.name;
        std::string mwhat = what + " member '" + name + "'";
        if (st.comp_size > file_size)
            throw Error(mwhat + " claims " + std::to_string(st.comp_size) + " compressed bytes in a file of " +
                        std::to_string(file_size));
        bool stored = (st.valid & ZIP_STAT_COMP_METHOD) && st.comp_method == ZIP_CM_STORE;
        if ((stored && st.size != st.comp_size) || st.size / kMaxRatio > st.comp_size + 1024)
            throw Error(mwhat + " claims " + std::to_string(st.size) + " bytes from " + std::to_string(st.comp_size) +
                        " compressed bytes (more than they can hold: a damaged or hostile file)");
        zip_file_t* f = zip_fopen_index(z, zip_uint64_t(i), 0);
        if (!f) throw Error(mwhat + " cannot be opened: " + zip_strerror(z));
        struct CloseFile {
            zip_file_t* f;
            ~CloseFile() { zip_fclose(f); }
        } close_file{f};
        npy::ReadFn read = [&](void* dst, size_t len) {
            auto* p = static_cast<char*>(dst);
            size_t done = 0;
            while (done < len) {
                zip_int64_t got = zip_fread(f, p + done, len - done);
                if (got < 0) throw Error(mwhat + " is damaged: " + zip_file_strerror(f));
                if (got == 0) throw Error(mwhat + " is truncated");
                done += size_t(got);
            }
        };
        Member m;
        if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0) {
            npy::Header h = npy::read_header(read, st.size, mwhat);
            m.rows = h.rows, m.cols = h.cols, m.dtype = h.dtype, m.ndim = h.ndim;
            if (!headers_only) m.matrix = npy::read_data(h, read, dev, mwhat);
            m.name = name.substr(0, name.size() - 4);
        } else {
            if (st.size > kTextLimit)
                throw Error(mwhat + " is a text member of " + std::to_string(st.size) + " bytes (at most " +
                            std::to_string(kTextLimit) + ")");
            files::check_host_memory(st.size, mwhat, "to read it");
            m.is_text = true;
            m.name = name;
            // In pieces: the claimed size costs only what really arrives.
            char buf[1 << 16];
            for (uint64_t left = st.size; left > 0;) {
                size_t len = size_t(std::min<uint64_t>(left, sizeof buf));
                read(buf, len);
                m.text.append(buf, len);
                left -= len;
            }
        }
        out.push_back(std::move(m));
    }
    return out;
}

}  // namespace vela::lua::npz

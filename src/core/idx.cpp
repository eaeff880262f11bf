#include "core/idx.hpp"

#include <zlib.h>

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>

#include "core/error.hpp"
#include "core/ops.hpp"

namespace vela {

Bytes::~Bytes() {
    if (p_) munmap(p_, cap_);
}

Bytes::Bytes(Bytes&& o) noexcept
    : p_(std::exchange(o.p_, nullptr)), size_(std::exchange(o.size_, 0)), cap_(std::exchange(o.cap_, 0)) {}

Bytes& Bytes::operator=(Bytes&& o) noexcept {
    if (this != &o) {
        if (p_) munmap(p_, cap_);
        p_ = std::exchange(o.p_, nullptr);
        size_ = std::exchange(o.size_, 0);
        cap_ = std::exchange(o.cap_, 0);
    }
    return *this;
}

uint8_t* Bytes::room(size_t n) {
    if (n <= cap_ - size_) return p_ + size_;
    constexpr size_t kHuge = size_t(2) << 20;
    if (n > SIZE_MAX / 4 - size_) return nullptr;
    // Doubling, in whole 2 MiB pages: a few moves for any file, each without a copy.
    size_t cap = std::max(size_ + n, 2 * cap_);
    cap = (cap + kHuge - 1) / kHuge * kHuge;
    void* q = p_ ? mremap(p_, cap_, cap, MREMAP_MAYMOVE)
                 : mmap(nullptr, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (q == MAP_FAILED) return nullptr;
    madvise(q, cap, MADV_HUGEPAGE);  // refused advice changes nothing
    p_ = static_cast<uint8_t*>(q);
    cap_ = cap;
    return p_ + size_;
}

namespace {

// gzopen reads plain files transparently, so one path serves raw and .gz.
struct GzFile {
    gzFile f = nullptr;
    std::string path;
    explicit GzFile(const std::string& p) : path(p) {
        f = gzopen(p.c_str(), "rb");
        if (!f) fail("read_idx: cannot open '%s': %s", p.c_str(), errno ? std::strerror(errno) : "gzopen failed");
    }
    ~GzFile() {
        if (f) gzclose(f);
    }
    GzFile(const GzFile&) = delete;
    GzFile& operator=(const GzFile&) = delete;

    // Reads up to n bytes; returns how many came (fewer only at the end).
    size_t read(void* dst, size_t n) {
        size_t got = 0;
        auto* p = static_cast<unsigned char*>(dst);
        while (got < n) {
            unsigned chunk = unsigned(std::min<size_t>(n - got, 1u << 30));
            int r = gzread(f, p + got, chunk);
            if (r < 0) {
                int code = 0;
                const char* msg = gzerror(f, &code);
                fail("read_idx: '%s' is corrupt: %s", path.c_str(), msg ? msg : "read error");
            }
            if (r == 0) {
                // A gzip stream cut short reads as a plain end of data; zlib says so in gzerror.
                int code = 0;
                const char* msg = gzerror(f, &code);
                if (code == Z_BUF_ERROR || code == Z_DATA_ERROR)
                    fail("read_idx: '%s' is a truncated or corrupt gzip file (zlib: %s)", path.c_str(),
                         msg ? msg : "unexpected end of file");
                break;
            }
            got += size_t(r);
        }
        return got;
    }
};

uint32_t be32(const unsigned char* p) {
    return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}

const char* idx_type_name(unsigned t) {
    switch (t) {
        case 0x08: return "unsigned byte";
        case 0x09: return "signed byte";
        case 0x0B: return "int16";
        case 0x0C: return "int32";
        case 0x0D: return "float32";
        case 0x0E: return "float64";
        default: return nullptr;
    }
}

}  // namespace

int64_t Idx::sample_size() const {
    int64_t s = 1;
    for (size_t i = 1; i < dims.size(); i++)
        if (__builtin_mul_overflow(s, dims[i], &s) || s > (int64_t(1) << 40))
            fail("read_idx: one sample of %zu dimensions is larger than 2^40 elements", dims.size() - 1);
    return s;
}

Idx read_idx(const std::string& path) {
    GzFile in(path);
    const char* p = path.c_str();

    unsigned char magic[4];
    size_t got = in.read(magic, 4);
    if (got < 4) fail("read_idx: '%s' is not an IDX file: %zu bytes, shorter than the 4-byte magic", p, got);
    uint32_t m = be32(magic);
    if (magic[0] != 0 || magic[1] != 0 || magic[3] < 1 || magic[3] > 4 || !idx_type_name(magic[2]))
        fail("read_idx: '%s' is not an IDX file: magic 0x%08x (expected 0x00000801 for labels or 0x00000803 "
             "for images)",
             p, unsigned(m));
    if (magic[2] != 0x08)
        fail("read_idx: '%s' holds %s elements; vela reads unsigned-byte IDX files (magic 0x000008DD)", p,
             idx_type_name(magic[2]));

    Idx idx;
    int ndims = magic[3];
    unsigned char hdr[16];
    got = in.read(hdr, size_t(4 * ndims));
    if (got < size_t(4 * ndims))
        fail("read_idx: '%s' is truncated: the header declares %d dimensions but ends after %zu of their %d bytes",
             p, ndims, got, 4 * ndims);
    // The product of the sample dimensions is checked apart from the count:
    // a count of 0 must not let 2^31 × 2^31 × 2^31 through as a 0-byte file.
    uint64_t total = 1, sample = 1;
    for (int i = 0; i < ndims; i++) {
        uint32_t d = be32(hdr + 4 * i);
        if (d > (1u << 31)) fail("read_idx: '%s': dimension %d is %u, too large", p, i + 1, unsigned(d));
        idx.dims.push_back(int64_t(d));
        if (i > 0) sample *= d;
        if (sample > (uint64_t(1) << 40))
            fail("read_idx: '%s': dimensions 2..%d describe samples of more than 2^40 bytes", p, i + 1);
        total *= d;
        if (total > (uint64_t(1) << 40)) fail("read_idx: '%s': the dimensions describe more than 1 TiB", p);
    }

    // Grow as data arrives, so a bogus header cannot make us allocate terabytes.
    const size_t chunk = size_t(1) << 24;
    while (idx.data.size() < total) {
        size_t want = std::min<uint64_t>(chunk, total - idx.data.size());
        size_t old = idx.data.size();
        uint8_t* at = idx.data.room(want);
        if (!at)
            fail("read_idx: '%s': no memory for the next %zu bytes after %zu (the header declares %llu)", p, want,
                 old, (unsigned long long)total);
        size_t r = in.read(at, want);
        idx.data.grown(r);
        if (r < want) {
            std::string shape;
            for (size_t i = 0; i < idx.dims.size() && idx.dims.size() > 1; i++)
                shape += (i ? "×" : "") + std::to_string(idx.dims[i]);
            if (!shape.empty()) shape += " = ";
            fail("read_idx: '%s' is truncated: the header declares %s%llu bytes of data but the file holds %zu",
                 p, shape.c_str(), (unsigned long long)total, old + r);
        }
    }
    unsigned char extra[4096];
    size_t trailing = 0;
    while (size_t r = in.read(extra, sizeof extra)) trailing += r;
    if (trailing)
        fail("read_idx: '%s' has %zu bytes after the %llu the header declares (a wrong header or two files joined)",
             p, trailing, (unsigned long long)total);
    return idx;
}

Matrix idx_to_matrix(const Idx& idx, Device& dev) {
    return from_host_u8(dev, idx.sample_size(), idx.samples(), idx.data.data());
}

Matrix read_idx_labels(const std::string& path, int classes, Device& dev) {
    Idx idx = read_idx(path);
    if (idx.dims.size() != 1)
        fail("read_idx_labels: '%s' has %zu dimensions; a labels file has one (magic 0x00000801)", path.c_str(),
             idx.dims.size());
    std::vector<float> labels(idx.data.size());
    for (size_t j = 0; j < idx.data.size(); j++) {
        if (idx.data[j] >= classes)
            fail("read_idx_labels: '%s': label %u of sample %zu is out of range (expected 0..%d)", path.c_str(),
                 unsigned(idx.data[j]), j + 1, classes - 1);
        labels[j] = float(idx.data[j]) + 1.0f;
    }
    return from_host(dev, 1, int64_t(labels.size()), labels.data());
}

}  // namespace vela

// The IDX reader against files written here byte by byte (raw and gzipped),
// and every kind of bad file: each must be a vela::Error naming the file and
// the problem.
#include <catch2/catch.hpp>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/idx.hpp"
#include "core/ops.hpp"
#include "core/registry.hpp"
#include "cpu/cpu_device.hpp"

namespace fs = std::filesystem;
using vela::Error;

namespace {

std::vector<uint8_t> be32(uint32_t v) {
    return {uint8_t(v >> 24), uint8_t(v >> 16), uint8_t(v >> 8), uint8_t(v)};
}

// An IDX file image: magic 0x000008DD, the dims, then the payload.
std::vector<uint8_t> idx_bytes(std::vector<uint32_t> dims, const std::vector<uint8_t>& payload, uint8_t type = 8) {
    std::vector<uint8_t> b{0, 0, type, uint8_t(dims.size())};
    for (uint32_t d : dims)
        for (uint8_t x : be32(d)) b.push_back(x);
    b.insert(b.end(), payload.begin(), payload.end());
    return b;
}

struct TempDir {
    fs::path dir;
    TempDir() {
        dir = fs::temp_directory_path() / ("vela_idx_" + std::to_string(::getpid()));
        fs::create_directories(dir);
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
    std::string write(const std::string& name, const std::vector<uint8_t>& bytes) {
        std::string p = (dir / name).string();
        std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
        return p;
    }
    std::string write_gz(const std::string& name, const std::vector<uint8_t>& bytes) {
        std::string p = (dir / name).string();
        gzFile f = gzopen(p.c_str(), "wb");
        REQUIRE(f);
        REQUIRE(gzwrite(f, bytes.data(), unsigned(bytes.size())) == int(bytes.size()));
        gzclose(f);
        return p;
    }
};

// Checks that read_idx(path) throws an Error whose message holds every part.
void require_error(const std::string& path, std::initializer_list<const char*> parts) {
    try {
        vela::read_idx(path);
        FAIL("expected an error reading " << path);
    } catch (const Error& e) {
        std::string msg = e.what();
        INFO(msg);
        CHECK(msg.find(path) != std::string::npos);
        for (const char* p : parts) CHECK(msg.find(p) != std::string::npos);
    }
}

// Two 2×3 images, pixel values 1..12 in file order (row by row per image).
std::vector<uint8_t> two_images() {
    std::vector<uint8_t> px(12);
    for (int i = 0; i < 12; i++) px[size_t(i)] = uint8_t(i + 1);
    return idx_bytes({2, 2, 3}, px, 8);
}

}  // namespace

TEST_CASE("idx: raw and gzipped files read the same", "[idx]") {
    TempDir t;
    for (bool gz : {false, true}) {
        std::string p = gz ? t.write_gz("img.gz", two_images()) : t.write("img", two_images());
        vela::Idx idx = vela::read_idx(p);
        REQUIRE(idx.dims == std::vector<int64_t>{2, 2, 3});
        CHECK(idx.samples() == 2);
        CHECK(idx.sample_size() == 6);
        REQUIRE(idx.data.size() == 12);
        for (int i = 0; i < 12; i++) CHECK(idx.data[size_t(i)] == i + 1);
    }
}

TEST_CASE("idx: images become one column per sample on the device", "[idx]") {
    TempDir t;
    vela::Idx idx = vela::read_idx(t.write("img", two_images()));
    vela::Matrix m = vela::idx_to_matrix(idx, vela::cpu_device());
    CHECK(m.rows == 6);
    CHECK(m.cols == 2);
    CHECK(m.dtype() == vela::DType::u8);
    std::vector<float> h = vela::to_host(m);
    // Column j is image j flattened row by row: element (r, c) at row 3·r + c.
    for (int i = 0; i < 12; i++) CHECK(h[size_t(i)] == float(i + 1));
}

TEST_CASE("idx: labels become 1-based float classes, range checked", "[idx]") {
    TempDir t;
    std::string ok = t.write("lab", idx_bytes({4}, {0, 9, 3, 7}));
    vela::Matrix m = vela::read_idx_labels(ok, 10, vela::cpu_device());
    CHECK(m.rows == 1);
    CHECK(m.cols == 4);
    CHECK(vela::to_host(m) == std::vector<float>{1, 10, 4, 8});

    std::string bad = t.write("lab_bad", idx_bytes({3}, {0, 10, 3}));
    try {
        vela::read_idx_labels(bad, 10, vela::cpu_device());
        FAIL("expected an out-of-range error");
    } catch (const Error& e) {
        std::string msg = e.what();
        INFO(msg);
        CHECK(msg.find(bad) != std::string::npos);
        CHECK(msg.find("label 10 of sample 2") != std::string::npos);
        CHECK(msg.find("0..9") != std::string::npos);
    }
    // An images file is not a labels file.
    CHECK_THROWS_WITH(vela::read_idx_labels(t.write("img", two_images()), 10, vela::cpu_device()),
                      Catch::Contains("3 dimensions"));
}

TEST_CASE("idx: bad files are clear errors naming the file", "[idx]") {
    TempDir t;
    std::vector<uint8_t> good = two_images();

    require_error((t.dir / "missing").string(), {"cannot open"});
    require_error(t.write("empty", {}), {"not an IDX file", "0 bytes"});
    require_error(t.write("text", {'P', 'K', 3, 4, 0, 0, 0, 0}), {"not an IDX file", "magic 0x504b0304"});
    require_error(t.write("float", idx_bytes({1}, {0, 0, 0, 0}, 0x0D)), {"float32 elements"});
    std::vector<uint8_t> cut(good.begin(), good.begin() + 8);
    require_error(t.write("cut_header", cut), {"truncated", "3 dimensions"});
    std::vector<uint8_t> short_payload(good.begin(), good.end() - 1);
    require_error(t.write("cut_data", short_payload), {"truncated", "2×2×3 = 12 bytes", "holds 11"});
    require_error(t.write_gz("cut_data.gz", short_payload), {"truncated", "holds 11"});
    std::vector<uint8_t> longer = good;
    longer.push_back(0);
    require_error(t.write("long", longer), {"1 bytes after the 12"});

    // A gzip stream cut short is reported, not read as a short file silently.
    std::string gz = t.write_gz("full.gz", good);
    std::ifstream in(gz, std::ios::binary);
    std::vector<uint8_t> zbytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    zbytes.resize(zbytes.size() - 10);
    std::string p = t.write("cut.gz", zbytes);
    CHECK_THROWS_WITH(vela::read_idx(p), Catch::Contains(p));
    // Cut inside the gzip header: said to be truncated or corrupt, not "0 bytes, shorter than the magic".
    zbytes.resize(12);
    require_error(t.write("cut_header.gz", zbytes), {"truncated or corrupt gzip"});
}

TEST_CASE("idx: sizes in the header never overflow", "[idx]") {
    TempDir t;
    // 20 bytes: 0 samples of 2^31 × 2^31 × 2^31; the zero count must not hide the sample size.
    std::vector<uint8_t> bytes = idx_bytes({0, 1u << 31, 1u << 31, 1u << 31}, {});
    REQUIRE(bytes.size() == 20);
    require_error(t.write("bad20", bytes), {"more than 2^40"});
    require_error(t.write("wide", idx_bytes({1, 1u << 31, 1u << 31}, {})), {"more than 2^40"});
    // sample_size() itself is checked, for an Idx made by hand.
    vela::Idx idx;
    idx.dims = {0, int64_t(1) << 31, int64_t(1) << 31, int64_t(1) << 31};
    CHECK_THROWS_WITH(idx.sample_size(), Catch::Contains("larger than 2^40"));
    idx.dims = {5, 28, 28};
    CHECK(idx.sample_size() == 784);
}

// Bytes (core/idx.hpp) grows by mremap, which may move the pages: what was
// written before each growth is still there after it, byte for byte.
TEST_CASE("idx: the read buffer keeps its bytes as it grows and moves", "[idx]") {
    vela::Bytes b;
    CHECK(b.empty());
    auto byte = [](size_t i) { return uint8_t((i * 2654435761u) >> 13); };
    const size_t steps[] = {1, 4095, 100000, size_t(3) << 20, 17, size_t(9) << 20, size_t(2) << 20};
    for (size_t n : steps) {
        const size_t from = b.size();
        uint8_t* at = b.room(n);
        REQUIRE(at == b.data() + from);
        for (size_t i = 0; i < n; i++) at[i] = byte(from + i);
        b.grown(n);
    }
    REQUIRE(b.size() == 1 + 4095 + 100000 + (size_t(14) << 20) + 17);
    size_t wrong = 0;
    for (size_t i = 0; i < b.size(); i++) wrong += b[i] != byte(i);
    CHECK(wrong == 0);
    vela::Bytes moved = std::move(b);
    CHECK(b.empty());
    CHECK(moved.size() == 1 + 4095 + 100000 + (size_t(14) << 20) + 17);
    CHECK(moved[moved.size() - 1] == byte(moved.size() - 1));
}

TEST_CASE("idx: the MNIST files made by scripts/get-data", "[idx][data]") {
    // Run from the repository root (CTest does); skipped before get-data has run.
    const std::string dir = "data/mnist/";
    if (!fs::exists(dir + "t10k-labels-idx1-ubyte")) {
        WARN("data/mnist missing: run scripts/get-data");
        return;
    }
    vela::Idx labels = vela::read_idx(dir + "t10k-labels-idx1-ubyte");
    vela::Idx images = vela::read_idx(dir + "t10k-images-idx3-ubyte");
    REQUIRE(labels.samples() == 2004);
    REQUIRE(images.dims == std::vector<int64_t>{2004, 28, 28});
    // The 80/20 split per digit of the npm package's counts (1001, 1127, 991,
    // 1032, 980, 863, 1014, 1070, 944, 978): n − floor(0.8·n) test images each.
    std::vector<int> count(10, 0);
    for (uint8_t l : labels.data) count.at(l)++;
    CHECK(count == std::vector<int>{201, 226, 199, 207, 196, 173, 203, 214, 189, 196});
}

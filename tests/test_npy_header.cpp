// The .npy header reader (src/lua/npy.cpp) on headers cut anywhere, with each
// header in a buffer of exactly its size: under the sanitizer build
// (scripts/setup.sh --sanitize) a read one byte outside is a
// heap-buffer-overflow report (issue 24, item 15: a header ending in a key
// read the byte before it). Also shapes whose byte count passes 2^64
// (item 16), and good headers against hand-written shapes.
#include <catch2/catch.hpp>

#include <cstring>
#include <memory>
#include <string>

#include "core/error.hpp"
#include "lua/npy.hpp"

using vela::Error;
using namespace vela::lua::npy;

namespace {

// Reads a header from a version 1.0 .npy image of `dict` followed by `data` bytes
// (the data itself never read), each piece copied out of a heap block of its exact size.
Header header_of(const std::string& dict, uint64_t data) {
    std::string image = std::string("\x93NUMPY\x01\x00", 8) + char(dict.size() & 0xff) + char(dict.size() >> 8) + dict;
    std::unique_ptr<char[]> exact(new char[image.size()]);
    std::memcpy(exact.get(), image.data(), image.size());
    size_t at = 0;
    ReadFn read = [&](void* dst, size_t n) {
        if (n > image.size() - at) throw Error("x.npy is truncated");
        std::memcpy(dst, exact.get() + at, n);
        at += n;
    };
    return read_header(read, image.size() + data, "x.npy");
}

std::string message(const std::string& dict, uint64_t data = 0) {
    try {
        header_of(dict, data);
    } catch (const Error& e) {
        return e.what();
    }
    return "no error";
}

}  // namespace

TEST_CASE("npy header: cut after a key, in a string or a tuple is malformed, read within bounds", "[npy]") {
    const std::string full = "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }";
    // Every prefix of a good header: an error naming the file, never a read past it.
    for (size_t n = 0; n + 3 < full.size(); ++n) {
        std::string m = message(full.substr(0, n));
        INFO(full.substr(0, n) << " -> " << m);
        CHECK(m.find("x.npy") != std::string::npos);
        CHECK(m != "no error");
    }
    CHECK(message("{'descr': '<f4', 'fortran_order': True, 'shape':").find("malformed") != std::string::npos);
    CHECK(message("{'descr': '<f4', 'fortran_order': True, 'shape':   ").find("malformed") != std::string::npos);
    CHECK(message("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,)}").find("malformed") != std::string::npos);
}

TEST_CASE("npy header: shapes whose byte count passes 2^64 are errors, not wrapped numbers", "[npy]") {
    // (2147352580 · 1073807362) · 8 = 2^64 + 64
    std::string m = message("{'descr': '<f8', 'fortran_order': True, 'shape': (2147352580, 1073807362), }", 64);
    CHECK(m.find("too large") != std::string::npos);
    CHECK(message("{'descr': '<f4', 'fortran_order': True, 'shape': (2147483648, 1), }").find("at most 2^31") !=
          std::string::npos);
    CHECK(message("{'descr': '<f4', 'fortran_order': True, 'shape': (99999999999,), }").find("malformed") !=
          std::string::npos);
}

TEST_CASE("npy header: good headers give the shape and byte counts written in them", "[npy]") {
    Header h = header_of("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 24);
    CHECK(h.rows == 2);
    CHECK(h.cols == 3);
    CHECK(!h.fortran);
    CHECK(h.data_bytes == 24);
    Header v = header_of("{'descr': '|u1', 'fortran_order': True, 'shape': (5,), }", 5);
    CHECK(v.rows == 5);
    CHECK(v.cols == 1);
    CHECK(v.elem == 1);
    Header s = header_of("{'descr': '<f8', 'fortran_order': False, 'shape': (), }", 8);
    CHECK(s.rows == 1);
    CHECK(s.cols == 1);
    CHECK(message("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 15).find("truncated") !=
          std::string::npos);
    CHECK(message("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2, 2), }", 32).find("3-D") !=
          std::string::npos);
}

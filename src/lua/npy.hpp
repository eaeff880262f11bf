// Saving and loading matrices in NumPy's formats, so numpy.load reads what
// vela wrote and vela reads what NumPy wrote:
//   .npy  one array: the "\x93NUMPY" header (a Python dict literal giving
//         descr, fortran_order and shape), then the raw elements. vela writes
//         version 1.0, float32 ('<f4') or uint8 ('|u1'), 2-D (1-D for a column
//         that load made from a 1-D array, 0-D likewise), fortran_order
//         True (column-major, as vela stores matrices), the header padded to
//         a multiple of 64 bytes as NumPy pads it. It reads versions 1-3,
//         either order, 0-, 1- and 2-D, and '<f4', '|u1', '<f8', '<i4', '<i8'
//         (the last three converted to float32).
//   .npz  a zip of .npy members, one per name (numpy.savez's layout): see
//         npz.hpp.
// Files are untrusted (DESIGN.md): the header is parsed with every index
// checked, its claimed size is checked against the bytes the file (or zip
// member) really holds before the matrix is allocated, and the elements go
// between the file and the device in pieces of at most 4 MiB: neither a load
// nor a save makes a host copy of the whole matrix.
//
// This file: the .npy format; files themselves are file_io.hpp, the Lua
// functions save and load src/lua/io.cpp.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "core/device.hpp"
#include "core/matrix.hpp"

namespace vela::lua::npy {

// Exactly n bytes into dst, or an error (a truncated file).
using ReadFn = std::function<void(void* dst, size_t n)>;
using WriteFn = std::function<void(const void* src, size_t n)>;

// What a .npy header declares.
struct Header {
    DType dtype = DType::f32;  // what vela makes of it
    std::string descr;         // "<f4", "|u1", "<f8", "<i4", "<i8"
    int elem = 4;              // bytes per element in the file
    bool fortran = true;
    int64_t rows = 1, cols = 1;  // 1-D n: n×1; 0-D: 1×1
    int ndim = 2;                // the shape's length as the file gives it: 0, 1 or 2
    uint64_t header_bytes = 0;   // magic, version, length and dict
    uint64_t data_bytes = 0;     // rows·cols·elem (no wrap: each dimension < 2^31)
};

// The header dict alone ("{'descr': '<f4', ...}"); `what` names the file in errors.
Header parse_dict(const std::string& dict, const std::string& what);
// Reads and parses a header from a file or member of `total` bytes, and
// checks that exactly data_bytes follow it.
Header read_header(const ReadFn& read, uint64_t total, const std::string& what);
// The elements after the header, onto dev, in pieces.
Matrix read_data(const Header& h, const ReadFn& read, Device& dev, const std::string& what);

// Writing: the header vela writes for m, the file's total size, and the
// elements of m (a view, transposed or not), downloaded in pieces.
// ndim: the shape's length to write, for a matrix that load made from a
// 1-D or 0-D array: 1 writes an n×1 column as (n,), 0 a 1×1 as (); any
// other shape is written 2-D whatever ndim says.
std::string header_for(const Matrix& m, int ndim = 2);
uint64_t file_bytes(const Matrix& m, int ndim = 2);
void write_data(const Matrix& m, const WriteFn& write);

// Pieces of at most this many elements go between the host and a device.
constexpr int64_t kPiece = int64_t(1) << 20;

}  // namespace vela::lua::npy

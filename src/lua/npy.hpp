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
//
// This file: those formats to and from bytes and files; the Lua functions save
// and load are src/lua/io.cpp.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/device.hpp"

namespace vela::lua::npy {

// One array as read from or written to a file: its element type, shape and
// column-major host elements.
struct Array {
    DType dtype = DType::f32;
    int64_t rows = 0, cols = 0;
    bool one_d = false;  // a 1-D array of `rows` (read so, and written back so: shape (n,))
    std::vector<float> f32;
    std::vector<uint8_t> u8;
};

// An entry of a .npz: an array, or a string (a member that is not .npy).
struct Entry {
    bool is_text = false;
    Array array;
    std::string text;
};

// `what` is how errors name the file ("vela.load: 'x.npy'").
std::string npy_bytes(const Array& a);
Array parse_npy(const std::string& s, const std::string& what);
Array from_matrix(const Matrix& m);  // downloads
Matrix to_matrix(const Array& a, Device& dev);
std::string read_file(const std::string& path, const std::string& what);
void write_file(const std::string& path, const std::string& bytes, const std::string& what);  // tmp, then rename
void write_npz(const std::string& path, const std::map<std::string, Entry>& entries, const std::string& what);
std::map<std::string, Entry> read_npz(const std::string& path, const std::string& what);

}  // namespace vela::lua::npy

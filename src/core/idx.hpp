// IDX files (the format MNIST and Fashion-MNIST ship in), raw or gzipped.
// Layout: a big-endian magic 0x0000TTDD (TT the element type, DD the number of
// dimensions), DD big-endian uint32 sizes, then the elements. vela reads the
// unsigned-byte type (0x08), the one every MNIST-like set uses.
//
// Every problem is a vela::Error naming the file and what is wrong: missing,
// not IDX (wrong magic), an element type other than ubyte, an unexpected
// number of dimensions, truncated, or trailing bytes after the payload.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/matrix.hpp"

namespace vela {

class Device;

struct Idx {
    std::vector<int64_t> dims;  // as in the file: dims[0] is the number of samples
    std::vector<uint8_t> data;  // product(dims) bytes, in file order
    int64_t samples() const { return dims.empty() ? 0 : dims[0]; }
    int64_t sample_size() const;  // product of dims[1..], 1 for a label file
};

// Reads path (gzip detected by its content, not its name).
Idx read_idx(const std::string& path);

// The samples as columns: a uint8 (sample_size)×samples matrix on dev, so an
// images file of n 28×28 images becomes 784×n (pixel (r, c) of image j at
// row 28·r + c of column j) and a labels file becomes 1×n.
Matrix idx_to_matrix(const Idx& idx, Device& dev);

// A labels file as a float 1×n vector of 1-based class indices (label v
// becomes v + 1). Every label must be < classes; the error names the file,
// the sample and the value otherwise.
Matrix read_idx_labels(const std::string& path, int classes, Device& dev);

}  // namespace vela

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

// Bytes read from a file, grown as they arrive: an anonymous mapping that asks
// for transparent huge pages, grown with mremap (what was read moves with its
// pages, nothing is copied) and never zero-filled before it is written. A
// vector grown the same way copied what it held at each doubling and cleared
// each new chunk: reading Fashion-MNIST's 47 MB of training images touched
// ~95 MB of fresh 4 KiB pages, on a VM whose host maps each one at its first
// touch (docs/results.md, "IDX files read into huge pages").
class Bytes {
public:
    Bytes() = default;
    ~Bytes();
    Bytes(Bytes&& o) noexcept;
    Bytes& operator=(Bytes&& o) noexcept;
    Bytes(const Bytes&) = delete;
    Bytes& operator=(const Bytes&) = delete;

    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    const uint8_t* data() const { return p_; }
    uint8_t* data() { return p_; }
    uint8_t operator[](size_t i) const { return p_[i]; }
    const uint8_t* begin() const { return p_; }
    const uint8_t* end() const { return p_ + size_; }
    // Room for n more bytes after size(), returned; nullptr where the system refused the memory.
    uint8_t* room(size_t n);
    void grown(size_t n) { size_ += n; }  // n bytes written at room()'s pointer now count

private:
    uint8_t* p_ = nullptr;
    size_t size_ = 0, cap_ = 0;
};

struct Idx {
    std::vector<int64_t> dims;  // as in the file: dims[0] is the number of samples
    Bytes data;                 // product(dims) bytes, in file order
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

// Matrix: a view (shape, offset, leading dimension, transposed flag) on a
// Buffer that lives on exactly one Device. Views never copy; kernels read the
// view fields and address the buffer directly. All indices here are 0-based;
// the Lua layer converts from the 1-based indices users type.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace vela {

class Device;

enum class DType : uint8_t { f32, u8 };
size_t dtype_size(DType t);
const char* dtype_name(DType t);  // "float32", "uint8"

// A block of device memory holding `count` elements of one dtype. Made only by
// Device::alloc. `release()` frees the storage at once (deferred by the device
// until queued work that uses it has finished); the Buffer object stays as a
// tombstone so every view of it reports "released" instead of crashing.
class Buffer {
public:
    Buffer(Device* device, DType dtype, size_t count) : device_(device), dtype_(dtype), count_(count) {}
    virtual ~Buffer() = default;
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;

    Device& device() const { return *device_; }
    DType dtype() const { return dtype_; }
    size_t count() const { return count_; }
    size_t bytes() const { return count_ * dtype_size(dtype_); }
    bool released() const { return released_; }
    void release() {
        if (!released_) {
            free_storage();
            released_ = true;
        }
    }

protected:
    // Subclasses free their storage here; called at most once.
    virtual void free_storage() = 0;

private:
    Device* device_;
    DType dtype_;
    size_t count_;
    bool released_ = false;
};

struct Matrix {
    std::shared_ptr<Buffer> buf;
    int64_t rows = 0, cols = 0;  // logical shape, after transposition
    int64_t offset = 0;          // elements from the buffer start to element (0, 0)
    int64_t ld = 1;              // leading dimension of the stored (untransposed) layout, >= 1
    bool trans = false;          // stored as cols×rows; the view reads it transposed

    Device& device() const { return buf->device(); }
    DType dtype() const { return buf->dtype(); }
    int64_t size() const { return rows * cols; }
    bool empty() const { return rows == 0 || cols == 0; }
    bool is_vector() const { return rows == 1 || cols == 1; }

    // Stored (untransposed) shape: what BLAS calls the matrix before op().
    int64_t srows() const { return trans ? cols : rows; }
    int64_t scols() const { return trans ? rows : cols; }

    // Buffer index of logical element (i, j).
    int64_t index(int64_t i, int64_t j) const { return offset + (trans ? j + i * ld : i + j * ld); }
    // Step in the buffer between consecutive logical rows (i+1) and columns (j+1).
    int64_t row_step() const { return trans ? ld : 1; }
    int64_t col_step() const { return trans ? 1 : ld; }
    // For a vector view (one row or one column): element k is at offset + k*inc().
    int64_t inc() const { return rows == 1 ? col_step() : row_step(); }
    // True when the logical elements are one dense column-major run from offset.
    bool contiguous() const {
        if (empty()) return true;
        if (!trans) return cols == 1 || ld == rows;
        return rows == 1 || (cols == 1 && ld == 1);
    }

    // Views (0-based; bounds are checked by the caller, see ops.hpp).
    Matrix t() const;
    Matrix view(int64_t i, int64_t j, int64_t r, int64_t c) const;
    Matrix col(int64_t j) const { return view(0, j, rows, 1); }
    Matrix row(int64_t i) const { return view(i, 0, 1, cols); }
    Matrix columns(int64_t j, int64_t n) const { return view(0, j, rows, n); }

    // Half-open range [first, last] of buffer elements the view can touch.
    int64_t first_index() const { return offset; }
    int64_t last_index() const { return empty() ? offset : index(rows - 1, cols - 1); }
    // True when the two views may touch a common element (same buffer and
    // overlapping element ranges; exact for the contiguous case, conservative otherwise).
    bool overlaps(const Matrix& o) const;

    std::string shape_str() const;  // "256×784"
};

}  // namespace vela

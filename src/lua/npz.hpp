// NumPy's .npz: a zip of .npy members, one per name (numpy.savez's layout).
// Written by vela itself, stored (uncompressed) with ZIP64 records where a
// member or the archive passes 4 GiB as Python's zipfile writes them, each
// member streamed from its device in pieces through files::Writer (a
// temporary renamed over the target when whole). Read through libzip
// (stored, as savez writes, or deflated, as savez_compressed does), each
// member's claimed size checked against what its compressed bytes can hold
// before anything is allocated, and read in pieces.
// A string value is a member of its own name (a text file) and comes back as
// a string: checkpoints keep their manifest that way.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "core/device.hpp"
#include "core/matrix.hpp"

namespace vela::lua::npz {

struct Member {
    std::string name;  // without ".npy"
    bool is_text = false;
    Matrix matrix;
    std::string text;
    int64_t rows = 0, cols = 0;  // a matrix member's shape (also when only headers are read)
    int ndim = 2;                // its shape's length in the file (1-D n: n×1); save writes it back
    DType dtype = DType::f32;
};

// The largest text member read (a checkpoint's manifest is a few KiB).
constexpr uint64_t kTextLimit = uint64_t(64) << 20;

// `what` names the file in errors ("save: 'x.npz'").
void write(const std::string& path, const std::vector<Member>& members, const std::string& what);
// headers_only: the matrices' shapes and the text members, nothing allocated
// on a device (what a checkpoint checks before it loads).
std::vector<Member> read(const std::string& path, Device& dev, const std::string& what, bool headers_only = false);

}  // namespace vela::lua::npz

// Labels and column indices: one contract on every device. A kernel that
// takes class labels (softmax_xent) or column numbers (gather_cols) accepts
// only integers in 1..limit; anything else (a fraction, NaN, ±Inf, 0, a
// negative number, a number past the limit) is an error naming the function,
// the argument and the first bad position (1-based), in these exact words.
//
// On cpu the kernel checks before it writes anything and throws at once. On a
// Vulkan device the kernel itself records the first bad position in a status
// word of its command buffer (no host wait per call) and writes NaN in the
// bad columns of its outputs; the first read, sync or reduction after the
// call has finished throws the same words, prefixed with the device and
// "an earlier call failed" (see vulkan::Stream, docs/lua-api.md).
#pragma once
#include <cmath>
#include <cstdint>
#include <string>

#include "core/error.hpp"

namespace vela {

// What an index operand must hold: its name in messages and its kind.
struct IndexCheck {
    const char* fn;    // "softmax_xent"
    const char* arg;   // "labels"
    const char* what;  // "a class index", "a column index of src"
    uint64_t limit;    // the largest valid value (rows of z, columns of src)
};

// True when v is an integer in 1..limit (NaN and ±Inf are not).
inline bool index_ok(float v, uint64_t limit) {
    return v >= 1.0f && double(v) <= double(limit) && v == std::floor(v);
}

// "softmax_xent: labels at position 3 is not a class index (an integer in 1..10)"; pos is 0-based.
inline std::string bad_index_message(const IndexCheck& c, uint64_t pos) {
    return format("%s: %s at position %llu is not %s (an integer in 1..%llu)", c.fn, c.arg,
                  (unsigned long long)(pos + 1), c.what, (unsigned long long)c.limit);
}

}  // namespace vela

// error_of(f): the message of the vela::Error that f throws, "" when none.
// Tests compare it with the exact text a user would see.
#pragma once
#include <string>

#include "core/error.hpp"

namespace vela::test {

template <class F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace vela::test

#include "core/error.hpp"

#include <cstdarg>
#include <cstdio>
#include <vector>

namespace vela {

std::atomic<bool>& interrupt_flag() {
    static std::atomic<bool> flag{false};
    return flag;
}

void check_interrupt() {
    if (interrupt_flag().exchange(false)) throw Interrupted();
}

static std::string vformat(const char* fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = std::vsnprintf(nullptr, 0, fmt, ap2);
    va_end(ap2);
    std::string s(n > 0 ? size_t(n) : 0, '\0');
    if (n > 0) std::vsnprintf(s.data(), size_t(n) + 1, fmt, ap);
    return s;
}

std::string format(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    std::string s = vformat(fmt, ap);
    va_end(ap);
    return s;
}

void fail(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    std::string s = vformat(fmt, ap);
    va_end(ap);
    throw Error(s);
}

}  // namespace vela

#include "vulkan/status_line.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace vela::vk {

namespace {

std::mutex mu;
bool shown = false;

bool enabled() {
    static const bool on = [] {
        const char* e = std::getenv("VELA_STATUS");
        if (e && std::strcmp(e, "0") == 0) return false;
        const char* term = std::getenv("TERM");
        return isatty(STDERR_FILENO) && !(term && std::strcmp(term, "dumb") == 0);
    }();
    return on;
}

}  // namespace

void status_show(const std::string& text) {
    if (!enabled()) return;
    winsize ws{};
    size_t width = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 ? ws.ws_col - 1 : 79;
    // Cut by characters, not bytes: the text may hold UTF-8 (… and ×).
    std::string line;
    size_t chars = 0;
    for (size_t i = 0; i < text.size() && chars < width; ++i) {
        line += text[i];
        if ((static_cast<unsigned char>(text[i]) & 0xc0) != 0x80) ++chars;
        while (i + 1 < text.size() && (static_cast<unsigned char>(text[i + 1]) & 0xc0) == 0x80) line += text[++i];
    }
    std::lock_guard<std::mutex> lock(mu);
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
    std::fflush(stderr);
    shown = true;
}

void status_clear() {
    std::lock_guard<std::mutex> lock(mu);
    if (!shown) return;
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
    shown = false;
}

}  // namespace vela::vk

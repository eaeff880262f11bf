// The kernel's stdout and stderr as Jupyter streams (capture.hpp).
#include "jupyter/capture.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <stdexcept>

namespace vela::jupyter {

namespace {

void make_pipe(int fds[2]) {
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("vela kernel: cannot make a pipe");
    ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
    ::fcntl(fds[1], F_SETPIPE_SZ, 1 << 20);  // collect() relies on it; a smaller pipe is only slower
}

// The length of the longest prefix of s that does not end inside a UTF-8
// sequence: a read may stop in the middle of a character, and a message
// must not.
size_t complete_utf8(const std::string& s) {
    size_t n = s.size(), back = 0;
    while (back < 4 && back < n && (static_cast<unsigned char>(s[n - 1 - back]) & 0xC0) == 0x80) ++back;
    if (back == n) return n;
    unsigned char lead = static_cast<unsigned char>(s[n - 1 - back]);
    size_t want = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    return want > back + 1 ? n - back - 1 : n;
}

}  // namespace

Capture::Capture(Sink sink) : sink_(std::move(sink)) {
    std::fflush(stdout);
    std::fflush(stderr);
    make_pipe(out_);
    make_pipe(err_);
    make_pipe(wake_);
    saved_[0] = ::dup(1);
    saved_[1] = ::dup(2);
    ::dup2(out_[1], 1);
    ::dup2(err_[1], 2);
    // Lines reach the notebook as they are printed, not when a 4 KiB buffer fills.
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    thread_ = std::thread([this] { reader(); });
}

Capture::~Capture() {
    char c = 'q';
    (void)!::write(wake_[1], &c, 1);
    thread_.join();
    drain();  // what the last request printed after its reply
    ::dup2(saved_[0], 1);
    ::dup2(saved_[1], 2);
    ::close(saved_[0]);
    ::close(saved_[1]);
    for (int* p : {out_, err_, wake_})
        for (int i = 0; i < 2; ++i) ::close(p[i]);
}

bool Capture::read_available(int fd, std::string& out) {
    char buf[65536];
    bool any = false;
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n <= 0) break;
        out.append(buf, size_t(n));
        any = true;
        if (out.size() >= (1u << 20)) break;  // one message at most about 1 MiB
    }
    return any;
}

// Reads what fd holds and hands it to the sink, whole characters only (the
// rest waits for the next read). Called with the lock held.
void Capture::forward(int fd) {
    std::string& text = carry_[fd == out_[0] ? 0 : 1];
    while (read_available(fd, text)) {
        size_t n = complete_utf8(text);
        if (n == 0) continue;
        std::string chunk = text.substr(0, n);
        text.erase(0, n);
        sink_(fd == out_[0] ? "stdout" : "stderr", chunk);
    }
}

void Capture::reader() {
    // Jupyter's interrupt is a SIGINT to the process: it is for the thread
    // running Lua, never for this one.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    for (;;) {
        pollfd fds[3] = {{out_[0], POLLIN, 0}, {err_[0], POLLIN, 0}, {wake_[0], POLLIN, 0}};
        if (::poll(fds, 3, -1) < 0) continue;
        if (fds[2].revents) return;
        // A short pause lets a burst of small writes go out as one message.
        ::usleep(20000);
        std::lock_guard<std::mutex> g(lock_);
        forward(out_[0]);
        forward(err_[0]);
    }
}

void Capture::drain() {
    std::fflush(stdout);
    std::fflush(stderr);
    std::lock_guard<std::mutex> g(lock_);
    forward(out_[0]);
    forward(err_[0]);
}

void Capture::publish(const std::function<void()>& fn) {
    std::fflush(stdout);
    std::fflush(stderr);
    std::lock_guard<std::mutex> g(lock_);
    forward(out_[0]);  // what was printed before comes first
    forward(err_[0]);
    fn();
}

std::string Capture::collect(const std::function<void()>& fn) {
    drain();
    std::lock_guard<std::mutex> g(lock_);
    fn();
    std::fflush(stdout);
    std::string text;
    read_available(out_[0], text);
    while (read_available(out_[0], text)) {
    }
    return text;
}

}  // namespace vela::jupyter

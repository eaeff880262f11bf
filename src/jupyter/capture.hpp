// What the kernel's process writes to its stdout and stderr (Lua's print and
// io.write, help(), C++ messages, a driver's warnings) becomes Jupyter's
// stream messages. The two descriptors are pipes; a reader thread publishes
// what arrives while a request runs, so a long cell's output shows as it is
// written. Every message the kernel itself publishes goes through publish(),
// under the same lock, because a ZeroMQ socket is not safe across threads.
#pragma once
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace vela::jupyter {

class Capture {
public:
    using Sink = std::function<void(const std::string& stream, const std::string& text)>;
    // Replaces descriptors 1 and 2 by pipes; the sink receives their text.
    explicit Capture(Sink sink);
    ~Capture();
    Capture(const Capture&) = delete;
    Capture& operator=(const Capture&) = delete;

    // Publishes everything written so far (after flushing C's stdio), in order.
    void drain();
    // Runs fn with the lock held: no stream text is published meanwhile.
    void publish(const std::function<void()>& fn);
    // Runs fn and returns what it wrote to stdout instead of publishing it
    // (for help() under inspect_request). fn must write less than the pipe
    // holds (1 MiB).
    std::string collect(const std::function<void()>& fn);

private:
    void reader();
    bool read_available(int fd, std::string& out);
    void forward(int fd);

    Sink sink_;
    int saved_[2] = {-1, -1};  // the process's own stdout and stderr, put back at the end
    int out_[2] = {-1, -1}, err_[2] = {-1, -1}, wake_[2] = {-1, -1};
    std::string carry_[2];  // a character split by a read, per stream
    std::mutex lock_;
    std::thread thread_;
};

}  // namespace vela::jupyter

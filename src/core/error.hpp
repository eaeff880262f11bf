// Errors and interruption: the one way a failure leaves the core.
// Every check in the core throws vela::Error with a message that names the
// function, the argument and what was expected versus what came; the Lua
// bindings turn it into a Lua error, so the session survives.
#pragma once
#include <atomic>
#include <stdexcept>
#include <string>
#include <utility>

namespace vela {

struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Two arguments of one call on different devices: "mm: a is on cpu but b is
// on vulkan:0". `first` and `second` are the two devices' ids, in the order
// the message names them, so a front end can say how to move one in its own
// syntax.
struct DeviceMismatch : Error {
    DeviceMismatch(const std::string& message, std::string first_id, std::string second_id)
        : Error(message), first(std::move(first_id)), second(std::move(second_id)) {}
    std::string first, second;
};

// Thrown when the user pressed Ctrl-C while the host waited (a sync, a read).
struct Interrupted : Error {
    Interrupted() : Error("interrupted") {}
    explicit Interrupted(const std::string& message) : Error(message) {}  // e.g. what was dropped
};

// Set by the shell's SIGINT handler; long host waits poll it and throw
// Interrupted. Cleared by the shell before each command.
std::atomic<bool>& interrupt_flag();
void check_interrupt();  // throws Interrupted and clears the flag when set

// printf-style message builder for errors.
std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
[[noreturn]] void fail(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace vela

// Drives the real vela binary from the tests: once with pipes (run_vela) for
// the command line, and through a pseudo-terminal (Pty) for the prompt. Every
// wait has a deadline, so a hang fails its test instead of blocking the suite.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace vela_test {

struct Result {
    int status = -1;  // exit code; -1 when killed at the deadline or by a signal
    bool timed_out = false;
    std::string out, err;
};

// Runs VELA_BINARY with args, feeding `input` on stdin; env entries are set
// (an empty value unsets). VELA_HISTORY always points at a scratch file.
Result run_vela(const std::vector<std::string>& args, const std::string& input = "",
                const std::map<std::string, std::string>& env = {}, double timeout_s = 30);
// The same for any program, run in directory cwd ("" for the current one).
Result run_program(const std::string& program, const std::vector<std::string>& args, const std::string& input,
                   const std::map<std::string, std::string>& env, const std::string& cwd, double timeout_s);

// A temporary file that is removed with the object.
struct TempFile {
    explicit TempFile(const std::string& contents = "", const std::string& suffix = "");
    ~TempFile();
    std::string path;
};

class Pty {
public:
    // A terminal of `columns` columns (and 40 rows).
    explicit Pty(const std::vector<std::string>& args = {}, const std::map<std::string, std::string>& env = {},
                 int columns = 100);
    ~Pty();
    Pty(const Pty&) = delete;
    Pty& operator=(const Pty&) = delete;

    // Types s at the prompt: waits until the line editor reads the terminal
    // (raw mode), then writes.
    void send(const std::string& s);
    // Ctrl-C now, for a command that is running (the terminal is not raw).
    void interrupt();
    // Whether the line editor has the terminal in raw mode within timeout_s.
    bool line_editor_reading(double timeout_s);
    // Reads until the output after the last match contains `needle`; false
    // at the deadline. The search moves past each match, so expecting the
    // prompt twice waits for two prompts.
    bool expect(const std::string& needle, double timeout_s = 15);
    // Waits for the process to end: its exit code, or -1 (signal, deadline).
    int wait_exit(double timeout_s = 15);
    // Everything read so far, and what came after the last match.
    const std::string& output() const { return out_; }
    std::string rest() const { return out_.substr(mark_); }

private:
    bool pump(double timeout_s);  // reads what is there; false when nothing came
    void write_all(const std::string& s);
    int master_ = -1;
    int pid_ = -1;
    int status_ = -2;
    size_t mark_ = 0;
    std::string out_;
    std::string history_;
};

}  // namespace vela_test

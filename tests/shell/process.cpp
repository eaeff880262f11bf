#include "process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace vela_test {

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_left(clock_type::time_point deadline) {
    return std::chrono::duration<double>(deadline - clock_type::now()).count();
}

[[noreturn]] void exec_program(const std::string& program, const std::vector<std::string>& args,
                               const std::map<std::string, std::string>& env) {
    for (const auto& [k, v] : env) {
        if (v.empty()) unsetenv(k.c_str());
        else setenv(k.c_str(), v.c_str(), 1);
    }
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(program.c_str()));
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(program.c_str(), argv.data());
    _exit(127);
}

[[noreturn]] void exec_vela(const std::vector<std::string>& args, const std::map<std::string, std::string>& env) {
    // These sessions compare a terminal's bytes: no first-use status line
    // (vulkan/status_line.hpp; tests/lua/test_first_use.lua tests it) unless asked for.
    if (!env.count("VELA_STATUS")) setenv("VELA_STATUS", "0", 1);
    exec_program(VELA_BINARY, args, env);
}

int decode(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : -1; }

std::string scratch_history() {
    char tmpl[] = "/tmp/vela-history-XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0) throw std::runtime_error("mkstemp failed");
    close(fd);
    return tmpl;
}

}  // namespace

TempFile::TempFile(const std::string& contents, const std::string& suffix) {
    std::string tmpl = "/tmp/vela-test-XXXXXX" + suffix;
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    int fd = mkstemps(buf.data(), int(suffix.size()));
    if (fd < 0) throw std::runtime_error("mkstemps failed");
    path = buf.data();
    if (!contents.empty() && write(fd, contents.data(), contents.size()) != ssize_t(contents.size()))
        throw std::runtime_error("write failed");
    close(fd);
}

TempFile::~TempFile() { unlink(path.c_str()); }

Result run_vela(const std::vector<std::string>& args, const std::string& input,
                const std::map<std::string, std::string>& env, double timeout_s) {
    TempFile history;
    std::map<std::string, std::string> e = env;
    if (!e.count("VELA_HISTORY")) e["VELA_HISTORY"] = history.path;
    return run_program(VELA_BINARY, args, input, e, "", timeout_s);
}

Result run_program(const std::string& program, const std::vector<std::string>& args, const std::string& input,
                   const std::map<std::string, std::string>& env, const std::string& cwd, double timeout_s) {
    int in[2], out[2], err[2];
    if (pipe(in) || pipe(out) || pipe(err)) throw std::runtime_error("pipe failed");
    pid_t pid = fork();
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        dup2(err[1], 2);
        for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) close(fd);
        if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
        exec_program(program, args, env);
    }
    close(in[0]);
    close(out[1]);
    close(err[1]);
    signal(SIGPIPE, SIG_IGN);
    size_t written = 0;
    if (input.empty()) {
        close(in[1]);
        in[1] = -1;
    }
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    fcntl(err[0], F_SETFL, O_NONBLOCK);
    Result r;
    auto deadline = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(timeout_s));
    bool out_open = true, err_open = true;
    while (out_open || err_open) {
        double left = seconds_left(deadline);
        if (left <= 0) {
            r.timed_out = true;
            kill(pid, SIGKILL);
            break;
        }
        pollfd fds[3] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}, {in[1], POLLOUT, 0}};
        int nfds = in[1] >= 0 ? 3 : 2;
        poll(fds, nfds, int(left * 1000) + 1);
        char buf[4096];
        for (int i = 0; i < 2; ++i) {
            if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            ssize_t n = read(fds[i].fd, buf, sizeof buf);
            if (n > 0) (i == 0 ? r.out : r.err).append(buf, size_t(n));
            else if (n == 0 || errno != EAGAIN) (i == 0 ? out_open : err_open) = false;
        }
        if (in[1] >= 0 && (fds[2].revents & (POLLOUT | POLLERR | POLLHUP))) {
            ssize_t n = write(in[1], input.data() + written, input.size() - written);
            if (n > 0) written += size_t(n);
            if (n < 0 || written == input.size()) {
                close(in[1]);
                in[1] = -1;
            }
        }
    }
    if (in[1] >= 0) close(in[1]);
    close(out[0]);
    close(err[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    r.status = r.timed_out ? -1 : decode(status);
    return r;
}

Pty::Pty(const std::vector<std::string>& args, const std::map<std::string, std::string>& env, int columns)
    : history_(scratch_history()) {
    std::map<std::string, std::string> e = env;
    if (!e.count("VELA_HISTORY")) e["VELA_HISTORY"] = history_;
    if (!e.count("TERM")) e["TERM"] = "xterm";
    winsize ws{};
    ws.ws_row = 40;
    ws.ws_col = static_cast<unsigned short>(columns);
    pid_ = forkpty(&master_, nullptr, nullptr, &ws);
    if (pid_ < 0) throw std::runtime_error("forkpty failed");
    if (pid_ == 0) exec_vela(args, e);
    fcntl(master_, F_SETFL, O_NONBLOCK);
}

Pty::~Pty() {
    if (status_ == -2) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
    }
    close(master_);
    unlink(history_.c_str());
}

bool Pty::line_editor_reading(double timeout_s) {
    // libedit prints its prompt a moment before it puts the terminal in raw
    // mode; a key typed in between goes through the line discipline (a
    // Ctrl-D there is lost). The pty's settings are shared by both ends, so
    // the master sees when canonical mode is off, however slow the child is.
    auto deadline = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(timeout_s));
    for (;;) {
        termios t{};
        if (tcgetattr(master_, &t) == 0 && !(t.c_lflag & ICANON)) return true;
        if (seconds_left(deadline) <= 0) return false;
        pump(0.005);
    }
}

void Pty::send(const std::string& s) {
    line_editor_reading(15);  // at the deadline the keys go anyway and the test's expect fails
    write_all(s);
}

void Pty::interrupt() { write_all("\x03"); }

void Pty::write_all(const std::string& s) {
    size_t done = 0;
    auto deadline = clock_type::now() + std::chrono::seconds(10);
    while (done < s.size() && seconds_left(deadline) > 0) {
        ssize_t n = write(master_, s.data() + done, s.size() - done);
        if (n > 0) done += size_t(n);
        else pump(0.01);  // the child is not reading yet: drain its output
    }
}

bool Pty::pump(double timeout_s) {
    pollfd fd{master_, POLLIN, 0};
    if (poll(&fd, 1, int(timeout_s * 1000)) <= 0) return false;
    char buf[4096];
    ssize_t n = read(master_, buf, sizeof buf);
    if (n <= 0) return false;
    out_.append(buf, size_t(n));
    return true;
}

bool Pty::expect(const std::string& needle, double timeout_s) {
    auto deadline = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(timeout_s));
    for (;;) {
        size_t at = out_.find(needle, mark_);
        if (at != std::string::npos) {
            mark_ = at + needle.size();
            return true;
        }
        double left = seconds_left(deadline);
        if (left <= 0) return false;
        if (!pump(std::min(left, 0.2)) && status_ == -2) {
            int st;
            if (waitpid(pid_, &st, WNOHANG) == pid_) {
                status_ = decode(st);
                while (pump(0.05)) {
                }
                return out_.find(needle, mark_) != std::string::npos && expect(needle, 0);
            }
        }
    }
}

int Pty::wait_exit(double timeout_s) {
    auto deadline = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(timeout_s));
    while (status_ == -2) {
        pump(0.05);
        int st;
        if (waitpid(pid_, &st, WNOHANG) == pid_) {
            status_ = decode(st);
            break;
        }
        if (seconds_left(deadline) <= 0) return -1;
    }
    return status_;
}

}  // namespace vela_test

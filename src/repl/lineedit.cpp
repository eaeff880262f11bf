#include "repl/lineedit.hpp"

#include <algorithm>
#include <editline/readline.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <clocale>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "repl/repl.hpp"

namespace vela::repl {

namespace {

constexpr int history_max = 1000;

lua_State* completion_state = nullptr;
std::vector<std::string> matches;

// libedit asks for the word between start and end (split at its word-break
// characters); complete() finds candidates for the whole expression, and
// each is cut or extended to replace exactly libedit's word.
char** attempted(const char*, int start, int end) {
    rl_attempted_completion_over = 1;  // never fall back to file names in code
    if (!completion_state || !rl_line_buffer) return nullptr;
    std::string line(rl_line_buffer, size_t(std::max(end, 0)));
    Completion c = complete(completion_state, line, end);
    matches.clear();
    for (const std::string& w : c.words) {
        if (start >= c.start) {
            size_t cut = size_t(start - c.start);
            if (w.size() >= cut) matches.push_back(w.substr(cut));
        } else {
            matches.push_back(line.substr(size_t(start), size_t(c.start - start)) + w);
        }
    }
    if (matches.empty()) return nullptr;
    // The array libedit wants: the common prefix, then every match, then null.
    std::string common = matches[0];
    for (const std::string& m : matches) {
        size_t i = 0;
        while (i < common.size() && i < m.size() && common[i] == m[i]) ++i;
        common.resize(i);
    }
    char** out = static_cast<char**>(std::malloc((matches.size() + 2) * sizeof(char*)));
    out[0] = strdup(common.c_str());
    for (size_t i = 0; i < matches.size(); ++i) out[i + 1] = strdup(matches[i].c_str());
    out[matches.size() + 1] = nullptr;
    return out;
}

volatile sig_atomic_t prompt_interrupted = 0;

// Written by the handler to wake read_byte. vela has threads that do not block
// SIGINT (OpenBLAS's, the cpu pool's), so the kernel may run the handler on one
// of them while the main thread sleeps in ppoll with SIGINT blocked outside it;
// the flag alone then went unseen until the next key (Ctrl-C at the prompt was
// ignored about half the time). The pipe wakes the reader from any thread.
int wake_pipe[2] = {-1, -1};

void on_prompt_sigint(int) {
    prompt_interrupted = 1;
    // Also for the command just entered, should this run on another thread
    // after the reader has returned and looked at prompt_interrupted.
    vela::repl::deliver_interrupt();
    if (wake_pipe[1] >= 0) {
        int saved = errno;
        ssize_t n = write(wake_pipe[1], "", 1);  // a full pipe already wakes the reader
        (void)n;
        errno = saved;
    }
}

void drain_wake_pipe() {
    char buf[64];
    while (wake_pipe[0] >= 0 && ::read(wake_pipe[0], buf, sizeof buf) > 0) {
    }
}

// Whether read_byte gave up because of Ctrl-C, so that the line editor saw
// end of input mid-line (libedit then returns the partial line, not null).
// Unset with prompt_interrupted set: the Ctrl-C came after Enter.
bool reader_cut = false;

// One byte of input, or -1 at end of input or once Ctrl-C was pressed.
// SIGINT stays blocked except inside ppoll, so a Ctrl-C can never slip in
// between looking at the flag and blocking in read: it either sets the flag
// before the look or interrupts the wait. (libedit's own reader retries an
// interrupted read and, with typed-ahead input, reads in cooked mode, where
// Ctrl-C and Ctrl-D were lost now and then.)
int read_byte() {
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    int result = -1;
    while (!prompt_interrupted) {
        pollfd p[2] = {{0, POLLIN, 0}, {wake_pipe[0], POLLIN, 0}};
        int r = ppoll(p, wake_pipe[0] >= 0 ? 2 : 1, nullptr, &old);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) break;
        if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;  // woken: look at the flag
        unsigned char c;
        ssize_t n = ::read(0, &c, 1);
        if (n == 1) {
            result = c;
            break;
        }
        if (n == 0 || (errno != EINTR && errno != EAGAIN)) break;
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    if (result < 0 && prompt_interrupted) reader_cut = true;
    return result;
}

// libedit's reader hook: one character, as a code point. In a UTF-8 locale
// the bytes of a multi-byte character are gathered here, because libedit
// takes whatever this returns as one wide character.
int read_key(FILE*) {
    int c = read_byte();
    if (c < 0xC0 || MB_CUR_MAX == 1) return c;
    int more = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : 1;
    int cp = c & (0x3F >> more);
    for (int i = 0; i < more; ++i) {
        int b = read_byte();
        if (b < 0) return -1;
        cp = (cp << 6) | (b & 0x3F);
    }
    return cp;
}

}  // namespace

// A multi-line entry is one line of the history file, its newlines written
// as the ASCII unit separator (0x1F), which typed text never holds.
static std::string to_file(std::string s) {
    std::replace(s.begin(), s.end(), '\n', '\x1f');
    return s;
}

static std::string from_file(std::string s) {
    std::replace(s.begin(), s.end(), '\x1f', '\n');
    return s;
}

std::string history_file() {
    if (const char* p = std::getenv("VELA_HISTORY")) return p;
    if (const char* home = std::getenv("HOME")) return std::string(home) + "/.vela_history";
    return "";
}

LineEditor::LineEditor(lua_State* L) : tty_(isatty(0) && isatty(1)), history_path_(history_file()) {
    if (!tty_) return;
    completion_state = L;
    std::setlocale(LC_CTYPE, "");  // libedit edits UTF-8 as characters only in a UTF-8 locale
    rl_readline_name = "vela";
    rl_getc_function = read_key;
    if (wake_pipe[0] < 0 && pipe2(wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0) wake_pipe[0] = wake_pipe[1] = -1;
    rl_initialize();
    // '.' and ':' stay inside a word so "string.fo" and "m:ad" complete whole.
    static char breaks[] = " \t\n\"'`@$><=;|&{(,+-*/%^~#[])}";
    rl_basic_word_break_characters = breaks;
    rl_completer_word_break_characters = breaks;
    rl_attempted_completion_function = attempted;
    rl_completion_append_character = '\0';
    // libedit's readline binds ^R to incremental search already; say so
    // explicitly, the habit every shell user has.
    rl_parse_and_bind("bind ^R em-inc-search-prev");
    stifle_history(history_max);
    if (!history_path_.empty()) {
        std::ifstream in(history_path_);
        std::vector<std::string> lines;
        for (std::string l; std::getline(in, l);)
            if (!l.empty()) lines.push_back(l);
        size_t first = lines.size() > size_t(history_max) ? lines.size() - history_max : 0;
        for (size_t i = first; i < lines.size(); ++i) add_history(from_file(lines[i]).c_str());
        if (!lines.empty()) last_ = from_file(lines.back());
        // Keep the file from growing without bound: rewrite it when it holds
        // twice what is loaded.
        if (lines.size() > size_t(2 * history_max)) {
            std::ofstream out(history_path_, std::ios::trunc);
            for (size_t i = first; i < lines.size(); ++i) out << lines[i] << '\n';
        }
    }
}

LineEditor::~LineEditor() { completion_state = nullptr; }

LineEditor::Status LineEditor::read(const char* prompt, std::string& line) {
    line.clear();
    if (!tty_) {
        std::fputs(prompt, stdout);
        std::fflush(stdout);
        char buf[4096];
        bool any = false;
        while (std::fgets(buf, sizeof buf, stdin)) {
            any = true;
            line += buf;
            if (!line.empty() && line.back() == '\n') break;
        }
        if (!any) return Status::eof;
        if (!line.empty() && line.back() == '\n') line.pop_back();
        return Status::line;
    }
    // Ctrl-C makes readline return null like Ctrl-D does (libedit passes the
    // signal on to this handler, installed without SA_RESTART so the read
    // stops); the flag tells them apart.
    struct sigaction sa {}, old{};
    sa.sa_handler = on_prompt_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;
    prompt_interrupted = 0;
    reader_cut = false;
    drain_wake_pipe();
    sigaction(SIGINT, &sa, &old);
    char* p = readline(prompt);
    sigaction(SIGINT, &old, nullptr);
    if (prompt_interrupted && p && !reader_cut) {
        // Ctrl-C came after Enter: the line stands, and the key is for the
        // command it starts (docall sees the flag).
        vela::interrupt_flag().store(true);
    } else if (prompt_interrupted) {
        std::free(p);
        std::fputs("\n", stdout);
        std::fflush(stdout);
        return Status::interrupted;
    }
    if (!p) return Status::eof;
    line = p;
    std::free(p);
    return Status::line;
}

void LineEditor::remember(const std::string& line) {
    // Piped input is a script, not something typed: it stays out of history.
    if (!tty_ || line == last_ || line.find_first_not_of(" \t") == std::string::npos) return;
    last_ = line;
    add_history(line.c_str());
    if (history_path_.empty()) return;
    if (FILE* f = std::fopen(history_path_.c_str(), "a")) {
        std::fprintf(f, "%s\n", to_file(line).c_str());
        std::fclose(f);
    }
}

}  // namespace vela::repl

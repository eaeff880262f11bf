// Line editing for the prompt: libedit through its readline interface, with
// history kept in a file (saved line by line, so a crash loses nothing) and
// completion from complete.cpp. Without a terminal on stdin it reads plain
// lines, as lua.c does, so the prompt can be driven by a pipe.
#pragma once
#include <lua.hpp>

#include <string>

namespace vela::repl {

class LineEditor {
public:
    enum class Status { line, interrupted, eof };

    explicit LineEditor(lua_State* L);
    ~LineEditor();
    LineEditor(const LineEditor&) = delete;
    LineEditor& operator=(const LineEditor&) = delete;

    // Shows prompt and reads one line (without its newline). Ctrl-C at the
    // prompt gives `interrupted` and an empty line; Ctrl-D gives `eof`.
    Status read(const char* prompt, std::string& line);
    // Adds a line to the history, in memory and in the history file.
    void remember(const std::string& line);

    bool interactive() const { return tty_; }

private:
    bool tty_;
    std::string history_path_;
    std::string last_;
};

// ~/.vela_history, or $VELA_HISTORY; "" when neither can be found.
std::string history_file();

}  // namespace vela::repl

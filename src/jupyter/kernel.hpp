// vela as a Jupyter kernel, on xeus (src/jupyter/): the shell's Lua state,
// completer, help and printer behind Jupyter's messages. main.cpp calls in
// here for --kernel and --install-kernel.
#pragma once
#include <lua.hpp>
#include <nlohmann/json.hpp>
#include <string>

namespace vela::jupyter {

// ---- kernel.cpp -----------------------------------------------------------------
// Blocks SIGINT on the calling thread (and so on threads it starts later):
// called first thing in kernel mode, so Jupyter's interrupt reaches the
// thread running Lua only while a cell runs (kernel.cpp explains why).
void block_interrupts();
// Serves the kernel described by the connection file until shutdown, on the
// state L already set up as the shell's. Returns the process exit status.
int run_kernel(lua_State* L, const std::string& connection_file);

// ---- install.cpp ------------------------------------------------------------------
// Writes the kernelspec "vela" (kernel.json naming this binary) into
// Jupyter's data directory: the system one by default (/usr/local/share/jupyter),
// the user's with --user, <prefix>/share/jupyter with --prefix P. args are
// the options after --install-kernel. Returns the process exit status.
int install_kernel(int argc, char** argv);

// ---- cell.cpp: a cell read as the shell reads a command ----------------------------
struct Cell {
    bool print = true;  // false after a trailing ';'
    std::string help;   // the name after '?', passed to help(...)
};
// Compiles a cell and leaves the function (or the error message) on the
// stack: '?name' is help, a trailing ';' prints nothing; the cell as one
// expression first, else the cell with its last statement returned when
// that is an expression (a notebook shows the last line's value), else the
// cell as statements. Returns the load status.
int load_cell(lua_State* L, const std::string& code, const std::string& chunkname, Cell& cell);
// "complete", "incomplete" or "invalid", by the shell's continuation rule.
std::string completeness(lua_State* L, const std::string& code);
// Byte offset of code point `pos` in UTF-8 text, and back (Jupyter counts
// cursor positions in code points).
size_t byte_offset(const std::string& text, int pos);
int code_points(const std::string& text, size_t bytes);

// ---- rich.cpp: values as MIME bundles ----------------------------------------------
// text/plain as the prompt shows the value at idx, plus text/html for a matrix.
nlohmann::json mime_bundle(lua_State* L, int idx);
// The HTML table for a matrix's printed form (the shell's summary: header,
// then rows of cells, with ⋮ and ⋯ where it elides).
std::string matrix_html(const std::string& printed);
// display, vela.display_bundle and vela.progress for the notebook.
void open_rich(lua_State* L);

}  // namespace vela::jupyter

// Text the shell's reporting functions print: display widths of UTF-8,
// aligned tables, byte counts and durations, and the one-line summary a
// printing function returns. Also the monotonic clock the timing tools read.
#pragma once
#include <cstddef>
#include <cstdint>
#include <lua.hpp>
#include <string>
#include <vector>

namespace vela::lua {

// Seconds on a monotonic wall clock.
double now();

// Human-readable byte counts: "24 B", "3.0 KiB", "1.50 GiB".
const char* format_bytes(char* out, size_t size, uint64_t bytes);

// "1.235 ms", "45.60 µs", "2.350 s"; brief: "1.2 ms", "46 µs", "2.35 s" (the
// shell's timing line).
std::string format_seconds(double s, bool brief = false);

// Writes s to stdout and flushes.
void out(const std::string& s);

// luaL_tolstring of the value at idx in protected mode, so a failing
// __tostring cannot leave a report or the shell's printer half done: its
// error shows as "<__tostring failed: ...>".
std::string safe_tostring(lua_State* L, int idx);

// The width printed text must fit: the terminal's columns when stdout is a
// terminal, else $COLUMNS when it is a number, else 80.
size_t screen_width();

// Display width of UTF-8 text (×, µ, … count as one column).
size_t width_of(const std::string& s);

// Cuts text longer than n columns, ending it with "…".
std::string clip(const std::string& s, size_t n);

// Rows as aligned columns, two spaces apart, one line each (ending in a
// newline); the columns flagged in `right` are right-aligned (numbers). Row
// 0 is the header.
std::string table_text(const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right = {});

// The reporting functions (devices, who, mem, time, profile, compare) print
// nothing themselves: they return their data as a table whose printed form
// is the whole report, so the prompt shows it once and a script shows it
// with print(...). Sets that metatable on the table on top of the stack;
// `text` is the report without its last newline.
void set_report(lua_State* L, const std::string& text);

}  // namespace vela::lua

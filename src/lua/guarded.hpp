// guarded(): the single place where C++ exceptions become Lua errors.
// lua_error longjmps (Lua is built as C), skipping every C++ destructor in
// the frames it leaves: so the message is copied into a fixed buffer and the
// exception object is destroyed before the jump, and nothing owning memory
// is alive when it happens.
#pragma once
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <lua.hpp>
#include <new>
#include <utility>

#include "core/error.hpp"

namespace vela::lua {

// Raises msg as a Lua error prefixed with the calling line ("script.lua:12: "),
// as luaL_error does.
[[noreturn]] inline void raise(lua_State* L, const char* msg) {
    luaL_where(L, 1);
    lua_pushstring(L, msg);
    lua_concat(L, 2);
    lua_error(L);
    __builtin_unreachable();
}

namespace detail {
inline void copy_message(char (&out)[1024], const char* a, const char* b = "") {
    size_t n = std::strlen(a), m = std::strlen(b);
    if (n > sizeof out - 1) n = sizeof out - 1;
    if (m > sizeof out - 1 - n) m = sizeof out - 1 - n;
    std::memcpy(out, a, n);
    std::memcpy(out + n, b, m);
    out[n + m] = '\0';
}

// True when msg starts with "word: " (a function's name, as every core message does).
inline bool starts_with_word(const char* msg) {
    const char* colon = std::strstr(msg, ": ");
    if (!colon || colon == msg) return false;
    for (const char* c = msg; c < colon; ++c)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_'))
            return false;
    return true;
}

// A message as the user should read it when they called `fn`: kept when it
// already starts with "fn:"; a leading core name ("cols: …", "copy: …",
// "matrix: …" from an op the binding used) is replaced by fn; anything else
// ("vulkan:0: out of device memory …", "interrupted") gets "fn: " in front.
// keep_word: the leading word is part of the message ("interrupted: dropped
// …"), so fn goes in front of it instead of replacing it.
inline void name_message(char (&msg)[1024], const char* fn, bool keep_word = false) {
    size_t n = std::strlen(fn);
    if (std::strncmp(msg, fn, n) == 0 && msg[n] == ':') return;
    const char* rest = !keep_word && starts_with_word(msg) ? std::strstr(msg, ": ") + 2 : msg;
    // "fn: rest", cut to the buffer (copied, not formatted: GCC's
    // -Wformat-truncation flags "%s: %s" into 1024 bytes where this is inlined)
    char out[1024];
    size_t a = std::min(n, sizeof out - 1), b = std::min<size_t>(2, sizeof out - 1 - a);
    size_t c = std::min(std::strlen(rest), sizeof out - 1 - a - b);
    std::memcpy(out, fn, a);
    std::memcpy(out + a, ": ", b);
    std::memcpy(out + a + b, rest, c);
    out[a + b + c] = '\0';
    std::memcpy(msg, out, sizeof out);
}
}  // namespace detail

// fn: the function the user called ("zeros", "m:columns", "-m"), named in
// every message (see detail::name_message); nullptr keeps the core's words.
template <class F>
auto guarded(lua_State* L, const char* fn, F&& f) -> decltype(f()) {
    char msg[1024];
    bool interrupted = false;
    try {
        return f();
    } catch (const vela::Interrupted& e) {
        interrupted = true;
        // The wait took the Ctrl-C: the shell's pending "interrupted!" hook
        // would replace this message (which may say what was dropped).
        lua_sethook(L, nullptr, 0, 0);
        detail::copy_message(msg, e.what());
    } catch (const vela::DeviceMismatch& e) {
        // The core names the devices; how to move a matrix is Lua's to say.
        char hint[160];
        std::snprintf(hint, sizeof hint, " (move one with :to(\"%s\") or :to(\"%s\"))", e.second.c_str(), e.first.c_str());
        detail::copy_message(msg, e.what(), hint);
    } catch (const vela::Error& e) {
        detail::copy_message(msg, e.what());
    } catch (const std::bad_alloc&) {
        detail::copy_message(msg, "out of host memory");
    } catch (const std::exception& e) {
        detail::copy_message(msg, "internal error: ", e.what());
    }
    if (fn) {
        detail::name_message(msg, fn, interrupted);
    } else {
        // No name given: a message that does not start with a function's name
        // ("vulkan:0: out of device memory …" from an allocation inside a
        // kernel) gets the name the user called, as Lua knows it.
        lua_Debug ar;
        if (!detail::starts_with_word(msg) && lua_getstack(L, 0, &ar) && lua_getinfo(L, "n", &ar) && ar.name)
            detail::name_message(msg, ar.name);
    }
    raise(L, msg);
}

template <class F>
auto guarded(lua_State* L, F&& f) -> decltype(f()) {
    return guarded(L, static_cast<const char*>(nullptr), std::forward<F>(f));
}

}  // namespace vela::lua

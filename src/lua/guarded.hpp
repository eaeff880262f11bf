// guarded(): the single place where C++ exceptions become Lua errors.
// lua_error longjmps (Lua is built as C), skipping every C++ destructor in
// the frames it leaves: so the message is copied into a fixed buffer and the
// exception object is destroyed before the jump, and nothing owning memory
// is alive when it happens.
#pragma once
#include <cstdio>
#include <cstring>
#include <lua.hpp>
#include <new>

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
}  // namespace detail

template <class F>
auto guarded(lua_State* L, F&& f) -> decltype(f()) {
    char msg[1024];
    try {
        return f();
    } catch (const vela::Interrupted& e) {
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
    raise(L, msg);
}

}  // namespace vela::lua

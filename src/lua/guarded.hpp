// guarded(): the single place where C++ exceptions become Lua errors.
// The exception object is destroyed before lua_error longjmps, so no C++
// destructor is skipped.
#pragma once
#include <lua.hpp>

#include <new>
#include <string>

#include "core/error.hpp"

namespace vela::lua {

[[noreturn]] inline void raise(lua_State* L, const std::string& msg) {
    lua_pushlstring(L, msg.data(), msg.size());
    lua_error(L);
    __builtin_unreachable();
}

template <class F>
auto guarded(lua_State* L, F&& f) -> decltype(f()) {
    std::string msg;
    try {
        return f();
    } catch (const vela::Interrupted&) {
        msg = "interrupted";
    } catch (const vela::Error& e) {
        msg = e.what();
    } catch (const std::bad_alloc&) {
        msg = "out of host memory";
    } catch (const std::exception& e) {
        msg = std::string("internal error: ") + e.what();
    }
    raise(L, msg);
}

}  // namespace vela::lua

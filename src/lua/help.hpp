// The documentation registry behind help(), ?name and the shell's printing
// of documented functions. vela::lua::doc (vela.hpp) fills it; this header is
// what the shell reads back.
#pragma once
#include <lua.hpp>

#include <string>

namespace vela::lua {

// The signature registered for the function at idx ("mm(alpha, a, b, beta, c)"),
// or "" when it has none. Leaves the stack as it was.
std::string signature_of(lua_State* L, int idx);

}  // namespace vela::lua

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

// For values whose metatable is at index mt: pushes the table their methods
// are looked up in and returns true, or pushes nothing and returns false.
// That is the __index table, or, when __index is a C closure (fields
// computed in C, then the methods), its first upvalue when that is a table.
bool push_methods(lua_State* L, int mt);

}  // namespace vela::lua

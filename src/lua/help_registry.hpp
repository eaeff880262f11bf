// The registry of documentation entries behind help(), ?name, vela.doc and
// signature_of, and the lookup of the name a value is documented under; shared
// by help_registry.cpp (the registry, names, vela.doc) and help.cpp (help()
// and its printing).
#pragma once
#include <lua.hpp>

#include <map>
#include <string>

namespace vela::lua::help {

struct Entry {
    std::string signature, text;
};

// Every entry, by the name the user types ("mm", "Matrix:view", "nn.linear").
std::map<std::string, Entry>& registry();

// Splits "nn.linear" / "Matrix:view" into the owner part and the last name.
bool split_name(const std::string& name, std::string& owner, std::string& field, char& sep);

// The documented name of the value at idx, or "".
std::string name_of(lua_State* L, int idx);

// Pushes the function or value a name refers to now ("nn.linear",
// "net:forward", "myfn"), or nil: the globals and modules, then the functions
// vela.doc tied to a name.
void push_named(lua_State* L, const std::string& name);

// vela.doc(name, signature, text [, fn]), vela.doc(fn), vela.doc(name) (help_registry.cpp).
int l_doc(lua_State* L);

}  // namespace vela::lua::help

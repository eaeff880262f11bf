// vela.activations and vela.ops: the elementwise op tables (core/ops.def and
// core/binary.def) seen from Lua, each op with its float64 reference
// (core/opref.hpp: the table's VELA_REF rows, double math sharing no code with
// the kernels), which nn.gradcheck and the Lua tests read instead of formulas
// of their own.
#include <string>

#include "core/opref.hpp"
#include "lua/vela.hpp"

namespace vela::lua {

namespace {

// Exactly `n` arguments, each a number: an error names the function, the argument, expected and got.
void check_args(lua_State* L, const char* fn, int n, const char* const* names) {
    const int top = lua_gettop(L);
    if (top != n) luaL_error(L, "%s: expected %d argument%s, got %d", fn, n, n == 1 ? "" : "s", top);
    for (int i = 1; i <= n; i++)
        if (lua_type(L, i) != LUA_TNUMBER)
            luaL_error(L, "%s: %s (argument %d) must be a number, got %s", fn, names[i - 1], i, luaL_typename(L, i));
}

const char* const kUnaryArgs[] = {"x", "a", "b", "c", "d"};
const char* const kBinaryArgs[] = {"x", "y"};

// vela.ops[name].ref(x [, a, b, c, d]): upvalues op code, "vela.ops.name.ref".
int unary_ref_l(lua_State* L) {
    const Unary op = Unary(lua_tointeger(L, lua_upvalueindex(1)));
    const int np = unary_params(op);
    check_args(L, lua_tostring(L, lua_upvalueindex(2)), 1 + np, kUnaryArgs);
    double p[4] = {0, 0, 0, 0};
    for (int k = 0; k < np; k++) p[k] = lua_tonumber(L, 2 + k);
    lua_pushnumber(L, unary_ref(op, lua_tonumber(L, 1), p));
    return 1;
}

// vela.ops[name].dref(z): an activation's derivative at the pre-activation z.
int act_dref_l(lua_State* L) {
    check_args(L, lua_tostring(L, lua_upvalueindex(2)), 1, kUnaryArgs);
    lua_pushnumber(L, act_dref(Act(lua_tointeger(L, lua_upvalueindex(1))), lua_tonumber(L, 1)));
    return 1;
}

// vela.ops[name].ref(x, y) of a binary op.
int binary_ref_l(lua_State* L) {
    check_args(L, lua_tostring(L, lua_upvalueindex(2)), 2, kBinaryArgs);
    lua_pushnumber(L, binary_ref(Binary(lua_tointeger(L, lua_upvalueindex(1))), lua_tonumber(L, 1), lua_tonumber(L, 2)));
    return 1;
}

// Sets field `key` of the table on top to a closure over (code, "vela.ops.name.key").
void set_closure(lua_State* L, lua_CFunction f, int code, const std::string& name, const char* key) {
    lua_pushinteger(L, code);
    lua_pushstring(L, ("vela.ops." + name + "." + key).c_str());
    lua_pushcclosure(L, f, 2);
    lua_setfield(L, -2, key);
}

// Pushes a new vela.ops entry with its table facts.
void new_entry(lua_State* L, int params, int operands, bool activation) {
    lua_createtable(L, 0, 6);
    lua_pushinteger(L, params);
    lua_setfield(L, -2, "params");
    lua_pushinteger(L, operands);
    lua_setfield(L, -2, "operands");
    lua_pushboolean(L, activation);
    lua_setfield(L, -2, "activation");
}

}  // namespace

// Into the table on top: activations (names in code order, 0 = identity: nn.linear's
// list and nn.save's codes) and ops (per op of both tables).
void export_ops(lua_State* L) {
    lua_createtable(L, int(Act::count_), 0);
    for (uint8_t i = 0; i < uint8_t(Act::count_); i++) {
        lua_pushstring(L, act_name(Act(i)));
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "activations");
    lua_newtable(L);
    for (uint8_t i = 0; i < uint8_t(Unary::count_); i++) {
        const Unary op = Unary(i);
        const std::string name = unary_name(op);
        Act act;
        const bool is_act = parse_act(name, act);
        new_entry(L, unary_params(op), 1, is_act);
        set_closure(L, unary_ref_l, i, name, "ref");
        if (is_act) {
            lua_pushstring(L, act_prime_from_z(act) ? "z" : "a");
            lua_setfield(L, -2, "from");
            set_closure(L, act_dref_l, int(act), name, "dref");
        }
        lua_setfield(L, -2, name.c_str());
    }
    for (uint8_t i = 0; i < uint8_t(Binary::count_); i++) {
        const std::string name = binary_name(Binary(i));
        new_entry(L, 0, 2, false);
        set_closure(L, binary_ref_l, i, name, "ref");
        lua_setfield(L, -2, name.c_str());
    }
    lua_setfield(L, -2, "ops");

    doc("vela.ops", "vela.ops[name] -> {params =, operands =, activation =, from =, ref =, dref =}",
        "The elementwise op tables (src/core/ops.def, src/core/binary.def), one entry per op: every function, "
        "activation and derivative (name_prime) and every binary op (mul, gt, pow, ...). params: the scalar "
        "parameters it takes (linear_frac 4); operands: 1 or 2; activation: true for the activations (vela.activations "
        "lists them in code order, identity first); from: \"a\" or \"z\", what name_prime takes (the activation or "
        "the pre-activation). ref(x [, a, b, c, d]) (a binary op: ref(x, y)) is the op's float64 reference, double "
        "math written beside its row and sharing no code with the kernels; an activation's dref(z) is its "
        "derivative at the pre-activation z (name_prime's reference at name(z) or at z, as from says). nn.gradcheck "
        "differentiates the refs. Example: vela.ops.tanh.ref(0.5)  -- 0.46211715726000974; "
        "vela.ops.tanh.dref(0.5); vela.ops.linear_frac.ref(1, 2, 1, 0, 1)  -- 3");
}

}  // namespace vela::lua

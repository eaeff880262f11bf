// The comparisons gt, lt, ge, le, eq, ne (0/1 float matrices) and pow, as
// functions, methods and the operator ^: the binary kernels of
// src/core/binary.def, on every device. A number as the second operand is a
// 1×1 matrix on the first one's device, broadcast by the kernel (no matrix of
// copies); a row or column vector broadcasts the same way (NumPy's rule in 2-D).
//   gt(a, b [, c]) -> c | a new matrix     (torch.gt; c given: written into c)
//   a:gt(b [, c]) -> the same as a method    (torch x:gt(y))
//   pow(x, p [, y]) -> y | x                (a kernel: into y, or x itself when y is absent)
//   x:pow(p) -> x (in place, Torch7), x ^ p and p ^ x -> a new matrix
// `==` on two matrices stays Lua's identity test (the same userdata), as ?eq says.
#include <string>

#include "core/ops.hpp"
#include "lua/check.hpp"
#include "lua/vela.hpp"

namespace vela::lua {

namespace {

// An operand as given: a matrix, or a number (made a 1×1 matrix inside guarded,
// so that no owning C++ object is alive when a Lua error unwinds).
struct Operand {
    Matrix* m = nullptr;
    float v = 0;
};

Operand operand(lua_State* L, int arg, const char* fn) {
    if (Matrix* m = test_matrix(L, arg)) return {m, 0};
    if (lua_type(L, arg) != LUA_TNUMBER)
        luaL_error(L, "%s: argument #%d must be a matrix or a number, got %s", fn, arg, luaL_typename(L, arg));
    return {nullptr, float(lua_tonumber(L, arg))};
}

// The operand as a matrix on `like`'s device (call inside guarded).
Matrix as_matrix(const Operand& o, const char* fn, const Matrix& like) {
    if (o.m) return *o.m;
    check_live(fn, "a", like);
    return from_host(like.device(), 1, 1, &o.v);
}

// a ∘ b into a new matrix of the broadcast shape.
Matrix apply_new(Binary op, const char* fn, const Matrix& a, const Matrix& b) {
    check_live(fn, "a", a), check_live(fn, "b", b);
    int64_t rows, cols;
    broadcast_shape(fn, a, b, rows, cols);
    Matrix c = empty(a.device(), rows, cols);
    binary(op, a, b, c);
    return c;
}

// gt(a, b [, c]) and the others, also as methods a:gt(b [, c]): into c when given, else a new matrix.
template <Binary op>
int l_compare(lua_State* L) {
    const char* fn = binary_name(op);
    check_nargs(L, 3);
    Matrix& a = check_matrix(L, 1);
    Operand b = operand(L, 2, fn);
    if (!lua_isnoneornil(L, 3)) {
        Matrix& c = check_matrix(L, 3);
        guarded(L, fn, [&] { binary(op, a, as_matrix(b, fn, a), c); });
        lua_settop(L, 3);
        return 1;
    }
    push_matrix(L, guarded(L, fn, [&] { return apply_new(op, fn, a, as_matrix(b, fn, a)); }));
    return 1;
}

// pow(x, p [, y]): y ← x^p, or x ← x^p without y (as the unary kernels exp(x [, y])).
int l_pow(lua_State* L) {
    check_nargs(L, 3);
    Matrix& x = check_matrix(L, 1);
    if (lua_isnoneornil(L, 2)) luaL_error(L, "pow: argument #2 (the exponent p) is missing: pow(x, p [, y])");
    Operand p = operand(L, 2, "pow");
    int out = lua_isnoneornil(L, 3) ? 1 : 3;
    Matrix& y = check_matrix(L, out);
    guarded(L, "pow", [&] { binary(Binary::pow, x, as_matrix(p, "pow", x), y); });
    lua_pushvalue(L, out);
    return 1;
}

// x:pow(p): in place, as Torch7.
int m_pow(lua_State* L) {
    check_method_nargs(L, 1);
    Matrix& x = check_matrix(L, 1);
    Operand p = operand(L, 2, "pow");
    guarded(L, "pow", [&] { binary(Binary::pow, x, as_matrix(p, "pow", x), x); });
    lua_settop(L, 1);
    return 1;
}

// x ^ p, p ^ x, x ^ y: a new matrix.
int m_pow_operator(lua_State* L) {
    Matrix* a = test_matrix(L, 1);
    Matrix* b = test_matrix(L, 2);
    const Matrix& m = a ? *a : *b;
    Operand x = operand(L, 1, "matrix ^"), p = operand(L, 2, "matrix ^");
    push_matrix(L, guarded(L, "matrix ^", [&] {
                    return apply_new(Binary::pow, "pow", as_matrix(x, "pow", m), as_matrix(p, "pow", m));
                }));
    return 1;
}

void document() {
    static const char* const examples[] = {"gt(from{1, 5, 3}, 2)  -- 3×1: 0, 1, 1",
                                           "lt(from{1, 5, 3}, from{2, 2, 2})  -- 3×1: 1, 0, 0",
                                           "ge(from{{1, 2}, {3, 4}}, from{{2, 2}})  -- row broadcast: {{0, 1}, {1, 1}}",
                                           "le(from{1, 5}, 1)  -- 2×1: 1, 0",
                                           "sum(eq(from{1, 2, 3}, from{1, 0, 3}))  -- 2: the number of matches",
                                           "ne(from{1, 0/0}, 1)  -- 2×1: 0, 1 (NaN differs from everything)"};
    const Binary ops[] = {Binary::gt, Binary::lt, Binary::ge, Binary::le, Binary::eq, Binary::ne};
    static std::string sig[6], text[6], msig[6], mtext[6];
    for (int k = 0; k < 6; k++) {
        const std::string n = binary_name(ops[k]);
        sig[k] = n + "(a, b [, c]) -> matrix of 0/1";
        text[k] = std::string(binary_formula(ops[k])) +
                  ", elementwise, as a float matrix, computed on the device. b: a matrix of a's shape, a row or "
                  "column vector or a 1×1 that broadcasts (NumPy's rule in 2-D), or a number. Into c when given, "
                  "else a new matrix. Also a:" +
                  n + "(b). torch." + n + ". Example: " + examples[k];
        if (ops[k] == Binary::eq)
            text[k] +=
                ". `a == b` is not eq: on two matrices it is Lua's identity test (the same matrix object), "
                "true or false; eq compares values";
        msig[k] = "a:" + n + "(b [, c]) -> matrix of 0/1";
        mtext[k] = n + "(a, b [, c]) as a method: a new matrix, or c (a is not changed).";
        doc(binary_name(ops[k]), sig[k].c_str(), text[k].c_str());
        doc(("Matrix:" + n).c_str(), msig[k].c_str(), mtext[k].c_str());
    }
    doc("pow", "pow(x, p [, y]) -> y | x",
        "xᵖ elementwise on the device, p a number or a matrix (broadcast as in add). As the unary kernels: into "
        "y, or into x itself when y is absent. An integer p below 64 is exact repeated products (x², x³ as by "
        "hand); otherwise e^(p·ln|x|) (relative error about |p·ln x|·2⁻²⁴); x < 0 with a fractional p gives NaN. "
        "For a new matrix: x ^ p. torch.pow. Example: pow(from{1, 2, 3}, 2)  -- 1, 4, 9, written into the matrix");
    doc("Matrix:pow", "x:pow(p) -> x", "In place, as Torch7: x ← xᵖ (pow(x, p)). For a new matrix: x ^ p.");
}

}  // namespace

void open_relations(lua_State* L) {
    static const luaL_Reg functions[] = {{"gt", l_compare<Binary::gt>},
                                         {"lt", l_compare<Binary::lt>},
                                         {"ge", l_compare<Binary::ge>},
                                         {"le", l_compare<Binary::le>},
                                         {"eq", l_compare<Binary::eq>},
                                         {"ne", l_compare<Binary::ne>},
                                         {"pow", l_pow},
                                         {nullptr, nullptr}};
    luaL_setfuncs(L, functions, 0);
    static const luaL_Reg methods[] = {{"gt", l_compare<Binary::gt>},
                                       {"lt", l_compare<Binary::lt>},
                                       {"ge", l_compare<Binary::ge>},
                                       {"le", l_compare<Binary::le>},
                                       {"eq", l_compare<Binary::eq>},
                                       {"ne", l_compare<Binary::ne>},
                                       {"pow", m_pow},
                                       {"__pow", m_pow_operator},
                                       {nullptr, nullptr}};
    luaL_getmetatable(L, kMatrixType);
    luaL_setfuncs(L, methods, 0);
    lua_pop(L, 1);
    document();
}

}  // namespace vela::lua

// The operators of the "vela.Matrix" userdata: a + b, a - b, -a, s * a,
// a * s and a * b (the matrix product). Unlike the kernels they allocate their
// result. Set into the metatable by open_matrix (matrix.cpp).
#include "core/ops.hpp"
#include "lua/check.hpp"
#include "lua/vela.hpp"

namespace vela::lua {

static const char* kind(lua_State* L, int arg) {
    return test_matrix(L, arg) ? "matrix" : luaL_typename(L, arg);
}

static Matrix& operand(lua_State* L, int arg, const char* op) {
    Matrix* m = test_matrix(L, arg);
    if (!m) luaL_error(L, "matrix %s: both operands must be matrices, got %s and %s", op, kind(L, 1), kind(L, 2));
    return *m;
}

// a + b and a − b: the kernel `name` into a new matrix of the broadcast shape.
static int elementwise(lua_State* L, Binary op, const char* symbol, const char* name) {
    Matrix& a = operand(L, 1, symbol);
    Matrix& b = operand(L, 2, symbol);
    push_matrix(L, guarded(L, name, [&] {
                    check_live(name, "a", a);
                    check_live(name, "b", b);
                    int64_t rows, cols;  // a's shape, or the broadcast one (a row or column vector, a 1×1)
                    broadcast_shape(name, a, b, rows, cols);
                    Matrix c = empty(a.device(), rows, cols);
                    binary(op, a, b, c);
                    return c;
                }));
    return 1;
}

static int m_add(lua_State* L) {
    return elementwise(L, Binary::add, "+", "matrix +");
}

static int m_sub(lua_State* L) {
    return elementwise(L, Binary::sub, "-", "matrix -");
}

static Matrix scaled(const char* fn, const Matrix& a, float s) {
    check_live(fn, "the matrix", a);
    if (a.dtype() != DType::f32) fail("%s: the matrix is %s but must be float32", fn, dtype_name(a.dtype()));
    Matrix c = clone(a);
    scal(s, c);
    return c;
}

static int m_unm(lua_State* L) {
    Matrix& a = check_matrix(L, 1);
    push_matrix(L, guarded(L, "matrix unary -", [&] { return scaled("matrix unary -", a, -1.0f); }));
    return 1;
}

// s * a, a * s, a * b (the matrix product).
static int m_mul(lua_State* L) {
    Matrix* a = test_matrix(L, 1);
    Matrix* b = test_matrix(L, 2);
    if (a && b) {
        push_matrix(L, guarded(L, "matrix *", [&] {
                        check_live("matrix *", "a", *a);
                        check_live("matrix *", "b", *b);
                        if (a->cols != b->rows)
                            fail("matrix *: a is %s but b is %s (a's columns must equal b's rows)",
                                 a->shape_str().c_str(), b->shape_str().c_str());
                        Matrix c = empty(a->device(), a->rows, b->cols);
                        mm(1.0f, *a, *b, 0.0f, c);
                        return c;
                    }));
        return 1;
    }
    int num = a ? 2 : 1;
    if (!(a || b) || lua_type(L, num) != LUA_TNUMBER)
        luaL_error(L, "matrix *: operands must be two matrices or a number and a matrix, got %s and %s", kind(L, 1),
                   kind(L, 2));
    float s = float(lua_tonumber(L, num));
    Matrix& m = a ? *a : *b;
    push_matrix(L, guarded(L, "matrix *", [&] { return scaled("matrix *", m, s); }));
    return 1;
}

// clang-format off
static const luaL_Reg operators[] = {
    {"__add", m_add},
    {"__sub", m_sub},
    {"__mul", m_mul},
    {"__unm", m_unm},
    {nullptr, nullptr}};
// clang-format on

void set_matrix_operators(lua_State* L) { luaL_setfuncs(L, operators, 0); }

}  // namespace vela::lua

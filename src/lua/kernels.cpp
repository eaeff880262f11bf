// Every kernel of the kernel table as a Lua function. Each writes into its
// last matrix argument and returns that same userdata (lua_pushvalue, never
// a new one). The success path allocates nothing: argument checks, one call
// into the checked core (core/ops.hpp), one push. A 1-element axpy is a
// fraction of a microsecond, so Lua loops over small kernels stay cheap.
#include <array>
#include <string>

#include "core/ops.hpp"
#include "lua/check.hpp"
#include "lua/observe.hpp"
#include "lua/vela.hpp"

namespace vela::lua {

void document_kernels();  // kernels_doc.cpp: their ?name help

/* ---------------------------------------------------------------------- */
/* level 3 and 2                                                          */
/* ---------------------------------------------------------------------- */

// mm(alpha, a, b, beta, c) or mm(a, b, c): c ← α·a·b + β·c; and mv, the same
// shape of call: y ← α·a·x + β·y.
template <void (*f)(float, const Matrix&, const Matrix&, float, const Matrix&)>
static int k_gemm(lua_State* L) {
    if (lua_type(L, 1) == LUA_TNUMBER) {
        check_nargs(L, 5);
        float alpha = check_float(L, 1);
        Matrix& a = check_matrix(L, 2);
        Matrix& b = check_matrix(L, 3);
        float beta = check_float(L, 4);
        Matrix& c = check_matrix(L, 5);
        guarded(L, [&] { f(alpha, a, b, beta, c); });
        lua_pushvalue(L, 5);
        return 1;
    }
    if (!test_matrix(L, 1)) luaL_typeerror(L, 1, "number (alpha) or matrix");
    check_nargs(L, 3);
    Matrix& a = check_matrix(L, 1);
    Matrix& b = check_matrix(L, 2);
    Matrix& c = check_matrix(L, 3);
    guarded(L, [&] { f(1.0f, a, b, 0.0f, c); });
    lua_pushvalue(L, 3);
    return 1;
}

// rk(alpha, x, y, a) or rk(x, y, a): a ← α·x·yᵀ + a.
static int k_rk(lua_State* L) {
    int base = lua_type(L, 1) == LUA_TNUMBER ? 1 : 0;
    if (!base && !test_matrix(L, 1)) luaL_typeerror(L, 1, "number (alpha) or matrix");
    check_nargs(L, 3 + base);
    float alpha = base ? check_float(L, 1) : 1.0f;
    Matrix& x = check_matrix(L, base + 1);
    Matrix& y = check_matrix(L, base + 2);
    Matrix& a = check_matrix(L, base + 3);
    guarded(L, [&] { rk(alpha, x, y, a); });
    lua_pushvalue(L, base + 3);
    return 1;
}

/* ---------------------------------------------------------------------- */
/* level 1                                                                */
/* ---------------------------------------------------------------------- */

static int k_axpy(lua_State* L) {
    check_nargs(L, 3);
    float alpha = check_float(L, 1);
    Matrix& x = check_matrix(L, 2);
    Matrix& y = check_matrix(L, 3);
    guarded(L, [&] { axpy(alpha, x, y); });
    lua_pushvalue(L, 3);
    return 1;
}

static int k_axpby(lua_State* L) {
    check_nargs(L, 4);
    float alpha = check_float(L, 1);
    Matrix& x = check_matrix(L, 2);
    float beta = check_float(L, 3);
    Matrix& y = check_matrix(L, 4);
    guarded(L, [&] { axpby(alpha, x, beta, y); });
    lua_pushvalue(L, 4);
    return 1;
}

static int k_scal(lua_State* L) {
    check_nargs(L, 2);
    float alpha = check_float(L, 1);
    Matrix& x = check_matrix(L, 2);
    guarded(L, [&] { scal(alpha, x); });
    lua_pushvalue(L, 2);
    return 1;
}

static int k_copy(lua_State* L) {
    check_nargs(L, 2);
    Matrix& x = check_matrix(L, 1);
    Matrix& y = check_matrix(L, 2);
    guarded(L, [&] { copy(x, y); });
    lua_pushvalue(L, 2);
    return 1;
}

// swap(x, y) returns y, the last matrix argument, like every kernel.
static int k_swap(lua_State* L) {
    check_nargs(L, 2);
    Matrix& x = check_matrix(L, 1);
    Matrix& y = check_matrix(L, 2);
    guarded(L, [&] { swap(x, y); });
    lua_pushvalue(L, 2);
    return 1;
}

static int k_fill(lua_State* L) {
    check_nargs(L, 2);
    Matrix& x = check_matrix(L, 1);
    float v = check_float(L, 2);
    guarded(L, [&] { fill(x, v); });
    lua_pushvalue(L, 1);
    return 1;
}

static int k_dot(lua_State* L) {
    check_nargs(L, 2);
    Matrix& x = check_matrix(L, 1);
    Matrix& y = check_matrix(L, 2);
    lua_pushnumber(L, guarded(L, [&] { return dot(x, y); }));
    return 1;
}

// nrm2, asum, sum: one matrix in, a number out (the host waits).
template <double (*f)(const Matrix&)>
static int k_reduce(lua_State* L) {
    check_nargs(L, 1);
    Matrix& x = check_matrix(L, 1);
    lua_pushnumber(L, guarded(L, [&] { return f(x); }));
    return 1;
}

static int k_imax(lua_State* L) {
    check_nargs(L, 1);
    Matrix& x = check_matrix(L, 1);
    lua_pushinteger(L, guarded(L, [&] { return imax(x); }) + 1);
    return 1;
}

/* ---------------------------------------------------------------------- */
/* elementwise                                                            */
/* ---------------------------------------------------------------------- */

// f(x [, y]): y ← f(x), or x ← f(x) when y is absent. With parameters
// (linear_frac): f(x, [y,] p0, ..., p(n-1)).
template <Unary op>
static int k_unary(lua_State* L) {
    Matrix& x = check_matrix(L, 1);
    const int nparams = unary_params(op);
    if (nparams == 0) {
        check_nargs(L, 2);
        int out = lua_isnoneornil(L, 2) ? 1 : 2;
        Matrix& y = check_matrix(L, out);
        guarded(L, [&] { unary(op, x, y); });
        lua_pushvalue(L, out);
        return 1;
    }
    int out = test_matrix(L, 2) ? 2 : 1;
    int p = out + 1;
    check_nargs(L, p + nparams - 1);
    Matrix& y = check_matrix(L, out);
    float params[4] = {0, 0, 0, 0};
    for (int i = 0; i < nparams; i++) params[i] = check_float(L, p + i);
    guarded(L, [&] { unary(op, x, y, params); });
    lua_pushvalue(L, out);
    return 1;
}

// name_backward(da, x [, delta]): delta ← da ∘ act′(x), x the activation a or
// the pre-activation z as the table says; into da when delta is absent.
template <Act act>
static int k_backward(lua_State* L) {
    check_nargs(L, 3);
    Matrix& da = check_matrix(L, 1);
    Matrix& x = check_matrix(L, 2);
    int out = lua_isnoneornil(L, 3) ? 1 : 3;
    Matrix& delta = check_matrix(L, out);
    guarded(L, [&] { act_backward(act, da, x, delta); });
    lua_pushvalue(L, out);
    return 1;
}

// f(a, b [, c]): c ← a ∘ b, or b ← a ∘ b when c is absent.
template <Binary op>
static int k_binary(lua_State* L) {
    check_nargs(L, 3);
    Matrix& a = check_matrix(L, 1);
    Matrix& b = check_matrix(L, 2);
    int out = lua_isnoneornil(L, 3) ? 2 : 3;
    Matrix& c = check_matrix(L, out);
    guarded(L, [&] { binary(op, a, b, c); });
    lua_pushvalue(L, out);
    return 1;
}

/* ---------------------------------------------------------------------- */
/* fused                                                                  */
/* ---------------------------------------------------------------------- */

static int k_softmax(lua_State* L) {
    check_nargs(L, 2);
    Matrix& x = check_matrix(L, 1);
    int out = lua_isnoneornil(L, 2) ? 1 : 2;
    Matrix& y = check_matrix(L, out);
    guarded(L, [&] { softmax(x, y); });
    lua_pushvalue(L, out);
    return 1;
}

// softmax_xent(z, labels, dz [, loss [, scale]]) -> dz
static int k_softmax_xent(lua_State* L) {
    check_nargs(L, 5);
    Matrix& z = check_matrix(L, 1);
    Matrix& labels = check_matrix(L, 2);
    Matrix& dz = check_matrix(L, 3);
    Matrix* loss = lua_isnoneornil(L, 4) ? nullptr : &check_matrix(L, 4);
    float scale = lua_isnoneornil(L, 5) ? (z.cols > 0 ? 1.0f / float(z.cols) : 1.0f) : check_float(L, 5);
    guarded(L, [&] { softmax_xent(z, labels, loss ? *loss : Matrix{}, scale, dz); });
    lua_pushvalue(L, 3);
    return 1;
}

// argmax(x, idx) and argmin(x, idx): idx returned.
template <void (*F)(const Matrix&, const Matrix&)>
static int k_arg(lua_State* L) {
    check_nargs(L, 2);
    Matrix& x = check_matrix(L, 1);
    Matrix& idx = check_matrix(L, 2);
    guarded(L, [&] { F(x, idx); });
    lua_pushvalue(L, 2);
    return 1;
}

static int k_gather_cols(lua_State* L) {
    check_nargs(L, 4);
    Matrix& src = check_matrix(L, 1);
    Matrix& idx = check_matrix(L, 2);
    Matrix& dst = check_matrix(L, 3);
    float scale = lua_isnoneornil(L, 4) ? 1.0f : check_float(L, 4);
    guarded(L, [&] { gather_cols(src, idx, dst, scale); });
    lua_pushvalue(L, 3);
    return 1;
}

static int k_add_bias(lua_State* L) {
    check_nargs(L, 2);
    Matrix& b = check_matrix(L, 1);
    Matrix& y = check_matrix(L, 2);
    guarded(L, [&] { add_bias(b, y); });
    lua_pushvalue(L, 2);
    return 1;
}

// The activation name at arg (identity when absent): dense's and conv's.
Act check_act(lua_State* L, int arg) {
    if (lua_isnoneornil(L, arg)) return Act::identity;
    static const auto names = [] {
        std::array<const char*, size_t(Act::count_) + 1> n{};
        for (size_t i = 0; i < size_t(Act::count_); i++) n[i] = act_name(Act(i));
        return n;
    }();
    return Act(luaL_checkoption(L, arg, nullptr, names.data()));
}

// dense(w, x, b, y [, act]): y ← act(w·x + b·1ᵀ).
static int k_dense(lua_State* L) {
    check_nargs(L, 5);
    Matrix& w = check_matrix(L, 1);
    Matrix& x = check_matrix(L, 2);
    Matrix& b = check_matrix(L, 3);
    Matrix& y = check_matrix(L, 4);
    Act act = check_act(L, 5);
    guarded(L, [&] { dense(w, x, b, act, y); });
    lua_pushvalue(L, 4);
    return 1;
}

/* ---------------------------------------------------------------------- */
/* registration                                                           */
/* ---------------------------------------------------------------------- */

// clang-format off
static const luaL_Reg kernels[] = {
    {"mm", k_gemm<mm>},
    {"mv", k_gemm<mv>},
    {"rk", k_rk},
    {"axpy", k_axpy},
    {"axpby", k_axpby},
    {"scal", k_scal},
    {"copy", k_copy},
    {"swap", k_swap},
    {"fill", k_fill},
    {"dot", k_dot},
    {"nrm2", k_reduce<nrm2>},
    {"asum", k_reduce<asum>},
    {"sum", k_reduce<sum>},
    {"imax", k_imax},
#define VELA_ACT(name, f, d, from, what) \
    {#name, k_unary<Unary::name>}, {#name "_prime", k_unary<Unary::name##_prime>}, {#name "_backward", k_backward<Act::name>},
#define VELA_FN(name, params, f, what) {#name, k_unary<Unary::name>},
#include "core/ops.def"
#undef VELA_ACT
#undef VELA_FN
    {"mul", k_binary<Binary::mul>},
    {"div", k_binary<Binary::div>},
    {"add", k_binary<Binary::add>},
    {"sub", k_binary<Binary::sub>},
    {"softmax", k_softmax},
    {"softmax_xent", k_softmax_xent},
    {"argmax", k_arg<argmax>},
    {"argmin", k_arg<argmin>},
    {"gather_cols", k_gather_cols},
    {"add_bias", k_add_bias},
    {"dense", k_dense},
    {nullptr, nullptr}};
// clang-format on

void export_ops(lua_State* L);  // ops_export.cpp: vela.activations, vela.ops

void open_kernels(lua_State* L) {
    luaL_setfuncs(L, kernels, 0);
    export_ops(L);
    note_kernels(L, kernels);  // profile, trace and diverge tell kernels from other calls
    document_kernels();
}

}  // namespace vela::lua

// Every kernel of the kernel table as a Lua function. Each writes into its
// last matrix argument and returns that same userdata (lua_pushvalue, never
// a new one). The success path allocates nothing: argument checks, one call
// into the checked core (core/ops.hpp), one push. A 1-element axpy is a
// fraction of a microsecond, so Lua loops over small kernels stay cheap.
#include "core/ops.hpp"
#include "lua/check.hpp"
#include "lua/vela.hpp"

namespace vela::lua {

/* ---------------------------------------------------------------------- */
/* level 3 and 2                                                          */
/* ---------------------------------------------------------------------- */

// mm(alpha, a, b, beta, c) or mm(a, b, c): c ← α·a·b + β·c.
static int k_mm(lua_State* L) {
    if (lua_type(L, 1) == LUA_TNUMBER) {
        check_nargs(L, 5);
        float alpha = check_float(L, 1);
        Matrix& a = check_matrix(L, 2);
        Matrix& b = check_matrix(L, 3);
        float beta = check_float(L, 4);
        Matrix& c = check_matrix(L, 5);
        guarded(L, [&] { mm(alpha, a, b, beta, c); });
        lua_pushvalue(L, 5);
        return 1;
    }
    if (!test_matrix(L, 1)) luaL_typeerror(L, 1, "number (alpha) or matrix");
    check_nargs(L, 3);
    Matrix& a = check_matrix(L, 1);
    Matrix& b = check_matrix(L, 2);
    Matrix& c = check_matrix(L, 3);
    guarded(L, [&] { mm(1.0f, a, b, 0.0f, c); });
    lua_pushvalue(L, 3);
    return 1;
}

// mv(alpha, a, x, beta, y) or mv(a, x, y): y ← α·a·x + β·y.
static int k_mv(lua_State* L) {
    if (lua_type(L, 1) == LUA_TNUMBER) {
        check_nargs(L, 5);
        float alpha = check_float(L, 1);
        Matrix& a = check_matrix(L, 2);
        Matrix& x = check_matrix(L, 3);
        float beta = check_float(L, 4);
        Matrix& y = check_matrix(L, 5);
        guarded(L, [&] { mv(alpha, a, x, beta, y); });
        lua_pushvalue(L, 5);
        return 1;
    }
    if (!test_matrix(L, 1)) luaL_typeerror(L, 1, "number (alpha) or matrix");
    check_nargs(L, 3);
    Matrix& a = check_matrix(L, 1);
    Matrix& x = check_matrix(L, 2);
    Matrix& y = check_matrix(L, 3);
    guarded(L, [&] { mv(1.0f, a, x, 0.0f, y); });
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

// f(x [, y]): y ← f(x), or x ← f(x) when y is absent.
template <Unary op>
static int k_unary(lua_State* L) {
    check_nargs(L, 2);
    Matrix& x = check_matrix(L, 1);
    int out = lua_isnoneornil(L, 2) ? 1 : 2;
    Matrix& y = check_matrix(L, out);
    guarded(L, [&] { unary(op, x, y); });
    lua_pushvalue(L, out);
    return 1;
}

// linear_frac(x, [y,] a, b, c, d): y ← (a·x + b)/(c·x + d).
static int k_linear_frac(lua_State* L) {
    Matrix& x = check_matrix(L, 1);
    int out = test_matrix(L, 2) ? 2 : 1;
    int p = out + 1;
    check_nargs(L, p + 3);
    Matrix& y = check_matrix(L, out);
    float params[4] = {check_float(L, p), check_float(L, p + 1), check_float(L, p + 2), check_float(L, p + 3)};
    guarded(L, [&] { unary(Unary::linear_frac, x, y, params); });
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

static int k_argmax(lua_State* L) {
    check_nargs(L, 2);
    Matrix& x = check_matrix(L, 1);
    Matrix& idx = check_matrix(L, 2);
    guarded(L, [&] { argmax(x, idx); });
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

// dense(w, x, b, y [, act]): y ← act(w·x + b·1ᵀ).
static int k_dense(lua_State* L) {
    check_nargs(L, 5);
    Matrix& w = check_matrix(L, 1);
    Matrix& x = check_matrix(L, 2);
    Matrix& b = check_matrix(L, 3);
    Matrix& y = check_matrix(L, 4);
    Act act = Act::identity;
    if (!lua_isnoneornil(L, 5)) {
        static const char* const names[] = {"identity", "relu", "sigmoid", "tanh", nullptr};
        static_assert(int(Act::identity) == 0 && int(Act::relu) == 1 && int(Act::sigmoid) == 2 && int(Act::tanh) == 3 &&
                      int(Act::count_) == 4);
        act = Act(luaL_checkoption(L, 5, nullptr, names));
    }
    guarded(L, [&] { dense(w, x, b, act, y); });
    lua_pushvalue(L, 4);
    return 1;
}

/* ---------------------------------------------------------------------- */
/* registration                                                           */
/* ---------------------------------------------------------------------- */

// clang-format off
static const luaL_Reg kernels[] = {
    {"mm", k_mm},
    {"mv", k_mv},
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
    {"tanh", k_unary<Unary::tanh>},
    {"sigmoid", k_unary<Unary::sigmoid>},
    {"relu", k_unary<Unary::relu>},
    {"exp", k_unary<Unary::exp>},
    {"log", k_unary<Unary::log>},
    {"sqrt", k_unary<Unary::sqrt>},
    {"sqr", k_unary<Unary::sqr>},
    {"inv", k_unary<Unary::inv>},
    {"abs", k_unary<Unary::abs>},
    {"linear_frac", k_linear_frac},
    {"tanh_prime", k_unary<Unary::tanh_prime>},
    {"sigmoid_prime", k_unary<Unary::sigmoid_prime>},
    {"relu_prime", k_unary<Unary::relu_prime>},
    {"mul", k_binary<Binary::mul>},
    {"div", k_binary<Binary::div>},
    {"add", k_binary<Binary::add>},
    {"sub", k_binary<Binary::sub>},
    {"softmax", k_softmax},
    {"softmax_xent", k_softmax_xent},
    {"argmax", k_argmax},
    {"gather_cols", k_gather_cols},
    {"add_bias", k_add_bias},
    {"dense", k_dense},
    {nullptr, nullptr}};
// clang-format on

static void document() {
    doc("mm", "mm(alpha, a, b, beta, c) -> c  |  mm(a, b, c)",
        "c ← α·a·b + β·c (GEMM); a m×k, b k×n, c m×n; a and b may be :t() views. The 3-argument form is "
        "α = 1, β = 0. c must not overlap a or b. Torch7/PyTorch: addmm (c:addmm(β, c, α, a, b)); Neanderthal mm!.");
    doc("mv", "mv(alpha, a, x, beta, y) -> y  |  mv(a, x, y)",
        "y ← α·a·x + β·y (GEMV); a m×n (or a :t() view), x an n-vector, y an m-vector; y must not overlap a or x. "
        "Torch7/PyTorch: addmv.");
    doc("rk", "rk(alpha, x, y, a) -> a  |  rk(x, y, a)",
        "a ← α·x·yᵀ + a (rank-1 update, GER); x an m-vector, y an n-vector, a m×n, not overlapping x or y. "
        "Torch7/PyTorch: addr. With y a ones vector it broadcasts a bias over a batch.");
    doc("axpy", "axpy(alpha, x, y) -> y",
        "y ← α·x + y; x and y vectors or whole matrices of one shape. "
        "Torch7/PyTorch: y:add(α, x) / y.add_(x, alpha=α).");
    doc("axpby", "axpby(alpha, x, beta, y) -> y",
        "y ← α·x + β·y; vectors or matrices of one shape. "
        "PyTorch: y.mul_(β).add_(x, alpha=α).");
    doc("scal", "scal(alpha, x) -> x", "x ← α·x, on a vector or a whole matrix. Torch7/PyTorch: x:mul(α) / mul_.");
    doc("copy", "copy(x, y) -> y", "y ← x, same shape (uint8 → float32 converts). Torch7/PyTorch: y:copy(x).");
    doc("swap", "swap(x, y) -> y", "Exchanges the contents of x and y (same shape).");
    doc("fill", "fill(x, v) -> x", "Sets every element of x to v. Torch7/PyTorch: x:fill(v) / fill_.");
    doc("dot", "dot(x, y) -> number",
        "Σ xᵢ·yᵢ over two vectors (or matrices) of the same size; the host waits. "
        "torch.dot.");
    doc("nrm2", "nrm2(x) -> number",
        "The Euclidean norm ‖x‖₂ of a vector or matrix (Frobenius); the host waits. "
        "torch.norm.");
    doc("asum", "asum(x) -> number", "Σ |xᵢ|; the host waits. PyTorch x.abs().sum().");
    doc("sum", "sum(x) -> number", "Σ xᵢ over every element; the host waits. torch.sum.");
    doc("imax", "imax(x) -> index",
        "The 1-based (column-major) index of the element of largest |x|, the first on "
        "ties; the host waits. BLAS i?amax.");
    doc("tanh", "tanh(x [, y]) -> y", "y ← tanh(x) elementwise; into x when y is absent. Same shape.");
    doc("sigmoid", "sigmoid(x [, y]) -> y", "y ← 1/(1 + e^−x) elementwise; into x when y is absent.");
    doc("relu", "relu(x [, y]) -> y", "y ← max(x, 0) elementwise; into x when y is absent.");
    doc("exp", "exp(x [, y]) -> y", "y ← eˣ elementwise; into x when y is absent.");
    doc("log", "log(x [, y]) -> y", "y ← ln x elementwise; into x when y is absent.");
    doc("sqrt", "sqrt(x [, y]) -> y", "y ← √x elementwise; into x when y is absent.");
    doc("sqr", "sqr(x [, y]) -> y", "y ← x² elementwise; into x when y is absent.");
    doc("inv", "inv(x [, y]) -> y", "y ← 1/x elementwise; into x when y is absent.");
    doc("abs", "abs(x [, y]) -> y", "y ← |x| elementwise; into x when y is absent.");
    doc("linear_frac", "linear_frac(x, [y,] a, b, c, d) -> y",
        "y ← (a·x + b)/(c·x + d) elementwise; into x when y is absent. With c = 0, d = 1 it is an affine map "
        "a·x + b. Neanderthal linear-frac!.");
    doc("tanh_prime", "tanh_prime(a [, y]) -> y",
        "y ← 1 − a², the derivative of tanh taken from the ACTIVATION a = tanh(z) (not from z); into a when y is "
        "absent. Backprop: mul(tanh_prime(a, tmp), delta).");
    doc("sigmoid_prime", "sigmoid_prime(a [, y]) -> y",
        "y ← a·(1 − a), the derivative of the sigmoid taken from the ACTIVATION a = σ(z) (not from z); into a "
        "when y is absent.");
    doc("relu_prime", "relu_prime(z [, y]) -> y",
        "y ← 1 where z > 0 else 0: the derivative of relu, from the pre-activation z (the activation a = relu(z) "
        "gives the same result); into z when y is absent.");
    doc("mul", "mul(a, b [, c]) -> c",
        "c ← a ∘ b (elementwise product, Hadamard); into b when c is absent. "
        "Same shapes. PyTorch torch.mul / cmul.");
    doc("div", "div(a, b [, c]) -> c", "c ← a / b elementwise; into b when c is absent. PyTorch cdiv.");
    doc("add", "add(a, b [, c]) -> c", "c ← a + b elementwise; into b when c is absent.");
    doc("sub", "sub(a, b [, c]) -> c", "c ← a − b elementwise; into b when c is absent.");
    doc("softmax", "softmax(x [, y]) -> y",
        "Per column, numerically stable (subtracts each column's maximum): "
        "y(:, j) ← e^x(:, j) / Σ e^x(:, j); into x when y is absent. k×n, one sample per column.");
    doc("softmax_xent", "softmax_xent(z, labels, dz [, loss [, scale]]) -> dz",
        "Fused softmax + cross-entropy for logits z (k×n): dz ← (softmax(z) − onehot(labels))·scale, scale "
        "defaulting to 1/n; loss (an optional n-vector) ← −log softmax(z)[label]. labels: an n-vector of 1-based "
        "class indices (float32 or uint8). PyTorch cross_entropy.");
    doc("argmax", "argmax(x, idx) -> idx",
        "idx(j) ← the 1-based row of the largest element of column j; x k×n, idx "
        "an n-vector. torch.max(x, 1).");
    doc("gather_cols", "gather_cols(src, idx, dst [, scale]) -> dst",
        "dst(:, j) ← scale·src(:, idx[j]): takes the columns listed in idx (an n-vector of 1-based indices) into "
        "dst (rows×n); src float32 or uint8 (converted, e.g. scale = 1/255 for images). A mini-batch from a data "
        "set already on the device. torch.index_select(src, 2, idx).");
    doc("add_bias", "add_bias(b, y) -> y",
        "y(:, j) ← y(:, j) + b for every column: b an m-vector, y m×n. "
        "Same as rk(b, ones(n, 1), y).");
    doc("dense", "dense(w, x, b, y [, act]) -> y",
        "y ← act(w·x + b·1ᵀ), the forward step of a fully connected layer in one call: w m×k, x k×n, b an m-vector, "
        "y m×n; act \"identity\" (default), \"relu\", \"sigmoid\" or \"tanh\". PyTorch F.linear + activation.");
}

void open_kernels(lua_State* L) {
    luaL_setfuncs(L, kernels, 0);
    document();
}

}  // namespace vela::lua

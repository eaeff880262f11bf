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
        static const auto names = [] {
            std::array<const char*, size_t(Act::count_) + 1> n{};
            for (size_t i = 0; i < size_t(Act::count_); i++) n[i] = act_name(Act(i));
            return n;
        }();
        act = Act(luaL_checkoption(L, 5, nullptr, names.data()));
    }
    guarded(L, [&] { dense(w, x, b, act, y); });
    lua_pushvalue(L, 4);
    return 1;
}

// sgd_step(w, g, v, lr, momentum [, weight_decay [, nesterov]]) -> w and
// adam_step(w, g, m, v, lr, beta1, beta2, eps) -> w: the fused optimizer updates.
static int k_sgd_step(lua_State* L) {
    check_nargs(L, 7);
    Matrix& w = check_matrix(L, 1);
    Matrix& g = check_matrix(L, 2);
    Matrix& v = check_matrix(L, 3);
    float lr = check_float(L, 4), momentum = check_float(L, 5);
    float wd = lua_isnoneornil(L, 6) ? 0.0f : check_float(L, 6);
    if (!lua_isnoneornil(L, 7) && !lua_isboolean(L, 7)) luaL_typeerror(L, 7, "boolean (nesterov)");
    bool nesterov = lua_toboolean(L, 7);
    guarded(L, [&] { sgd_step(w, g, v, lr, momentum, wd, nesterov); });
    lua_pushvalue(L, 1);
    return 1;
}

static int k_adam_step(lua_State* L) {
    check_nargs(L, 8);
    Matrix& w = check_matrix(L, 1);
    Matrix& g = check_matrix(L, 2);
    Matrix& m = check_matrix(L, 3);
    Matrix& v = check_matrix(L, 4);
    float lr = check_float(L, 5), b1 = check_float(L, 6), b2 = check_float(L, 7), eps = check_float(L, 8);
    guarded(L, [&] { adam_step(w, g, m, v, lr, b1, b2, eps); });
    lua_pushvalue(L, 1);
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
    {"argmax", k_argmax},
    {"gather_cols", k_gather_cols},
    {"add_bias", k_add_bias},
    {"dense", k_dense},
    {"sgd_step", k_sgd_step},
    {"adam_step", k_adam_step},
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
    // The op table's rows (core/ops.def): the function, its derivative and its fused backward step.
    for (uint8_t i = 0; i < uint8_t(Unary::count_); i++) {
        const Unary op = Unary(i);
        const std::string name = unary_name(op);
        const int np = unary_params(op);
        if (np > 0) {
            static const char* const pn[] = {"a", "b", "c", "d"};
            std::string ps;
            for (int k = 0; k < np; k++) ps += std::string(", ") + pn[k];
            doc(name.c_str(), (name + "(x, [y" + ps + "]) -> y").c_str(),
                ("y ← " + std::string(unary_formula(op)) +
                 " elementwise; into x when y is absent. With c = 0, d = 1 it is an affine map a·x + b. "
                 "Neanderthal linear-frac!.")
                    .c_str());
        } else if (name.size() < 6 || name.compare(name.size() - 6, 6, "_prime") != 0) {
            Act act;
            bool is_act = parse_act(name, act);
            doc(name.c_str(), (name + "(x [, y]) -> y").c_str(),
                ("y ← " + std::string(unary_formula(op)) + " elementwise; into x when y is absent. Same shape." +
                 (is_act ? " An activation: nn.linear(m, n, \"" + name + "\") and dense(w, x, b, y, \"" + name +
                               "\"); derivative " + name + "_prime, fused backward step " + name + "_backward."
                         : std::string()))
                    .c_str());
        }
    }
    for (uint8_t i = 1; i < uint8_t(Act::count_); i++) {
        const Act act = Act(i);
        const std::string name = act_name(act);
        const bool z = act_prime_from_z(act);
        const std::string from = z ? "z" : "a";
        doc((name + "_prime").c_str(), (name + "_prime(" + from + " [, y]) -> y").c_str(),
            ("y ← " + name + "′, the derivative of " + name + " taken from " +
             (z ? "the pre-activation z (not from a = " + name + "(z))"
                : "the ACTIVATION a = " + name + "(z) (not from z)") +
             "; into " + from + " when y is absent. The backward step in one kernel: " + name + "_backward.")
                .c_str());
        doc(act_backward_name(act), (name + "_backward(da, " + from + " [, delta]) -> delta").c_str(),
            ("delta ← da ∘ " + name + "′(" + from + "), the backward step of the activation in one pass (what " +
             name + "_prime then mul compute in two); " + from + " is " +
             (z ? "the pre-activation z" : "the activation a = " + name + "(z)") +
             "; into da when delta is absent. nn.linear's backward uses it.")
                .c_str());
    }
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
        "class indices (float32 or uint8), each an integer in 1..k: any other value is an error naming the first bad "
        "position (on a Vulkan device raised by the next read or sync, the bad columns NaN). PyTorch cross_entropy.");
    doc("argmax", "argmax(x, idx) -> idx",
        "idx(j) ← the 1-based row of the largest element of column j; x k×n, idx "
        "an n-vector. torch.max(x, 1).");
    doc("gather_cols", "gather_cols(src, idx, dst [, scale]) -> dst",
        "dst(:, j) ← scale·src(:, idx[j]): takes the columns listed in idx (an n-vector of 1-based indices) into "
        "dst (rows×n); src float32 or uint8 (converted, e.g. scale = 1/255 for images). A mini-batch from a data "
        "set already on the device. Each index an integer in 1..cols(src): any other value is an error naming the "
        "first bad position (on a Vulkan device raised by the next read or sync, the bad columns NaN). "
        "torch.index_select(src, 2, idx).");
    doc("add_bias", "add_bias(b, y) -> y",
        "y(:, j) ← y(:, j) + b for every column: b an m-vector, y m×n. "
        "Same as rk(b, ones(n, 1), y).");
    doc("dense", "dense(w, x, b, y [, act]) -> y",
        "y ← act(w·x + b·1ᵀ), the forward step of a fully connected layer in one call: w m×k, x k×n, b an m-vector, "
        "y m×n; act one of vela.activations (\"identity\" (default), \"relu\", \"sigmoid\", \"tanh\", \"elu\", "
        "\"gelu\", \"leaky_relu\", \"softplus\"), computed with the same functions as the elementwise kernels. "
        "PyTorch F.linear + activation.");
    doc("sgd_step", "sgd_step(w, g, v, lr, momentum [, weight_decay [, nesterov]]) -> w",
        "One SGD-with-momentum update in one pass: g' = g + weight_decay·w, v ← momentum·v + g', "
        "w ← w − lr·v (nesterov: w ← w − lr·(g' + momentum·v)); w, g, v one shape, separate matrices; g is only "
        "read. optim.sgd uses it. Example: sgd_step(w, dw, v, 0.05, 0.9). PyTorch SGD(momentum=) step, fused.");
    doc("adam_step", "adam_step(w, g, m, v, lr, beta1, beta2, eps) -> w",
        "One Adam update in one pass: m ← β₁m + (1 − β₁)g, v ← β₂v + (1 − β₂)g², w ← w − lr·m/(√v + ε), with "
        "the bias correction in lr and eps (optim.adam passes lr·√(1 − β₂ᵗ)/(1 − β₁ᵗ) and ε·√(1 − β₂ᵗ)). "
        "Example: adam_step(w, dw, m, v, 0.001, 0.9, 0.999, 1e-8). PyTorch Adam step, fused.");
}

// vela.activations: the activation names in code order (nn.linear's list and
// nn.save's codes, 0 = identity); vela.ops: per elementwise op of the table,
// {params = n, activation = bool, from = "a"|"z" (activations)}.
static void export_table(lua_State* L) {
    lua_createtable(L, int(Act::count_), 0);
    for (uint8_t i = 0; i < uint8_t(Act::count_); i++) {
        lua_pushstring(L, act_name(Act(i)));
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "activations");
    lua_newtable(L);
    for (uint8_t i = 0; i < uint8_t(Unary::count_); i++) {
        const Unary op = Unary(i);
        Act act;
        const bool is_act = parse_act(unary_name(op), act);
        lua_createtable(L, 0, 3);
        lua_pushinteger(L, unary_params(op));
        lua_setfield(L, -2, "params");
        lua_pushboolean(L, is_act);
        lua_setfield(L, -2, "activation");
        if (is_act) {
            lua_pushstring(L, act_prime_from_z(act) ? "z" : "a");
            lua_setfield(L, -2, "from");
        }
        lua_setfield(L, -2, unary_name(op));
    }
    lua_setfield(L, -2, "ops");
}

void open_kernels(lua_State* L) {
    luaL_setfuncs(L, kernels, 0);
    export_table(L);
    note_kernels(L, kernels);  // profile, trace and diverge tell kernels from other calls
    document();
}

}  // namespace vela::lua

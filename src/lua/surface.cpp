// What a Torch7, PyTorch or NumPy user reaches for first, built from the
// kernels (no kernel of its own, so every device has it):
//   m:size() -> rows, cols; m:size(d); m:numel(); m:dim()
//   m + s, s + m, m - s, s - m, m / s, s / m, m / b (elementwise): new matrices
//   sum, mean, max, min over the whole matrix (a number: the host waits) or
//   along a dimension (sum(x, 1) -> 1×n, sum(x, 2) -> rows×1), the result a
//   matrix on x's device, never downloaded:
//     sum along a dimension  mv with a ones vector
//     mean                   that, then scal by 1/count
//     max along columns      argmax, then gather_cols of the element it names
//                            from a flat 1×span view of x's storage (so NaN
//                            loses to any number, as in argmax)
//     along rows             the same on xᵀ (argmax takes any view)
//     min                    the same with argmin
//   Torch7's in-place methods, aliases of the kernels writing into m itself:
//   m:add(s) / m:add(y) / m:add(alpha, y), m:mul(s), m:div(s), m:cmul(y),
//   m:cdiv(y), m:fill(v), m:zero(), m:tanh(), m:sigmoid(), m:relu(), m:exp(),
//   m:log(), m:sqrt(), m:abs(), m:sqr(): each returns m (clone(m) first keeps m).
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "core/ops.hpp"
#include "lua/check.hpp"
#include "lua/vela.hpp"

namespace vela::lua {

namespace {

Matrix ones_vec(Device& dev, int64_t n) {
    Matrix v = empty(dev, n, 1);
    fill(v, 1.0f);
    return v;
}

// Σ along dim (1: over the rows, giving 1×cols; 2: over the columns, rows×1) into a new matrix.
Matrix sum_dim(const Matrix& x, int dim) {
    Device& dev = x.device();
    if (dim == 1) {
        Matrix y = empty(dev, 1, x.cols);
        mv(1.0f, x.t(), ones_vec(dev, x.rows), 0.0f, y.t());
        return y;
    }
    Matrix y = empty(dev, x.rows, 1);
    mv(1.0f, x, ones_vec(dev, x.cols), 0.0f, y);
    return y;
}

// max (min) over each column of a dense x: 1×cols, from a one-hot of argmax
// (argmin), for columns longer than a float counts exactly, where a gather
// cannot be told the row.
Matrix extreme_columns_onehot(Extreme e, const Matrix& x, const Matrix* keep) {
    Device& dev = x.device();
    int64_t r = x.rows, n = x.cols;
    Matrix idx = empty(dev, 1, n);
    arg_extreme(x, idx, e);
    if (keep) copy(idx, *keep);
    std::vector<float> rowno(static_cast<size_t>(r));
    for (int64_t i = 0; i < r; ++i) rowno[size_t(i)] = float(i + 1);
    Matrix d = zeros(dev, r, n);
    rk(1.0f, from_host(dev, r, 1, rowno.data()), ones_vec(dev, n), d);  // d(i, j) = i
    rk(-1.0f, ones_vec(dev, r), idx.t(), d);                            // − idx(j)
    unary(Unary::sqr, d, d);
    const float onehot[4] = {0.0f, 1.0f, 1e30f, 1.0f};  // 1/(1 + 10³⁰·d²)
    unary(Unary::linear_frac, d, d, onehot);
    binary(Binary::mul, x, d, d);
    return sum_dim(d, 1);
}

// Floats count integers exactly up to 2^24: the most elements a gather index may name.
constexpr int64_t kExactIndex = int64_t(1) << 24;

// out (a 1×cols view) ← the maximum (minimum) of each column of x (any
// view): x at argmax's (argmin's) row, gathered from a flat 1×span view of
// x's storage, so NaN loses to any number and a column of NaN gives NaN. Two
// passes over x (the index, then one element per column), in chunks of
// columns whose storage spans at most 2^24 elements so that each element's
// place in the flat view is exact.
void extreme_columns(Extreme e, const Matrix& x, const Matrix& out, const Matrix* keep) {
    Device& dev = x.device();
    const int64_t r = x.rows, n = x.cols, rs = x.row_step(), cs = x.col_step();
    if (r * rs >= kExactIndex) {
        if (rs != 1) return extreme_columns(e, clone(x), out, keep);  // a dense copy spans r per column
        return copy(extreme_columns_onehot(e, x, keep), out);
    }
    Matrix idx = empty(dev, 1, n);
    arg_extreme(x, idx, e);
    if (keep) copy(idx, *keep);
    const int64_t per = n == 1 ? 1 : std::max<int64_t>(1, (kExactIndex - r * rs) / std::max<int64_t>(cs, 1) + 1);
    std::vector<float> at;
    for (int64_t j0 = 0; j0 < n; j0 += per) {
        const int64_t k = std::min(per, n - j0);
        // Element (i, j0 + j) is flat element 1 + i·rs + j·cs (1-based): rs·idx + (1 − rs + j·cs).
        Matrix flat = x;
        flat.rows = 1, flat.cols = (r - 1) * rs + (k - 1) * cs + 1, flat.offset = x.index(0, j0), flat.ld = 1,
        flat.trans = false;
        Matrix ic = idx.columns(j0, k);
        at.resize(size_t(k));
        for (int64_t j = 0; j < k; j++) at[size_t(j)] = float(1 - rs + j * cs);
        axpby(1.0f, from_host(dev, 1, k, at.data()), float(rs), ic);
        gather_cols(flat, ic, out.columns(j0, k), 1.0f);
    }
}

// The extremes along dim (1: 1×cols, 2: rows×1); with idx, their 1-based
// indices (rows for dim 1, columns for dim 2) into *idx, a new matrix of that shape.
Matrix extreme_dim(Extreme e, const Matrix& x, int dim, Matrix* idx = nullptr) {
    const int64_t r = dim == 1 ? 1 : x.rows, c = dim == 1 ? x.cols : 1;
    Matrix out = empty(x.device(), r, c);
    if (idx) *idx = empty(x.device(), r, c);
    if (dim == 1) {
        extreme_columns(e, x, out, idx);
    } else {
        Matrix it = idx ? idx->t() : Matrix{};
        extreme_columns(e, x.t(), out.t(), idx ? &it : nullptr);
    }
    return out;
}

enum class Red { sum, mean, max, min };

const char* red_name(Red r) {
    switch (r) {
        case Red::sum: return "sum";
        case Red::mean: return "mean";
        case Red::max: return "max";
        default: return "min";
    }
}

// The reduction along dim into a new matrix on x's device; max and min also
// give their indices in *idx when idx is not null.
Matrix reduce_dim(Red r, const Matrix& x, int dim, Matrix* idx = nullptr) {
    const char* fn = red_name(r);
    check_live(fn, "x", x);
    if (x.dtype() != DType::f32) fail("%s: x is uint8; reductions take float32 (x:to(dev) after copy into a float matrix)", fn);
    if (x.empty()) fail("%s: x is %s (an empty matrix has no %s)", fn, x.shape_str().c_str(), fn);
    switch (r) {
        case Red::sum: return sum_dim(x, dim);
        case Red::mean: {
            Matrix s = sum_dim(x, dim);
            scal(1.0f / float(dim == 1 ? x.rows : x.cols), s);
            return s;
        }
        case Red::max: return extreme_dim(Extreme::largest, x, dim, idx);
        default: return extreme_dim(Extreme::smallest, x, dim, idx);
    }
}

// The whole-matrix reduction: a number (the host waits for it).
double reduce_all(Red r, const Matrix& x) {
    const char* fn = red_name(r);
    check_live(fn, "x", x);
    if (x.empty() && r == Red::sum) return 0.0;  // as NumPy: the empty sum is 0
    if (x.empty()) fail("%s: x is %s (an empty matrix has no %s)", fn, x.shape_str().c_str(), fn);
    if (r == Red::sum || r == Red::mean) {
        double s = sum(x);
        return r == Red::sum ? s : s / double(x.size());
    }
    if (x.dtype() != DType::f32) fail("%s: x is uint8; reductions take float32", fn);
    // max (min) over the columns (1×n), then over that row (as an n×1 column): 1×1.
    const Extreme e = r == Red::max ? Extreme::largest : Extreme::smallest;
    return sum(extreme_dim(e, extreme_dim(e, x, 1), 2));
}

int check_dim(lua_State* L, int arg, const char* fn) {
    lua_Integer d = luaL_checkinteger(L, arg);
    if (d != 1 && d != 2)
        luaL_error(L, "%s: dim must be 1 (down the rows: one value per column, 1×cols) or 2 (along each row: "
                   "rows×1), got %d",
                   fn, int(d));
    return int(d);
}

template <Red R>
int l_reduce(lua_State* L) {
    check_nargs(L, 2);
    Matrix& x = check_matrix(L, 1);
    if (lua_isnoneornil(L, 2)) {
        lua_pushnumber(L, guarded(L, [&] { return reduce_all(R, x); }));
        return 1;
    }
    int dim = check_dim(L, 2, red_name(R));
    if (R == Red::max || R == Red::min) {  // values and indices, as Torch: local v, i = max(x, 1)
        auto vi = guarded(L, [&] {
            Matrix idx;
            Matrix v = reduce_dim(R, x, dim, &idx);
            return std::make_pair(std::move(v), std::move(idx));
        });
        push_matrix(L, std::move(vi.first));
        push_matrix(L, std::move(vi.second));
        return 2;
    }
    push_matrix(L, guarded(L, [&] { return reduce_dim(R, x, dim); }));
    return 1;
}

/* ---------------------------------------------------------------------- */
/* size, numel, dim                                                       */
/* ---------------------------------------------------------------------- */

int m_size(lua_State* L) {
    check_method_nargs(L, 1);
    Matrix& m = check_matrix(L, 1);
    if (!lua_isnoneornil(L, 2)) {
        lua_Integer d = luaL_checkinteger(L, 2);
        if (d != 1 && d != 2) return luaL_error(L, "size: dim must be 1 (rows) or 2 (columns), got %d", int(d));
        lua_pushinteger(L, d == 1 ? m.rows : m.cols);
        return 1;
    }
    lua_pushinteger(L, m.rows);
    lua_pushinteger(L, m.cols);
    return 2;
}

int m_numel(lua_State* L) {
    check_method_nargs(L, 0);
    lua_pushinteger(L, check_matrix(L, 1).size());
    return 1;
}

int m_dim(lua_State* L) {
    check_method_nargs(L, 0);
    check_matrix(L, 1);
    lua_pushinteger(L, 2);
    return 1;
}

/* ---------------------------------------------------------------------- */
/* operators with a number                                                */
/* ---------------------------------------------------------------------- */

// y ← (a·x + b)/(c·x + d) into a new matrix.
Matrix frac(const Matrix& x, float a, float b, float c, float d) {
    Matrix y = empty(x.device(), x.rows, x.cols);
    const float p[4] = {a, b, c, d};
    unary(Unary::linear_frac, x, y, p);
    return y;
}

const char* kind(lua_State* L, int arg) { return test_matrix(L, arg) ? "matrix" : luaL_typename(L, arg); }

// __add, __sub, __div: with two matrices the original operator (upvalue 1)
// or the elementwise kernel; with a number, linear_frac or scal.
template <char Op>
int op_scalar(lua_State* L) {
    Matrix* a = test_matrix(L, 1);
    Matrix* b = test_matrix(L, 2);
    if (a && b) {
        if (Op == '/') {
            push_matrix(L, guarded(L, [&] {
                            check_live("div", "a", *a), check_live("div", "b", *b);
                            int64_t rows, cols;
                            broadcast_shape("div", *a, *b, rows, cols);
                            Matrix c = empty(a->device(), rows, cols);
                            binary(Binary::div, *a, *b, c);
                            return c;
                        }));
            return 1;
        }
        lua_pushvalue(L, lua_upvalueindex(1));
        lua_insert(L, 1);
        lua_call(L, lua_gettop(L) - 1, 1);
        return 1;
    }
    int num = a ? 2 : 1;
    if (!(a || b) || lua_type(L, num) != LUA_TNUMBER)
        return luaL_error(L, "matrix %c: operands must be matrices or a matrix and a number, got %s and %s", Op,
                          kind(L, 1), kind(L, 2));
    float s = float(lua_tonumber(L, num));
    Matrix& m = a ? *a : *b;
    bool left = a != nullptr;  // m op s, else s op m
    push_matrix(L, guarded(L, [&] {
                    check_live(Op == '+' ? "add" : Op == '-' ? "sub" : "div", "m", m);
                    if (Op == '+') return frac(m, 1, s, 0, 1);
                    if (Op == '-') return left ? frac(m, 1, -s, 0, 1) : frac(m, -1, s, 0, 1);
                    if (left) return frac(m, 1.0f / s, 0, 0, 1);  // m / s
                    return frac(m, 0, s, 1, 0);                   // s / m, elementwise
                }));
    return 1;
}

// __index: m[1] is an error saying how to index (not a silent nil); other
// keys go to the original __index (upvalue 2). Upvalue 1 is the metatable,
// where help and completion find the methods (as with the original).
int m_index_number(lua_State* L) {
    if (lua_type(L, 2) == LUA_TNUMBER) {
        Matrix& m = check_matrix(L, 1);
        return luaL_error(L,
                          "matrix: m[%s] is not how a %s matrix is indexed: m:get(i, j) reads an element (a vector "
                          "takes m:get(k)), m:row(i) and m:col(j) are views",
                          lua_tostring(L, 2), m.shape_str().c_str());
    }
    lua_pushvalue(L, lua_upvalueindex(2));
    lua_insert(L, 1);
    lua_call(L, 2, 1);
    return 1;
}

/* ---------------------------------------------------------------------- */
/* Torch7's in-place methods                                              */
/* ---------------------------------------------------------------------- */

template <Unary U>
int m_unary(lua_State* L) {
    check_method_nargs(L, 0);
    Matrix& m = check_matrix(L, 1);
    guarded(L, [&] { unary(U, m, m); });
    lua_settop(L, 1);
    return 1;
}

// m:add(s) | m:add(y) | m:add(alpha, y)
int m_add_inplace(lua_State* L) {
    check_method_nargs(L, 2);
    Matrix& m = check_matrix(L, 1);
    if (lua_gettop(L) == 2 && lua_type(L, 2) == LUA_TNUMBER) {
        float s = float(lua_tonumber(L, 2));
        const float p[4] = {1, s, 0, 1};
        guarded(L, [&] { unary(Unary::linear_frac, m, m, p); });
    } else if (lua_gettop(L) == 2) {
        Matrix& y = check_matrix(L, 2);
        guarded(L, [&] { axpy(1.0f, y, m); });
    } else {
        float alpha = check_float(L, 2);
        Matrix& y = check_matrix(L, 3);
        guarded(L, [&] { axpy(alpha, y, m); });
    }
    lua_settop(L, 1);
    return 1;
}

template <bool Divide>
int m_scale(lua_State* L) {
    check_method_nargs(L, 1);
    Matrix& m = check_matrix(L, 1);
    float s = check_float(L, 2);
    guarded(L, [&] { scal(Divide ? 1.0f / s : s, m); });
    lua_settop(L, 1);
    return 1;
}

template <Binary B>
int m_elementwise(lua_State* L) {
    check_method_nargs(L, 1);
    Matrix& m = check_matrix(L, 1);
    Matrix& y = check_matrix(L, 2);
    guarded(L, [&] { binary(B, m, y, m); });
    lua_settop(L, 1);
    return 1;
}

int m_fill(lua_State* L) {
    check_method_nargs(L, 1);
    Matrix& m = check_matrix(L, 1);
    float v = check_float(L, 2);
    guarded(L, [&] { fill(m, v); });
    lua_settop(L, 1);
    return 1;
}

int m_zero(lua_State* L) {
    check_method_nargs(L, 0);
    Matrix& m = check_matrix(L, 1);
    guarded(L, [&] { fill(m, 0.0f); });
    lua_settop(L, 1);
    return 1;
}

// m:sum([dim]) and the like: the functions, as methods.
template <Red R>
int m_reduce(lua_State* L) {
    check_method_nargs(L, 1);
    return l_reduce<R>(L);
}

void document() {
    doc("sum", "sum(x [, dim]) -> number | matrix",
        "Σ of every element (a number; the host waits), or along dim on the device: sum(x, 1) is 1×cols (each "
        "column's sum), sum(x, 2) rows×1 (each row's). Also x:sum([dim]). torch.sum / x.sum(dim).");
    doc("mean", "mean(x [, dim]) -> number | matrix",
        "The mean of every element, or along dim (1 → 1×cols, 2 → rows×1) as a matrix on the device. Also "
        "x:mean([dim]). torch.mean.");
    doc("max", "max(x) -> number  |  max(x, dim) -> values, indices",
        "The largest element (a number), or along dim, as Torch: two matrices on the device, the values and "
        "their 1-based indices (dim 1: 1×cols, each column's largest and its row; dim 2: rows×1, each row's "
        "largest and its column; the first on ties, as argmax). `local v = max(x, 1)` keeps the values only; "
        "in an argument list both are passed, so write (max(x, 1)) for the values alone. NaN loses to any "
        "number (a column of NaN gives NaN and index 1); torch.max and numpy amax propagate it instead. Also "
        "x:max([dim]). Example: local v, i = max(from{{1, 5}, {3, 2}}, 1)  -- v {{3, 5}}, i {{2, 1}}");
    doc("min", "min(x) -> number  |  min(x, dim) -> values, indices",
        "The smallest element, or along dim the values and their 1-based indices (1 → 1×cols, 2 → rows×1), as "
        "max; NaN loses, as in max. Also x:min([dim]). torch.min. Example: local v, i = min(from{{1, 5}, {3, 2}}, 2)  "
        "-- v 1, 2; i 1, 2");
    doc("Matrix:size", "m:size() -> rows, cols  |  m:size(d)", "The shape (d = 1 rows, 2 columns). torch x:size().");
    doc("Matrix:numel", "m:numel() -> rows·cols", "The number of elements. torch x:numel() / numpy size.");
    doc("Matrix:dim", "m:dim() -> 2", "The number of dimensions: a vela matrix always has 2. torch x:dim().");
    doc("Matrix:add", "m:add(s) | m:add(y) | m:add(alpha, y) -> m",
        "In place, as Torch7: m ← m + s, m ← m + y, m ← m + α·y (axpy(alpha, y, m)). For a new matrix: m + y, m + s.");
    doc("Matrix:mul", "m:mul(s) -> m", "In place: m ← s·m (scal). torch x:mul(s). For a new matrix: s * m.");
    doc("Matrix:div", "m:div(s) -> m", "In place: m ← m / s (scal by 1/s). For a new matrix: m / s.");
    doc("Matrix:cmul", "m:cmul(y) -> m", "In place, elementwise: m ← m ∘ y (the mul kernel). torch x:cmul(y).");
    doc("Matrix:cdiv", "m:cdiv(y) -> m", "In place, elementwise: m ← m / y (the div kernel). torch x:cdiv(y).");
    doc("Matrix:fill", "m:fill(v) -> m", "In place: every element ← v (fill(m, v)). torch x:fill(v).");
    doc("Matrix:zero", "m:zero() -> m", "In place: every element ← 0. torch x:zero().");
    doc("Matrix:tanh", "m:tanh() -> m",
        "In place: m ← tanh(m) (tanh(m)). torch x:tanh() / x.tanh_(). Rewrites m: clone(m):tanh() for a new matrix.");
    doc("Matrix:sigmoid", "m:sigmoid() -> m",
        "In place: m ← σ(m). torch x:sigmoid() / x.sigmoid_(). Rewrites m: clone(m):sigmoid() for a new matrix.");
    doc("Matrix:relu", "m:relu() -> m",
        "In place: m ← max(m, 0). PyTorch x.relu_(). Rewrites m: clone(m):relu() for a new matrix.");
    doc("Matrix:exp", "m:exp() -> m", "In place: m ← eᵐ. torch x:exp(). Rewrites m: clone(m):exp() for a new matrix.");
    doc("Matrix:log", "m:log() -> m",
        "In place: m ← log m. torch x:log(). Rewrites m: clone(m):log() for a new matrix.");
    doc("Matrix:sqrt", "m:sqrt() -> m",
        "In place: m ← √m. torch x:sqrt(). Rewrites m: clone(m):sqrt() for a new matrix.");
    doc("Matrix:abs", "m:abs() -> m",
        "In place: m ← |m|, and m is returned, so x:abs():exp() rewrites x twice. For a new matrix leaving x "
        "alone: clone(x):abs() (or abs(x, y) into y). torch x:abs().");
    doc("Matrix:sqr", "m:sqr() -> m", "In place: m ← m². numpy square. Rewrites m: clone(m):sqr() for a new matrix.");
    doc("Matrix:sum", "m:sum([dim]) -> number | matrix", "sum(m [, dim]) as a method.");
    doc("Matrix:mean", "m:mean([dim]) -> number | matrix", "mean(m [, dim]) as a method.");
    doc("Matrix:max", "m:max([dim]) -> number | values, indices", "max(m [, dim]) as a method.");
    doc("Matrix:min", "m:min([dim]) -> number | values, indices", "min(m [, dim]) as a method.");
}

}  // namespace

void open_surface(lua_State* L) {
    static const luaL_Reg functions[] = {{"sum", l_reduce<Red::sum>},
                                         {"mean", l_reduce<Red::mean>},
                                         {"max", l_reduce<Red::max>},
                                         {"min", l_reduce<Red::min>},
                                         {nullptr, nullptr}};
    luaL_setfuncs(L, functions, 0);
    static const luaL_Reg methods[] = {{"size", m_size},
                                       {"numel", m_numel},
                                       {"dim", m_dim},
                                       {"add", m_add_inplace},
                                       {"mul", m_scale<false>},
                                       {"div", m_scale<true>},
                                       {"cmul", m_elementwise<Binary::mul>},
                                       {"cdiv", m_elementwise<Binary::div>},
                                       {"fill", m_fill},
                                       {"zero", m_zero},
                                       {"tanh", m_unary<Unary::tanh>},
                                       {"sigmoid", m_unary<Unary::sigmoid>},
                                       {"relu", m_unary<Unary::relu>},
                                       {"exp", m_unary<Unary::exp>},
                                       {"log", m_unary<Unary::log>},
                                       {"sqrt", m_unary<Unary::sqrt>},
                                       {"abs", m_unary<Unary::abs>},
                                       {"sqr", m_unary<Unary::sqr>},
                                       {"sum", m_reduce<Red::sum>},
                                       {"mean", m_reduce<Red::mean>},
                                       {"max", m_reduce<Red::max>},
                                       {"min", m_reduce<Red::min>},
                                       {nullptr, nullptr}};
    luaL_getmetatable(L, kMatrixType);
    luaL_setfuncs(L, methods, 0);
    // The operators with a number; two matrices keep the original + and −.
    lua_getfield(L, -1, "__add");
    lua_pushcclosure(L, op_scalar<'+'>, 1);
    lua_setfield(L, -2, "__add");
    lua_getfield(L, -1, "__sub");
    lua_pushcclosure(L, op_scalar<'-'>, 1);
    lua_setfield(L, -2, "__sub");
    lua_pushnil(L);
    lua_pushcclosure(L, op_scalar<'/'>, 1);
    lua_setfield(L, -2, "__div");
    lua_pushvalue(L, -1);
    lua_getfield(L, -2, "__index");
    lua_pushcclosure(L, m_index_number, 2);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
    document();
}

}  // namespace vela::lua

// Shapes and pieces, with the names a Torch7/PyTorch/NumPy user reaches for:
//   clone(x), x:clone()              a dense copy on the same device
//   item(x), x:item()                a 1×1 as a number
//   reshape(x, r, c), x:reshape      a view when x is one dense column-major run, else a copy
//   x:view(r, c)                     the view only (an error where a copy would be needed);
//                                    x:view(i, j, rows, cols) stays the block view
//   transpose(x), x:transpose()      the transpose materialized (x:t() is the view)
//   narrow(x, dim, start, len)       views: rows or columns start .. start+len−1
//   x:select(dim, i)                 a view: row i (dim 1) or column i (dim 2) (the global select is Lua's)
//   x:sub(r1, r2 [, c1, c2])         a view, Torch7's inclusive ranges (negative: from the end)
//   cat(a, b [, dim]), cat{...}      a new matrix: side by side (dim 2, Torch7's default) or stacked (dim 1)
// Reshaping follows vela's storage order, column-major (Fortran's, MATLAB's,
// Julia's): NumPy's default reshape walks rows instead, as ?reshape says.
#include "core/ops.hpp"
#include "lua/check.hpp"
#include "lua/vela.hpp"

namespace vela::lua {

namespace {

int l_clone(lua_State* L) {
    check_nargs(L, 1);
    Matrix& x = check_matrix(L, 1);
    push_matrix(L, guarded(L, "clone", [&] {
                    check_live("clone", "x", x);
                    return clone(x);
                }));
    return 1;
}

int l_item(lua_State* L) {
    check_nargs(L, 1);
    Matrix& x = check_matrix(L, 1);
    if (x.rows != 1 || x.cols != 1)
        luaL_error(L, "item: x is %I×%I but must be 1×1 (one element); x:get(i, j) reads any element",
                   lua_Integer(x.rows), lua_Integer(x.cols));
    lua_pushnumber(L, guarded(L, "item", [&] { return get(x, 0, 0); }));
    return 1;
}

// The new shape from arguments r, c at `arg`: integers ≥ 0, one of them may be −1 (inferred).
void new_shape(lua_State* L, int arg, const char* fn, const Matrix& x, int64_t& r, int64_t& c) {
    lua_Integer rr = luaL_checkinteger(L, arg), cc = luaL_checkinteger(L, arg + 1);
    if (rr < -1 || cc < -1 || (rr == -1 && cc == -1))
        luaL_error(L, "%s: the shape %I×%I is not one (sizes ≥ 0, or one of them −1 to infer it)", fn, rr, cc);
    const int64_t n = x.size();
    if (rr == -1) {
        if (cc == 0 || n % cc != 0)
            luaL_error(L, "%s: %I elements do not make whole columns of %I (x is %I×%I)", fn, lua_Integer(n), cc,
                       lua_Integer(x.rows), lua_Integer(x.cols));
        rr = n / cc;
    } else if (cc == -1) {
        if (rr == 0 || n % rr != 0)
            luaL_error(L, "%s: %I elements do not make whole rows of %I (x is %I×%I)", fn, lua_Integer(n), rr,
                       lua_Integer(x.rows), lua_Integer(x.cols));
        cc = n / rr;
    }
    if (rr > n || cc > n || (rr != 0 && cc != 0 && (cc > n / rr || rr * cc != n)) || ((rr == 0 || cc == 0) && n != 0))
        luaL_error(L, "%s: x is %I×%I (%I elements) but %I×%I holds a different number", fn, lua_Integer(x.rows),
                   lua_Integer(x.cols), lua_Integer(n), rr, cc);
    r = rr, c = cc;
}

// x's elements in column-major order as an r×c view; x must be one dense run.
Matrix reshaped(const Matrix& x, int64_t r, int64_t c) {
    Matrix v = x;
    v.rows = r, v.cols = c, v.trans = false, v.ld = r > 0 ? r : 1;
    return v;
}

int l_reshape(lua_State* L) {
    check_nargs(L, 3);
    Matrix& x = check_matrix(L, 1);
    int64_t r, c;
    new_shape(L, 2, "reshape", x, r, c);
    push_matrix(L, guarded(L, "reshape", [&] {
                    check_live("reshape", "x", x);
                    return reshaped(x.contiguous() ? x : clone(x), r, c);
                }));
    return 1;
}

}  // namespace

// x:view(r, c): the reshaped view, never a copy (matrix.cpp's m:view calls it
// for two numbers; four are its block view).
int view_reshaped(lua_State* L) {
    Matrix& x = check_matrix(L, 1);
    int64_t r, c;
    new_shape(L, 2, "m:view", x, r, c);
    guarded(L, "m:view", [&] { check_live("m:view", "x", x); });
    if (!x.contiguous())
        luaL_error(L,
                   "m:view: x (%I×%I) is not one dense column-major run (a transposed or strided view), so "
                   "no %I×%I view of it exists; x:reshape(%I, %I) copies where it must",
                   lua_Integer(x.rows), lua_Integer(x.cols), lua_Integer(r), lua_Integer(c), lua_Integer(r),
                   lua_Integer(c));
    push_matrix(L, reshaped(x, r, c));
    return 1;
}

namespace {

int l_transpose(lua_State* L) {
    check_nargs(L, 3);
    Matrix& x = check_matrix(L, 1);
    if (!lua_isnoneornil(L, 2) || !lua_isnoneornil(L, 3)) {
        lua_Integer d1 = luaL_checkinteger(L, 2), d2 = luaL_checkinteger(L, 3);
        if (!((d1 == 1 && d2 == 2) || (d1 == 2 && d2 == 1)))
            luaL_error(L, "transpose: dims must be 1 and 2 (a vela matrix has two), got %I and %I", d1, d2);
    }
    push_matrix(L, guarded(L, "transpose", [&] {
                    check_live("transpose", "x", x);
                    return clone(x.t());
                }));
    return 1;
}

int check_dim(lua_State* L, int arg, const char* fn) {
    lua_Integer d = luaL_checkinteger(L, arg);
    if (d != 1 && d != 2) luaL_error(L, "%s: dim must be 1 (rows) or 2 (columns), got %I", fn, d);
    return int(d);
}

int l_narrow(lua_State* L) {
    check_nargs(L, 4);
    Matrix& x = check_matrix(L, 1);
    int dim = check_dim(L, 2, "narrow");
    lua_Integer start = luaL_checkinteger(L, 3), len = luaL_checkinteger(L, 4);
    const int64_t extent = dim == 1 ? x.rows : x.cols;
    if (len < 0 || start < 1 || start - 1 > extent || len > extent - (start - 1))
        luaL_error(L, "narrow: %s %I..%I (start %I, length %I) are out of range 1..%I", dim == 1 ? "rows" : "columns",
                   start, start + len - 1, start, len, lua_Integer(extent));
    push_matrix(L, guarded(L, "narrow", [&] {
                    return dim == 1 ? view(x, start - 1, 0, len, x.cols) : view(x, 0, start - 1, x.rows, len);
                }));
    return 1;
}

int l_select(lua_State* L) {
    check_nargs(L, 3);
    Matrix& x = check_matrix(L, 1);
    int dim = check_dim(L, 2, "m:select");
    int64_t i = check_index(L, 3, "m:select", dim == 1 ? "row" : "column", dim == 1 ? x.rows : x.cols);
    push_matrix(L, guarded(L, "m:select", [&] { return dim == 1 ? row(x, i) : col(x, i); }));
    return 1;
}

// Torch7's inclusive range r1..r2 of an extent n, negative counting from the end (−1 the last).
void torch_range(lua_State* L, int arg, int64_t n, const char* what, int64_t& first, int64_t& count) {
    lua_Integer a = luaL_checkinteger(L, arg), b = luaL_checkinteger(L, arg + 1);
    lua_Integer a1 = a < 0 ? n + 1 + a : a, b1 = b < 0 ? n + 1 + b : b;
    if (a1 < 1 || b1 > n || b1 < a1 - 1)
        luaL_error(L, "m:sub: %s %I..%I are out of range for %I %s (1-based, inclusive; −1 is the last)", what, a, b,
                   lua_Integer(n), what);
    first = a1 - 1, count = b1 - a1 + 1;
}

int m_sub(lua_State* L) {
    check_method_nargs(L, 4);
    Matrix& x = check_matrix(L, 1);
    int64_t r0, rn, c0 = 0, cn = x.cols;
    torch_range(L, 2, x.rows, "rows", r0, rn);
    if (!lua_isnoneornil(L, 4) || !lua_isnoneornil(L, 5)) torch_range(L, 4, x.cols, "columns", c0, cn);
    push_matrix(L, guarded(L, "m:sub", [&] { return view(x, r0, c0, rn, cn); }));
    return 1;
}

// cat(a, b [, dim]) or cat({a, b, ...} [, dim]). The operands are pointers to
// the userdata payloads in Lua-owned scratch memory (alive on the stack), so a
// Lua error leaves nothing owning behind.
int l_cat(lua_State* L) {
    const bool table = lua_type(L, 1) == LUA_TTABLE;
    check_nargs(L, table ? 2 : 3);
    const int dim_arg = table ? 2 : 3;  // read before the scratch memory goes on the stack
    const int dim = lua_isnoneornil(L, dim_arg) ? 2 : check_dim(L, dim_arg, "cat");
    const Matrix** parts;
    size_t n;
    if (table) {
        n = lua_rawlen(L, 1);
        if (n == 0) luaL_error(L, "cat: the table holds no matrices");
        parts = scratch<const Matrix*>(L, n);
        for (size_t k = 0; k < n; k++) {
            lua_rawgeti(L, 1, lua_Integer(k + 1));
            Matrix* m = test_matrix(L, -1);
            if (!m)
                luaL_error(L, "cat: element %I of the table is %s, not a matrix", lua_Integer(k + 1),
                           luaL_typename(L, -1));
            parts[k] = m;
            lua_pop(L, 1);
        }
    } else {
        n = 2;
        parts = scratch<const Matrix*>(L, n);
        parts[0] = &check_matrix(L, 1);
        parts[1] = &check_matrix(L, 2);
    }
    push_matrix(L, guarded(L, "cat", [&] {
                    const Matrix& a = *parts[0];
                    int64_t total = 0;
                    for (size_t k = 0; k < n; k++) {
                        const Matrix& p = *parts[k];
                        check_live("cat", "a matrix", p);
                        if (&p.device() != &a.device())
                            fail("cat: matrix %zu is on %s but matrix 1 is on %s (m:to(dev) moves one)", k + 1,
                                 p.device().name().c_str(), a.device().name().c_str());
                        if (p.dtype() != a.dtype())
                            fail("cat: matrix %zu is %s but matrix 1 is %s", k + 1, dtype_name(p.dtype()),
                                 dtype_name(a.dtype()));
                        if (dim == 2 ? p.rows != a.rows : p.cols != a.cols)
                            fail("cat: matrix %zu is %s but matrix 1 is %s (along dim %d the %s must agree)", k + 1,
                                 p.shape_str().c_str(), a.shape_str().c_str(), dim, dim == 2 ? "rows" : "columns");
                        total += dim == 2 ? p.cols : p.rows;
                    }
                    Matrix out = dim == 2 ? empty(a.device(), a.rows, total, a.dtype())
                                          : empty(a.device(), total, a.cols, a.dtype());
                    int64_t at = 0;
                    for (size_t k = 0; k < n; k++) {
                        const Matrix& p = *parts[k];
                        if (!p.empty())
                            copy(p, dim == 2 ? out.view(0, at, p.rows, p.cols) : out.view(at, 0, p.rows, p.cols));
                        at += dim == 2 ? p.cols : p.rows;
                    }
                    return out;
                }));
    return 1;
}

void document() {
    doc("clone", "clone(x) -> matrix",
        "A new dense matrix with x's values, shape and dtype, on x's device (also x:clone(), x:copy()). The way "
        "out of the in-place methods: x:abs() rewrites x, clone(x):abs() leaves x alone. torch x:clone(). "
        "Example: local y = clone(from{1, -2}):abs()  -- the source keeps 1, −2");
    doc("Matrix:clone", "x:clone() -> matrix", "clone(x) as a method: a dense copy on the same device.");
    doc("item", "item(x) -> number",
        "The one element of a 1×1 matrix as a number (the host waits for it); any other shape is an error. "
        "torch x:item(). Example: item(from{{42}})  -- 42");
    doc("Matrix:item", "x:item() -> number", "item(x) as a method.");
    doc("reshape", "reshape(x, rows, cols) -> rows×cols",
        "x's elements in vela's storage order, column-major (as MATLAB, Julia, Fortran; NumPy's default reshape "
        "walks rows, so from NumPy read x.reshape(r, c, order='F')), as a rows×cols matrix. A VIEW sharing x's "
        "memory when x is one dense column-major run (any matrix vela made, a block of whole columns); a COPY "
        "only where x's layout demands it (a transposed view x:t(), a block of some rows, a row). One of rows, "
        "cols may be −1 (inferred). Also x:reshape(rows, cols); x:view(rows, cols) never copies. "
        "Example: reshape(from{1, 2, 3, 4, 5, 6}, 2, 3)  -- {{1, 3, 5}, {2, 4, 6}}");
    doc("Matrix:reshape", "x:reshape(rows, cols) -> rows×cols", "reshape(x, rows, cols) as a method.");
    doc("Matrix:view", "x:view(rows, cols) -> view  |  x:view(i, j, rows, cols) -> rows×cols view",
        "Two numbers: x's elements as a rows×cols view (column-major order, one size may be −1), only where x is "
        "one dense run (else an error naming x:reshape, which copies then). Four: the block whose first element is "
        "(i, j), 1-based, sharing x's memory (torch x:sub / narrow). Example: ones(6, 1):view(2, 3)");
    doc("transpose", "transpose(x) -> cols×rows",
        "A new dense matrix holding xᵀ (materialized: changing it leaves x alone). x:t() is the view without a "
        "copy, which every kernel reads as BLAS reads op(A). Also x:transpose() and Torch7's x:transpose(1, 2). "
        "Example: transpose(from{{1, 2, 3}})  -- 3×1");
    doc("Matrix:transpose", "x:transpose([1, 2]) -> cols×rows", "transpose(x) as a method: a dense copy of xᵀ.");
    doc("narrow", "narrow(x, dim, start, len) -> view",
        "Rows (dim 1) or columns (dim 2) start .. start+len−1 of x, 1-based, as a view sharing x's memory. "
        "torch x:narrow. Example: narrow(ones(4, 64), 2, 1, 32)  -- the first 32 columns (x:columns(1, 32))");
    doc("Matrix:narrow", "x:narrow(dim, start, len) -> view", "narrow(x, dim, start, len) as a method.");
    doc("Matrix:select", "x:select(dim, i) -> view",
        "Row i (dim 1: a 1×cols view) or column i (dim 2: a rows×1 view) of x, 1-based, sharing x's memory. "
        "Torch7 gives a 1-D tensor; vela keeps the row or column shape. A method only: the global select is "
        "Lua's. Example: eye(3):select(2, 1)  -- column 1, as x:col(1)");
    doc("Matrix:sub", "x:sub(r1, r2 [, c1, c2]) -> view",
        "Rows r1..r2 and columns c1..c2 (inclusive, 1-based; negative counts from the end, −1 the last; columns all "
        "when absent) as a view sharing x's memory, as Torch7's x:sub. The global sub(a, b [, c]) stays the "
        "elementwise kernel. Example: eye(4):sub(2, -1, 1, 3)  -- rows 2..4, columns 1..3");
    doc("cat", "cat(a, b [, dim]) | cat({a, b, ...} [, dim]) -> matrix",
        "A new matrix: the matrices side by side (dim 2, the default, as Torch7's cat for 2-D: the rows must "
        "agree) or stacked (dim 1: the columns must agree), on their device (one for all), same dtype. Column "
        "vectors stack end to end with dim 1. torch.cat. Example: cat(ones(2, 1), zeros(2, 3))  -- 2×4");
}

}  // namespace

void open_shape(lua_State* L) {
    static const luaL_Reg functions[] = {{"clone", l_clone},         {"item", l_item},     {"reshape", l_reshape},
                                         {"transpose", l_transpose}, {"narrow", l_narrow}, {"cat", l_cat},
                                         {nullptr, nullptr}};
    luaL_setfuncs(L, functions, 0);
    static const luaL_Reg methods[] = {
        {"clone", l_clone},   {"item", l_item},     {"reshape", l_reshape}, {"transpose", l_transpose},
        {"narrow", l_narrow}, {"select", l_select}, {"sub", m_sub},         {nullptr, nullptr}};
    luaL_getmetatable(L, kMatrixType);
    luaL_setfuncs(L, methods, 0);
    lua_pop(L, 1);
    document();
}

}  // namespace vela::lua

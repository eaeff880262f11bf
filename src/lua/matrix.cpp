// The "vela.Matrix" userdata: constructors (matrix, zeros, ones, rand,
// randn, from), methods, fields, operators, printing, and the list of live
// matrices behind who(). Indices typed in Lua are 1-based; they are checked
// here, with 1-based messages, and handed to the core 0-based.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <new>

#include "core/ops.hpp"
#include "core/registry.hpp"
#include "lua/check.hpp"
#include "lua/vela.hpp"

namespace vela::lua {

/* ---------------------------------------------------------------------- */
/* the live list and the userdata                                         */
/* ---------------------------------------------------------------------- */

// Oldest first; new matrices are appended, __gc unlinks.
static LMatrix* live_head = nullptr;
static LMatrix* live_tail = nullptr;
static uint64_t live_serial = 0;

LMatrix* live_matrices() {
    return live_head;
}

static void link(LMatrix* lm) {
    lm->serial = ++live_serial;
    lm->prev = live_tail;
    lm->next = nullptr;
    if (live_tail)
        live_tail->next = lm;
    else
        live_head = lm;
    live_tail = lm;
}

static void unlink(LMatrix* lm) {
    if (lm->prev)
        lm->prev->next = lm->next;
    else if (live_head == lm)
        live_head = lm->next;
    if (lm->next)
        lm->next->prev = lm->prev;
    else if (live_tail == lm)
        live_tail = lm->prev;
    lm->prev = lm->next = nullptr;
}

Matrix* test_matrix(lua_State* L, int arg) {
    auto* lm = static_cast<LMatrix*>(luaL_testudata(L, arg, kMatrixType));
    return lm ? &lm->m : nullptr;
}

Matrix& check_matrix(lua_State* L, int arg) {
    auto* lm = static_cast<LMatrix*>(luaL_testudata(L, arg, kMatrixType));
    if (!lm) luaL_typeerror(L, arg, "matrix");
    return lm->m;
}

void push_matrix(lua_State* L, Matrix m) {
    void* p = lua_newuserdatauv(L, sizeof(LMatrix), 0);
    auto* lm = new (p) LMatrix{std::move(m)};
    link(lm);
    luaL_setmetatable(L, kMatrixType);
}

/* ---------------------------------------------------------------------- */
/* argument checks                                                        */
/* ---------------------------------------------------------------------- */

static constexpr lua_Number kMaxDim = 2147483647.0;  // 2^31 − 1

int64_t check_size(lua_State* L, int arg, const char* fn, const char* what) {
    if (lua_isinteger(L, arg)) {
        lua_Integer n = lua_tointeger(L, arg);
        if (n >= 0 && n <= lua_Integer(kMaxDim)) return n;
    }
    lua_Number x = luaL_checknumber(L, arg);
    if (!(x >= 0) || x != std::floor(x))
        luaL_error(L, "%s: %s must be a non-negative integer, got %s", fn, what, luaL_tolstring(L, arg, nullptr));
    if (x > kMaxDim)
        luaL_error(L, "%s: %s must be at most 2147483647, got %s", fn, what, luaL_tolstring(L, arg, nullptr));
    return int64_t(x);
}

int64_t check_index(lua_State* L, int arg, const char* fn, const char* what, int64_t n) {
    lua_Integer k;
    if (lua_isinteger(L, arg)) {
        k = lua_tointeger(L, arg);
    } else {
        lua_Number x = luaL_checknumber(L, arg);
        if (x != std::floor(x) || !(std::fabs(x) < 9.0e15))
            luaL_error(L, "%s: %s must be an integer, got %s", fn, what, luaL_tolstring(L, arg, nullptr));
        k = lua_Integer(x);
    }
    if (k < 1 || k > n) {
        if (n == 0) luaL_error(L, "%s: %s %I is out of range (the extent is 0)", fn, what, k);
        luaL_error(L, "%s: %s %I is out of range 1..%I%s", fn, what, k, lua_Integer(n),
                   k == 0 ? " (indices are 1-based)" : "");
    }
    return k - 1;
}

uint64_t check_seed(lua_State* L, int arg, const char* fn) {
    lua_Number x = luaL_checknumber(L, arg);
    if (!(x >= 0) || x != std::floor(x) || x >= 18446744073709551616.0)
        luaL_error(L, "%s: seed must be a non-negative integer, got %s", fn, luaL_tolstring(L, arg, nullptr));
    return lua_isinteger(L, arg) ? uint64_t(lua_tointeger(L, arg)) : uint64_t(x);
}

// Trailing constructor options in any order: a dtype name ("float32",
// "uint8"), a device, or a device spec string; nil is skipped.
static void check_options(lua_State* L, int from, const char* fn, bool allow_dtype, DType* dtype, Device** dev) {
    int top = lua_gettop(L);
    for (int i = from; i <= top; i++) {
        int t = lua_type(L, i);
        if (t == LUA_TNIL) continue;
        if (t == LUA_TSTRING) {
            const char* s = lua_tostring(L, i);
            if (std::strcmp(s, "float32") == 0 || std::strcmp(s, "uint8") == 0) {
                if (!allow_dtype) luaL_error(L, "%s: dtype is always float32 here, got '%s'", fn, s);
                *dtype = s[0] == 'f' ? DType::f32 : DType::u8;
                continue;
            }
            // A mistyped dtype should not read as an unknown device.
            if (std::strncmp(s, "float", 5) == 0 || std::strncmp(s, "int", 3) == 0 || std::strncmp(s, "uint", 4) == 0 ||
                std::strcmp(s, "double") == 0)
                luaL_error(L, "%s: dtype must be \"float32\" or \"uint8\", got '%s'", fn, s);
        }
        if (t == LUA_TSTRING || t == LUA_TUSERDATA) {
            *dev = &check_device(L, i);
            continue;
        }
        luaL_typeerror(L, i, allow_dtype ? "dtype or device" : "device");
    }
    if (!*dev) *dev = &guarded(L, []() -> Device& { return current_device(); });
}

// Scratch host memory owned by Lua, so an error while filling it leaks nothing.
template <class T>
static T* scratch(lua_State* L, size_t count) {
    return static_cast<T*>(lua_newuserdatauv(L, count ? count * sizeof(T) : 1, 0));
}

// Reads a table's entry k (1-based) as a number; `where` names it in errors.
static lua_Number table_number(lua_State* L, int t, lua_Integer k, const char* fn, const char* where) {
    int type = lua_rawgeti(L, t, k);
    if (type != LUA_TNUMBER)
        luaL_error(L, "%s: %s is %s, expected a number", fn, where,
                   type == LUA_TNIL ? "missing" : lua_pushfstring(L, "a %s", luaL_typename(L, -1)));
    lua_Number x = lua_tonumber(L, -1);
    lua_pop(L, 1);
    return x;
}

static uint8_t to_u8(lua_State* L, lua_Number x, const char* fn, const char* where) {
    if (!(x >= 0 && x <= 255) || x != std::floor(x))
        luaL_error(L, "%s: %s is %f, which does not fit uint8 (an integer 0..255)", fn, where, x);
    return uint8_t(x);
}

// Uploads rows×cols column-major host values (float32 or uint8) as a new matrix.
static void push_from_host(lua_State* L, Device& dev, int64_t rows, int64_t cols, DType dtype, const void* host) {
    Matrix m = guarded(L, [&] {
        if (dtype == DType::u8) return from_host_u8(dev, rows, cols, static_cast<const uint8_t*>(host));
        return from_host(dev, rows, cols, static_cast<const float*>(host));
    });
    push_matrix(L, std::move(m));
}

/* ---------------------------------------------------------------------- */
/* constructors                                                           */
/* ---------------------------------------------------------------------- */

// matrix(rows, cols [, values] [, dtype] [, dev]): values a flat
// column-major table or a number to fill with; zeros when absent.
static int l_matrix(lua_State* L) {
    int64_t rows = check_size(L, 1, "matrix", "rows");
    int64_t cols = check_size(L, 2, "matrix", "cols");
    int vt = lua_type(L, 3);
    DType dtype = DType::f32;
    Device* dev = nullptr;
    check_options(L, vt == LUA_TTABLE || vt == LUA_TNUMBER ? 4 : 3, "matrix", true, &dtype, &dev);
    int64_t n = rows * cols;
    if (vt == LUA_TTABLE) {
        lua_Integer len = lua_Integer(lua_rawlen(L, 3));
        if (len != n)
            luaL_error(L, "matrix: values has %I entries but a %I×%I matrix needs %I (flat, column-major)", len,
                       lua_Integer(rows), lua_Integer(cols), lua_Integer(n));
        char where[48];
        if (dtype == DType::u8) {
            uint8_t* host = scratch<uint8_t>(L, size_t(n));
            for (int64_t k = 0; k < n; k++) {
                std::snprintf(where, sizeof where, "values[%lld]", (long long)k + 1);
                host[k] = to_u8(L, table_number(L, 3, k + 1, "matrix", where), "matrix", where);
            }
            push_from_host(L, *dev, rows, cols, dtype, host);
        } else {
            float* host = scratch<float>(L, size_t(n));
            for (int64_t k = 0; k < n; k++) {
                if (lua_rawgeti(L, 3, k + 1) == LUA_TNUMBER) {
                    host[k] = float(lua_tonumber(L, -1));
                    lua_pop(L, 1);
                    continue;
                }
                lua_pop(L, 1);
                std::snprintf(where, sizeof where, "values[%lld]", (long long)k + 1);
                table_number(L, 3, k + 1, "matrix", where);  // raises the error
            }
            push_from_host(L, *dev, rows, cols, dtype, host);
        }
        return 1;
    }
    if (vt == LUA_TNUMBER && dtype == DType::u8) {
        uint8_t v = to_u8(L, lua_tonumber(L, 3), "matrix", "the fill value");
        uint8_t* host = scratch<uint8_t>(L, size_t(n));
        std::memset(host, v, size_t(n));
        push_from_host(L, *dev, rows, cols, dtype, host);
        return 1;
    }
    if (vt == LUA_TNUMBER) {
        float v = float(lua_tonumber(L, 3));
        push_matrix(L, guarded(L, [&] {
                        Matrix m = empty(*dev, rows, cols);
                        fill(m, v);
                        return m;
                    }));
        return 1;
    }
    push_matrix(L, guarded(L, [&] { return zeros(*dev, rows, cols, dtype); }));
    return 1;
}

// zeros(rows, cols [, dtype] [, dev])
static int l_zeros(lua_State* L) {
    int64_t rows = check_size(L, 1, "zeros", "rows");
    int64_t cols = check_size(L, 2, "zeros", "cols");
    DType dtype = DType::f32;
    Device* dev = nullptr;
    check_options(L, 3, "zeros", true, &dtype, &dev);
    push_matrix(L, guarded(L, [&] { return zeros(*dev, rows, cols, dtype); }));
    return 1;
}

// ones(rows, cols [, dtype] [, dev])
static int l_ones(lua_State* L) {
    int64_t rows = check_size(L, 1, "ones", "rows");
    int64_t cols = check_size(L, 2, "ones", "cols");
    DType dtype = DType::f32;
    Device* dev = nullptr;
    check_options(L, 3, "ones", true, &dtype, &dev);
    if (dtype == DType::u8) {
        uint8_t* host = scratch<uint8_t>(L, size_t(rows * cols));
        std::memset(host, 1, size_t(rows * cols));
        push_from_host(L, *dev, rows, cols, dtype, host);
        return 1;
    }
    push_matrix(L, guarded(L, [&] {
                    Matrix m = empty(*dev, rows, cols);
                    fill(m, 1.0f);
                    return m;
                }));
    return 1;
}

// rand/randn in both forms: the constructor rand(rows, cols [, seed] [, dev])
// when the first argument is a number, the kernel rand(x [, seed]) filling
// x in place when it is a matrix.
template <Dist dist>
static int l_random(lua_State* L) {
    const char* fn = dist == Dist::uniform ? "rand" : "randn";
    if (Matrix* x = test_matrix(L, 1)) {
        check_nargs(L, 2);
        uint64_t seed = lua_isnoneornil(L, 2) ? 0 : check_seed(L, 2, fn);
        bool given = !lua_isnoneornil(L, 2);
        guarded(L, [&] { random(dist, given ? seed : next_seed(), *x); });
        lua_settop(L, 1);
        return 1;
    }
    if (lua_type(L, 1) != LUA_TNUMBER) luaL_typeerror(L, 1, "number (rows) or matrix");
    int64_t rows = check_size(L, 1, fn, "rows");
    int64_t cols = check_size(L, 2, fn, "cols");
    bool given = lua_type(L, 3) == LUA_TNUMBER;
    uint64_t seed = given ? check_seed(L, 3, fn) : 0;
    DType dtype = DType::f32;
    Device* dev = nullptr;
    check_options(L, given ? 4 : 3, fn, false, &dtype, &dev);
    push_matrix(L, guarded(L, [&] {
                    Matrix m = empty(*dev, rows, cols);
                    random(dist, given ? seed : next_seed(), m);
                    return m;
                }));
    return 1;
}

// from{{1, 2, 3}, {4, 5, 6}} (rows as on paper) or from{1, 2, 3} (a column)
// [, dtype] [, dev].
static int l_from(lua_State* L) {
    luaL_checktype(L, 1, LUA_TTABLE);
    DType dtype = DType::f32;
    Device* dev = nullptr;
    check_options(L, 2, "from", true, &dtype, &dev);
    lua_Integer n = lua_Integer(lua_rawlen(L, 1));
    lua_rawgeti(L, 1, 1);
    bool nested = lua_type(L, -1) == LUA_TTABLE;
    lua_pop(L, 1);
    int64_t rows = n, cols = n == 0 ? 0 : 1;
    if (nested) {
        lua_rawgeti(L, 1, 1);
        cols = int64_t(lua_rawlen(L, -1));
        lua_pop(L, 1);
        for (lua_Integer i = 1; i <= n; i++) {
            int t = lua_rawgeti(L, 1, i);
            if (t != LUA_TTABLE)
                luaL_error(L, "from: row %I is %s but row 1 is a table (give every row as a table of numbers)", i,
                           lua_pushfstring(L, "a %s", luaL_typename(L, -1)));
            lua_Integer len = lua_Integer(lua_rawlen(L, -1));
            if (len != cols)
                luaL_error(L, "from: row %I has %I value%s but row 1 has %I", i, len, len == 1 ? "" : "s",
                           lua_Integer(cols));
            lua_pop(L, 1);
        }
    }
    int64_t count = rows * cols;
    float* host = scratch<float>(L, size_t(count));
    uint8_t* host8 = dtype == DType::u8 ? scratch<uint8_t>(L, size_t(count)) : nullptr;
    char where[64];
    for (int64_t i = 0; i < rows; i++) {
        if (nested) lua_rawgeti(L, 1, i + 1);
        for (int64_t j = 0; j < cols; j++) {
            if (nested)
                std::snprintf(where, sizeof where, "row %lld, column %lld", (long long)i + 1, (long long)j + 1);
            else
                std::snprintf(where, sizeof where, "element %lld", (long long)i + 1);
            lua_Number x = table_number(L, nested ? lua_gettop(L) : 1, nested ? j + 1 : i + 1, "from", where);
            host[i + j * rows] = float(x);
            if (host8) host8[i + j * rows] = to_u8(L, x, "from", where);
        }
        if (nested) lua_pop(L, 1);
    }
    push_from_host(L, *dev, rows, cols, dtype, host8 ? static_cast<const void*>(host8) : host);
    return 1;
}

/* ---------------------------------------------------------------------- */
/* views and accessors                                                    */
/* ---------------------------------------------------------------------- */

static int m_t(lua_State* L) {
    check_method_nargs(L, 0);
    push_matrix(L, check_matrix(L, 1).t());
    return 1;
}

// m:view(i, j, rows, cols): the rows×cols block whose first element is (i, j).
static int m_view(lua_State* L) {
    check_method_nargs(L, 4);
    Matrix& m = check_matrix(L, 1);
    lua_Integer i = luaL_checkinteger(L, 2), j = luaL_checkinteger(L, 3);
    int64_t r = check_size(L, 4, "view", "rows"), c = check_size(L, 5, "view", "cols");
    if (i < 1 || j < 1 || i - 1 + r > m.rows || j - 1 + c > m.cols)
        luaL_error(L, "view: a %I×%I view at (%I, %I) does not fit in a %I×%I matrix (indices are 1-based)",
                   lua_Integer(r), lua_Integer(c), i, j, lua_Integer(m.rows), lua_Integer(m.cols));
    push_matrix(L, guarded(L, [&] { return view(m, i - 1, j - 1, r, c); }));
    return 1;
}

static int m_row(lua_State* L) {
    check_method_nargs(L, 1);
    Matrix& m = check_matrix(L, 1);
    int64_t i = check_index(L, 2, "row", "row", m.rows);
    push_matrix(L, guarded(L, [&] { return row(m, i); }));
    return 1;
}

static int m_col(lua_State* L) {
    check_method_nargs(L, 1);
    Matrix& m = check_matrix(L, 1);
    int64_t j = check_index(L, 2, "col", "column", m.cols);
    push_matrix(L, guarded(L, [&] { return col(m, j); }));
    return 1;
}

// m:columns(j, n): columns j .. j+n−1.
static int m_columns(lua_State* L) {
    check_method_nargs(L, 2);
    Matrix& m = check_matrix(L, 1);
    lua_Integer j = luaL_checkinteger(L, 2);
    int64_t n = check_size(L, 3, "columns", "n");
    if (j < 1 || j - 1 + n > m.cols)
        luaL_error(L, "columns: columns %I..%I are out of range 1..%I", j, j + n - 1, lua_Integer(m.cols));
    push_matrix(L, guarded(L, [&] { return columns(m, j - 1, n); }));
    return 1;
}

// The element addressed by m:get(i, j) / m:set(i, j, v), or by a single index
// k on a vector; returns the first argument after the indices.
static int element_index(lua_State* L, const Matrix& m, const char* fn, int nindices, int64_t* i, int64_t* j) {
    if (nindices == 1) {
        if (!m.is_vector())
            luaL_error(L, "%s: one index needs a vector, this matrix is %I×%I (use m:%s(i, j%s))", fn,
                       lua_Integer(m.rows), lua_Integer(m.cols), fn, fn[0] == 's' ? ", v" : "");
        int64_t k = check_index(L, 2, fn, "index", m.size());
        *i = m.cols == 1 ? k : 0;
        *j = m.cols == 1 ? 0 : k;
        return 3;
    }
    *i = check_index(L, 2, fn, "row", m.rows);
    *j = check_index(L, 3, fn, "column", m.cols);
    return 4;
}

static int m_get(lua_State* L) {
    check_method_nargs(L, 2);
    Matrix& m = check_matrix(L, 1);
    int64_t i, j;
    element_index(L, m, "get", lua_gettop(L) == 2 ? 1 : 2, &i, &j);
    lua_pushnumber(L, guarded(L, [&] { return get(m, i, j); }));
    return 1;
}

static int m_set(lua_State* L) {
    check_method_nargs(L, 3);
    Matrix& m = check_matrix(L, 1);
    int64_t i, j;
    int varg = element_index(L, m, "set", lua_gettop(L) == 3 ? 1 : 2, &i, &j);
    float v = check_float(L, varg);
    guarded(L, [&] { set(m, i, j, v); });
    lua_settop(L, 1);
    return 1;
}

static int m_shape(lua_State* L) {
    check_method_nargs(L, 0);
    Matrix& m = check_matrix(L, 1);
    lua_pushinteger(L, m.rows);
    lua_pushinteger(L, m.cols);
    return 2;
}

// Only a userdata resurrected after its __gc (a finalizer keeping it) lacks a buffer.
static Matrix& check_storage(lua_State* L, int arg, const char* fn) {
    Matrix& m = check_matrix(L, arg);
    if (!m.buf) luaL_error(L, "%s: the matrix was garbage-collected", fn);
    return m;
}

static int m_dtype(lua_State* L) {
    check_method_nargs(L, 0);
    lua_pushstring(L, dtype_name(check_storage(L, 1, "dtype").dtype()));
    return 1;
}

static int m_device(lua_State* L) {
    check_method_nargs(L, 0);
    push_device(L, check_storage(L, 1, "device").device());
    return 1;
}

// Downloads the view's logical elements, dense column-major, into Lua-owned memory.
static float* download(lua_State* L, const Matrix& m) {
    float* host = scratch<float>(L, size_t(m.size()));
    guarded(L, [&] {
        std::vector<float> v = to_host(m);
        if (!v.empty()) std::memcpy(host, v.data(), v.size() * sizeof(float));
    });
    return host;
}

// m:totable(): rows as on paper, {{m11, m12, ...}, ...}.
static int m_totable(lua_State* L) {
    check_method_nargs(L, 0);
    Matrix& m = check_matrix(L, 1);
    const float* host = download(L, m);
    lua_createtable(L, int(m.rows), 0);
    for (int64_t i = 0; i < m.rows; i++) {
        lua_createtable(L, int(m.cols), 0);
        for (int64_t j = 0; j < m.cols; j++) {
            lua_pushnumber(L, host[i + j * m.rows]);
            lua_rawseti(L, -2, j + 1);
        }
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

static int m_copy(lua_State* L) {
    check_method_nargs(L, 0);
    Matrix& m = check_matrix(L, 1);
    push_matrix(L, guarded(L, [&] { return clone(m); }));
    return 1;
}

static int m_raw(lua_State* L) {
    check_method_nargs(L, 0);
    Matrix& m = check_matrix(L, 1);
    push_matrix(L, guarded(L, [&] {
                    check_live("raw", "m", m);
                    return empty(m.device(), m.rows, m.cols, m.dtype());
                }));
    return 1;
}

static int m_to(lua_State* L) {
    check_method_nargs(L, 1);
    Matrix& m = check_matrix(L, 1);
    Device& dev = check_device(L, 2);
    push_matrix(L, guarded(L, [&] { return to_device(m, dev); }));
    return 1;
}

// m:release() and <close>: free the buffer now (every view of it sees it released).
static int m_release(lua_State* L) {
    Matrix& m = check_matrix(L, 1);
    guarded(L, [&] {
        if (m.buf) m.buf->release();
    });
    return 0;
}

static int m_gc(lua_State* L) {
    auto* lm = static_cast<LMatrix*>(luaL_testudata(L, 1, kMatrixType));
    if (lm) {
        unlink(lm);        // a no-op when already unlinked
        lm->m = Matrix{};  // drops the buffer reference; a resurrected userdata reads as empty
    }
    return 0;
}

static int m_len(lua_State* L) {
    lua_pushinteger(L, check_matrix(L, 1).size());
    return 1;
}

/* ---------------------------------------------------------------------- */
/* operators: allocate their result, unlike the kernels                   */
/* ---------------------------------------------------------------------- */

static const char* kind(lua_State* L, int arg) {
    return test_matrix(L, arg) ? "matrix" : luaL_typename(L, arg);
}

static Matrix& operand(lua_State* L, int arg, const char* op) {
    Matrix* m = test_matrix(L, arg);
    if (!m) luaL_error(L, "matrix %s: both operands must be matrices, got %s and %s", op, kind(L, 1), kind(L, 2));
    return *m;
}

static int m_add(lua_State* L) {
    Matrix& a = operand(L, 1, "+");
    Matrix& b = operand(L, 2, "+");
    push_matrix(L, guarded(L, [&] {
                    check_live("add", "a", a);
                    Matrix c = empty(a.device(), a.rows, a.cols);
                    binary(Binary::add, a, b, c);
                    return c;
                }));
    return 1;
}

static int m_sub(lua_State* L) {
    Matrix& a = operand(L, 1, "-");
    Matrix& b = operand(L, 2, "-");
    push_matrix(L, guarded(L, [&] {
                    check_live("sub", "a", a);
                    Matrix c = empty(a.device(), a.rows, a.cols);
                    binary(Binary::sub, a, b, c);
                    return c;
                }));
    return 1;
}

static Matrix scaled(const Matrix& a, float s) {
    Matrix c = clone(a);
    scal(s, c);
    return c;
}

static int m_unm(lua_State* L) {
    Matrix& a = check_matrix(L, 1);
    push_matrix(L, guarded(L, [&] { return scaled(a, -1.0f); }));
    return 1;
}

// s * a, a * s, a * b (the matrix product).
static int m_mul(lua_State* L) {
    Matrix* a = test_matrix(L, 1);
    Matrix* b = test_matrix(L, 2);
    if (a && b) {
        push_matrix(L, guarded(L, [&] {
                        check_live("mm", "a", *a);
                        check_live("mm", "b", *b);
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
    push_matrix(L, guarded(L, [&] { return scaled(m, s); }));
    return 1;
}

/* ---------------------------------------------------------------------- */
/* printing                                                               */
/* ---------------------------------------------------------------------- */

// Up to kShown rows (columns) print in full; beyond, the first and last kEdge
// with ⋮ (⋯) between them.
static constexpr int64_t kShown = 6, kEdge = 3;

struct Span {  // the shown indices of one dimension: [0, a) then [b, n)
    int64_t a, b, n;
    bool elided() const { return b > a; }
    int64_t count() const { return a + (n - b); }
    int64_t at(int64_t k) const { return k < a ? k : b + (k - a); }
};

static Span span(int64_t n) {
    return n <= kShown ? Span{n, n, n} : Span{kEdge, n - kEdge, n};
}

static void add_padded(luaL_Buffer* b, const char* s, size_t width, size_t len) {
    for (size_t k = len; k < width; k++) luaL_addchar(b, ' ');
    luaL_addlstring(b, s, std::strlen(s));
}

// Pushes the device's id; a std::string never outlives this frame, so an
// error raised later in the caller skips no destructor.
static void push_device_name(lua_State* L, const Device& dev) {
    std::string s = dev.name();
    lua_pushlstring(L, s.data(), s.size());
}

static int m_tostring(lua_State* L) {
    Matrix& m = check_matrix(L, 1);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    if (!m.buf) {
        luaL_addstring(&b, "matrix (collected)");
        luaL_pushresult(&b);
        return 1;
    }
    lua_pushfstring(L, "matrix %I×%I %s on ", lua_Integer(m.rows), lua_Integer(m.cols), dtype_name(m.dtype()));
    luaL_addvalue(&b);
    push_device_name(L, m.device());
    luaL_addvalue(&b);
    if (m.buf->released()) {
        luaL_addstring(&b, " (released)");
        luaL_pushresult(&b);
        return 1;
    }
    if (m.empty()) {
        luaL_pushresult(&b);
        return 1;
    }
    // Download only the shown corners: at most four blocks of kEdge×kEdge or kShown×kShown.
    Span rs = span(m.rows), cs = span(m.cols);
    float grid[kShown][kShown];
    int64_t rblock[2][2] = {{0, rs.a}, {rs.b, m.rows - rs.b}};
    int64_t cblock[2][2] = {{0, cs.a}, {cs.b, m.cols - cs.b}};
    guarded(L, [&] {
        for (int bi = 0; bi < (rs.elided() ? 2 : 1); bi++)
            for (int bj = 0; bj < (cs.elided() ? 2 : 1); bj++) {
                int64_t r0 = rblock[bi][0], nr = rblock[bi][1], c0 = cblock[bj][0], nc = cblock[bj][1];
                std::vector<float> v = to_host(view(m, r0, c0, nr, nc));
                for (int64_t j = 0; j < nc; j++)
                    for (int64_t i = 0; i < nr; i++) grid[bi * rs.a + i][bj * cs.a + j] = v[size_t(i + j * nr)];
            }
    });
    char cell[kShown][kShown][24];
    size_t width = 1;
    for (int64_t i = 0; i < rs.count(); i++)
        for (int64_t j = 0; j < cs.count(); j++) {
            int len = std::snprintf(cell[i][j], sizeof cell[i][j], "%g", double(grid[i][j]));
            if (size_t(len) > width) width = size_t(len);
        }
    auto add_row = [&](int64_t i) {
        luaL_addchar(&b, '\n');
        for (int64_t j = 0; j < cs.count(); j++) {
            if (cs.elided() && j == cs.a) luaL_addstring(&b, "  ⋯");
            luaL_addstring(&b, "  ");
            if (i < 0)
                add_padded(&b, "⋮", width, 1);
            else
                add_padded(&b, cell[i][j], width, std::strlen(cell[i][j]));
        }
    };
    for (int64_t i = 0; i < rs.count(); i++) {
        if (rs.elided() && i == rs.a) {
            luaL_addchar(&b, '\n');
            for (int64_t j = 0; j < cs.count(); j++) {
                if (cs.elided() && j == cs.a) luaL_addstring(&b, "  ⋱");
                luaL_addstring(&b, "  ");
                add_padded(&b, "⋮", width, 1);
            }
        }
        add_row(i);
    }
    luaL_pushresult(&b);
    return 1;
}

/* ---------------------------------------------------------------------- */
/* fields and registration                                                */
/* ---------------------------------------------------------------------- */

// __index: the fields rows and cols, then the methods (in the metatable, upvalue 1).
static int m_index(lua_State* L) {
    Matrix& m = check_matrix(L, 1);
    size_t len;
    const char* k = lua_tolstring(L, 2, &len);
    if (k && len == 4 && std::memcmp(k, "rows", 4) == 0) {
        lua_pushinteger(L, m.rows);
        return 1;
    }
    if (k && len == 4 && std::memcmp(k, "cols", 4) == 0) {
        lua_pushinteger(L, m.cols);
        return 1;
    }
    if (k && len >= 2 && k[0] == '_' && k[1] == '_') return 0;  // metamethods are not fields
    lua_pushvalue(L, 2);
    lua_rawget(L, lua_upvalueindex(1));
    return 1;
}

static int m_newindex(lua_State* L) {
    return luaL_error(L, "matrix: cannot assign field '%s' (use m:set(i, j, v) for elements)",
                      luaL_tolstring(L, 2, nullptr));
}

// clang-format off
static const luaL_Reg methods[] = {
    {"t", m_t},
    {"view", m_view},
    {"row", m_row},
    {"col", m_col},
    {"columns", m_columns},
    {"get", m_get},
    {"set", m_set},
    {"shape", m_shape},
    {"dtype", m_dtype},
    {"device", m_device},
    {"totable", m_totable},
    {"copy", m_copy},
    {"raw", m_raw},
    {"to", m_to},
    {"release", m_release},
    {nullptr, nullptr}};
// clang-format on

// clang-format off
static const luaL_Reg metamethods[] = {
    {"__gc", m_gc},
    {"__close", m_release},
    {"__len", m_len},
    {"__tostring", m_tostring},
    {"__add", m_add},
    {"__sub", m_sub},
    {"__mul", m_mul},
    {"__unm", m_unm},
    {"__newindex", m_newindex},
    {nullptr, nullptr}};
// clang-format on

// clang-format off
static const luaL_Reg constructors[] = {
    {"matrix", l_matrix},
    {"zeros", l_zeros},
    {"ones", l_ones},
    {"from", l_from},
    {"rand", l_random<Dist::uniform>},
    {"randn", l_random<Dist::normal>},
    {nullptr, nullptr}};
// clang-format on

static void document() {
    doc("matrix", "matrix(rows, cols [, values] [, dtype] [, dev]) -> rows×cols",
        "A new matrix on the current device (or dev). values: a flat table in column-major order (as BLAS stores "
        "it), or a number to fill with; zeros when absent. dtype \"float32\" (default) or \"uint8\". torch.Tensor(m, "
        "n).");
    doc("zeros", "zeros(rows, cols [, dtype] [, dev]) -> rows×cols", "A new matrix of zeros. torch.zeros.");
    doc("ones", "ones(rows, cols [, dtype] [, dev]) -> rows×cols", "A new matrix of ones. torch.ones.");
    doc("rand", "rand(rows, cols [, seed] [, dev]) -> rows×cols  |  rand(x [, seed]) -> x",
        "Uniform [0, 1) numbers from counter-based Philox: element k depends only on (seed, k), so every device "
        "gives the same bits. With a matrix, fills it in place. Without a seed, the next seed of the sequence set "
        "by seed(n). torch.rand / x:uniform().");
    doc("randn", "randn(rows, cols [, seed] [, dev]) -> rows×cols  |  randn(x [, seed]) -> x",
        "Standard normal numbers (Philox, the same on every device for the same seed). With a matrix, fills it "
        "in place. torch.randn / x:normal().");
    doc("from", "from(rows_table [, dtype] [, dev]) -> matrix",
        "A matrix from a table of rows as written on paper: from{{1, 2, 3}, {4, 5, 6}} is 2×3; from{1, 2, 3} is "
        "a 3×1 column. Every row must have the same length. torch.Tensor(table).");
    doc("Matrix:t", "m:t() -> cols×rows view",
        "The transpose as a view (no copy): kernels read it through the "
        "view's flag, as BLAS reads op(A). torch x:t().");
    doc("Matrix:view", "m:view(i, j, rows, cols) -> rows×cols view",
        "The block whose first element is (i, j), 1-based, sharing m's memory. torch x:sub / narrow.");
    doc("Matrix:row", "m:row(i) -> 1×cols view", "Row i (1-based) as a view. torch x:select(1, i).");
    doc("Matrix:col", "m:col(j) -> rows×1 view", "Column j (1-based) as a view: one sample of a batch.");
    doc("Matrix:columns", "m:columns(j, n) -> rows×n view",
        "Columns j .. j+n−1 as a view: a mini-batch of "
        "samples. torch x:narrow(2, j, n).");
    doc("Matrix:get", "m:get(i, j) -> number  |  v:get(k)",
        "Element (i, j), 1-based; a vector also takes one "
        "index. Reads from the device (waits for queued work).");
    doc("Matrix:set", "m:set(i, j, v) -> m  |  x:set(k, v)", "Sets element (i, j), 1-based.");
    doc("Matrix:shape", "m:shape() -> rows, cols", "The logical shape (after any transpose). Also m.rows, m.cols.");
    doc("Matrix:dtype", "m:dtype() -> \"float32\" | \"uint8\"", "The element type.");
    doc("Matrix:device", "m:device() -> device", "The device holding m's buffer.");
    doc("Matrix:totable", "m:totable() -> {{...}, ...}", "The values as a table of rows, as on paper (downloads).");
    doc("Matrix:copy", "m:copy() -> rows×cols", "A dense copy on the same device. torch x:clone().");
    doc("Matrix:raw", "m:raw() -> rows×cols",
        "A new matrix of m's shape, dtype and device; contents undefined. "
        "Neanderthal raw.");
    doc("Matrix:to", "m:to(dev) -> rows×cols on dev",
        "A dense copy on another device (a device or a spec such as "
        "\"cpu\", \"vulkan:0\"). torch x:to(dev).");
    doc("Matrix:release", "m:release()",
        "Frees the device memory now (also for every view of it); later use is an "
        "error. `local m <close> = ...` releases at the end of the scope.");
}

void open_matrix(lua_State* L) {
    // The methods sit in the metatable itself, where help() and the shell's
    // completion look when __index is a function (it must be, for m.rows).
    luaL_newmetatable(L, kMatrixType);
    luaL_setfuncs(L, metamethods, 0);
    luaL_setfuncs(L, methods, 0);
    lua_pushvalue(L, -1);
    lua_pushcclosure(L, m_index, 1);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
    luaL_setfuncs(L, constructors, 0);
    document();
}

}  // namespace vela::lua

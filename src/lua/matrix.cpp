// The "vela.Matrix" userdata: the list of live matrices behind who(), the
// methods (views, accessors, copies), fields, and the metatable. The
// operators are in matrix_operators.cpp, the constructors in constructors.cpp,
// printing in matrix_print.cpp, the argument checks in check.cpp. Indices typed in Lua
// are 1-based; they are checked here, with 1-based messages, and handed to
// the core 0-based.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <new>

#include "core/ops.hpp"
#include "core/registry.hpp"
#include "lua/check.hpp"
#include "lua/vela.hpp"

namespace vela::lua {

void set_matrix_operators(lua_State* L);  // matrix_operators.cpp: + - * and unary - into the metatable on top

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
/* views and accessors                                                    */
/* ---------------------------------------------------------------------- */

static int m_t(lua_State* L) {
    check_method_nargs(L, 0);
    push_matrix(L, check_matrix(L, 1).t());
    return 1;
}

// m:view(i, j, rows, cols): the rows×cols block whose first element is (i, j);
// m:view(rows, cols) is the reshaped view of shape.cpp.
// The bounds are compared without arithmetic that could overflow on the
// user's numbers (math.maxinteger is an integer like any other), and the
// message shows the arguments as given.
int view_reshaped(lua_State* L);  // shape.cpp: x:view(rows, cols)

static int m_view(lua_State* L) {
    check_method_nargs(L, 4);
    if (lua_gettop(L) == 3) return view_reshaped(L);
    Matrix& m = check_matrix(L, 1);
    lua_Integer i = luaL_checkinteger(L, 2), j = luaL_checkinteger(L, 3);
    int64_t r = check_size(L, 4, "m:view", "rows"), c = check_size(L, 5, "m:view", "cols");
    bool fits = i >= 1 && j >= 1 && i - 1 <= m.rows && j - 1 <= m.cols && r <= m.rows - (i - 1) &&
                c <= m.cols - (j - 1);
    if (!fits)
        luaL_error(L, "m:view: a %I×%I view at (%I, %I) does not fit in a %I×%I matrix (indices are 1-based)",
                   lua_Integer(r), lua_Integer(c), i, j, lua_Integer(m.rows), lua_Integer(m.cols));
    push_matrix(L, guarded(L, "m:view", [&] { return view(m, i - 1, j - 1, r, c); }));
    return 1;
}

// m:row(i), m:col(j): one row or column as a view.
template <bool is_row>
static int m_line(lua_State* L) {
    const char* fn = is_row ? "m:row" : "m:col";
    check_method_nargs(L, 1);
    Matrix& m = check_matrix(L, 1);
    int64_t k = check_index(L, 2, fn, is_row ? "row" : "column", is_row ? m.rows : m.cols);
    push_matrix(L, guarded(L, fn, [&] { return is_row ? row(m, k) : col(m, k); }));
    return 1;
}

// m:columns(j, n): columns j .. j+n−1.
static int m_columns(lua_State* L) {
    check_method_nargs(L, 2);
    Matrix& m = check_matrix(L, 1);
    lua_Integer j = luaL_checkinteger(L, 2);
    int64_t n = check_size(L, 3, "m:columns", "n");
    if (j < 1 || j - 1 > m.cols || n > m.cols - (j - 1)) {
        lua_Integer last;
        if (__builtin_add_overflow(j, lua_Integer(n) - 1, &last))
            luaL_error(L, "m:columns: %I columns from column %I are out of range 1..%I", lua_Integer(n), j,
                       lua_Integer(m.cols));
        luaL_error(L, "m:columns: columns %I..%I are out of range 1..%I", j, last, lua_Integer(m.cols));
    }
    push_matrix(L, guarded(L, "m:columns", [&] { return columns(m, j - 1, n); }));
    return 1;
}

// The element addressed by m:get(i, j) / m:set(i, j, v), or by a single index
// k on a vector; returns the first argument after the indices.
static int element_index(lua_State* L, const Matrix& m, const char* fn, int nindices, int64_t* i, int64_t* j) {
    if (nindices == 1) {
        if (!m.is_vector())
            luaL_error(L, "%s: one index needs a vector, this matrix is %I×%I (use %s(i, j%s))", fn,
                       lua_Integer(m.rows), lua_Integer(m.cols), fn, fn[2] == 's' ? ", v" : "");
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
    element_index(L, m, "m:get", lua_gettop(L) == 2 ? 1 : 2, &i, &j);
    lua_pushnumber(L, guarded(L, "m:get", [&] { return get(m, i, j); }));
    return 1;
}

static int m_set(lua_State* L) {
    check_method_nargs(L, 3);
    Matrix& m = check_matrix(L, 1);
    int64_t i, j;
    int varg = element_index(L, m, "m:set", lua_gettop(L) == 3 ? 1 : 2, &i, &j);
    float v = check_float(L, varg);
    guarded(L, "m:set", [&] { set(m, i, j, v); });
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
    lua_pushstring(L, dtype_name(check_storage(L, 1, "m:dtype").dtype()));
    return 1;
}

static int m_device(lua_State* L) {
    check_method_nargs(L, 0);
    push_device(L, check_storage(L, 1, "m:device").device());
    return 1;
}

// Downloads the view's logical elements, dense column-major, into Lua-owned memory.
static float* download(lua_State* L, const Matrix& m, const char* fn) {
    guarded(L, fn, [&] { check_live(fn, "m", m); });
    float* host = scratch<float>(L, size_t(m.size()));
    guarded(L, fn, [&] {
        std::vector<float> v = to_host(m);
        if (!v.empty()) std::memcpy(host, v.data(), v.size() * sizeof(float));
    });
    return host;
}

// m:totable(): rows as on paper, {{m11, m12, ...}, ...}.
static int m_totable(lua_State* L) {
    check_method_nargs(L, 0);
    Matrix& m = check_matrix(L, 1);
    const float* host = download(L, m, "m:totable");
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
    push_matrix(L, guarded(L, "m:copy", [&] {
                    check_live("m:copy", "m", m);
                    return clone(m);
                }));
    return 1;
}

static int m_raw(lua_State* L) {
    check_method_nargs(L, 0);
    Matrix& m = check_matrix(L, 1);
    push_matrix(L, guarded(L, "m:raw", [&] {
                    check_live("m:raw", "m", m);
                    return empty(m.device(), m.rows, m.cols, m.dtype());
                }));
    return 1;
}

static int m_to(lua_State* L) {
    check_method_nargs(L, 1);
    Matrix& m = check_matrix(L, 1);
    // A dtype is not a device: say so rather than "device: unknown 'uint8'".
    if (lua_type(L, 2) == LUA_TSTRING) {
        const char* s = lua_tostring(L, 2);
        if (std::strcmp(s, "uint8") == 0 || std::strcmp(s, "float32") == 0 || std::strncmp(s, "float", 5) == 0 ||
            std::strncmp(s, "int", 3) == 0 || std::strncmp(s, "uint", 4) == 0 || std::strcmp(s, "double") == 0)
            luaL_error(L, "m:to: '%s' is a dtype, not a device; m:to(dev) moves a matrix to a device and keeps its "
                       "dtype (copy(x, y) converts uint8 to float32)", s);
    }
    Device& dev = check_device(L, 2, "m:to");
    push_matrix(L, guarded(L, "m:to", [&] {
                    check_live("m:to", "m", m);
                    return to_device(m, dev);
                }));
    return 1;
}

// m:release() and <close>: free the buffer now (every view of it sees it released).
static int m_release(lua_State* L) {
    Matrix& m = check_matrix(L, 1);
    check_method_nargs(L, 0);
    guarded(L, [&] {
        if (m.buf) m.buf->release();
    });
    return 0;
}

// <close>: Lua passes the value and the error object.
static int m_close(lua_State* L) {
    Matrix& m = check_matrix(L, 1);
    if (m.buf) m.buf->release();
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
    if (k && len == 8 && std::memcmp(k, "released", 8) == 0) {
        lua_pushboolean(L, !m.buf || m.buf->released());
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
    {"row", m_line<true>},
    {"col", m_line<false>},
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
    {"__close", m_close},
    {"__len", m_len},
    {"__tostring", matrix_tostring},
    {"__newindex", m_newindex},
    {nullptr, nullptr}};
// clang-format on

static void document() {
    doc("Matrix:t", "m:t() -> cols×rows view",
        "The transpose as a view (no copy): kernels read it through the "
        "view's flag, as BLAS reads op(A). torch x:t().");
    // Matrix:view's entry is in shape.cpp, with its reshaping form.
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
        "error, and m.released is true. `local m <close> = ...` releases at the end of the scope.");
}

void open_matrix(lua_State* L) {
    // The methods sit in the metatable itself, where help() and the shell's
    // completion look when __index is a function (it must be, for m.rows).
    luaL_newmetatable(L, kMatrixType);
    luaL_setfuncs(L, metamethods, 0);
    set_matrix_operators(L);
    luaL_setfuncs(L, methods, 0);
    lua_pushvalue(L, -1);
    lua_pushcclosure(L, m_index, 1);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
    document();
}

}  // namespace vela::lua

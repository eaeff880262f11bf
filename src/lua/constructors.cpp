// The constructors of the "vela.Matrix" userdata: matrix, zeros, ones, rand,
// randn and from, with the checks of their trailing options (dtype, device)
// and of the host values they upload.
#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/ops.hpp"
#include "core/registry.hpp"
#include "lua/check.hpp"
#include "lua/vela.hpp"

namespace vela::lua {

// Trailing constructor options in any order: a dtype name ("float32",
// "uint8"), a device, or a device spec string; nil is skipped. Each at most
// once: zeros(2, 2, "uint8", "float32") is an error, not "the last one wins".
static void check_options(lua_State* L, int from, const char* fn, bool allow_dtype, DType* dtype, Device** dev) {
    int top = lua_gettop(L);
    int dtype_at = 0, device_at = 0;
    for (int i = from; i <= top; i++) {
        int t = lua_type(L, i);
        if (t == LUA_TNIL) continue;
        if (t == LUA_TSTRING) {
            const char* s = lua_tostring(L, i);
            if (std::strcmp(s, "float32") == 0 || std::strcmp(s, "uint8") == 0) {
                if (!allow_dtype) luaL_error(L, "%s: dtype is always float32 here, got '%s'", fn, s);
                if (dtype_at)
                    luaL_error(L, "%s: two dtypes given, '%s' (argument %d) and '%s' (argument %d); give one", fn,
                               lua_tostring(L, dtype_at), dtype_at, s, i);
                dtype_at = i;
                *dtype = s[0] == 'f' ? DType::f32 : DType::u8;
                continue;
            }
            // A mistyped dtype should not read as an unknown device.
            if (std::strncmp(s, "float", 5) == 0 || std::strncmp(s, "int", 3) == 0 || std::strncmp(s, "uint", 4) == 0 ||
                std::strcmp(s, "double") == 0)
                luaL_error(L, "%s: dtype must be \"float32\" or \"uint8\", got '%s'", fn, s);
        }
        if (t == LUA_TSTRING || t == LUA_TUSERDATA) {
            Device* d = &check_device(L, i, fn);
            if (device_at)
                luaL_error(L, "%s: two devices given, %s (argument %d) and %s (argument %d); give one", fn,
                           (*dev)->name().c_str(), device_at, d->name().c_str(), i);
            device_at = i;
            *dev = d;
            continue;
        }
        luaL_typeerror(L, i, allow_dtype ? "dtype or device" : "device");
    }
    if (!*dev) *dev = &guarded(L, fn, []() -> Device& { return current_device(); });
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
static void push_from_host(lua_State* L, const char* fn, Device& dev, int64_t rows, int64_t cols, DType dtype,
                           const void* host) {
    Matrix m = guarded(L, fn, [&] {
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
            push_from_host(L, "matrix", *dev, rows, cols, dtype, host);
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
            push_from_host(L, "matrix", *dev, rows, cols, dtype, host);
        }
        return 1;
    }
    if (vt == LUA_TNUMBER && dtype == DType::u8) {
        uint8_t v = to_u8(L, lua_tonumber(L, 3), "matrix", "the fill value");
        push_matrix(L, guarded(L, "matrix", [&] { return filled_u8(*dev, rows, cols, v); }));
        return 1;
    }
    if (vt == LUA_TNUMBER) {
        float v = float(lua_tonumber(L, 3));
        push_matrix(L, guarded(L, "matrix", [&] {
                        Matrix m = empty(*dev, rows, cols);
                        fill(m, v);
                        return m;
                    }));
        return 1;
    }
    push_matrix(L, guarded(L, "matrix", [&] { return zeros(*dev, rows, cols, dtype); }));
    return 1;
}

// zeros(rows, cols [, dtype] [, dev]) and ones(rows, cols [, dtype] [, dev]).
template <int value>
static int l_filled(lua_State* L) {
    const char* fn = value == 0 ? "zeros" : "ones";
    int64_t rows = check_size(L, 1, fn, "rows");
    int64_t cols = check_size(L, 2, fn, "cols");
    DType dtype = DType::f32;
    Device* dev = nullptr;
    check_options(L, 3, fn, true, &dtype, &dev);
    if (value == 0) {
        push_matrix(L, guarded(L, fn, [&] { return zeros(*dev, rows, cols, dtype); }));
        return 1;
    }
    if (dtype == DType::u8) {
        push_matrix(L, guarded(L, fn, [&] { return filled_u8(*dev, rows, cols, 1); }));
        return 1;
    }
    push_matrix(L, guarded(L, fn, [&] {
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
        guarded(L, fn, [&] { random(dist, given ? seed : next_seed(), *x); });
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
    push_matrix(L, guarded(L, fn, [&] {
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
    push_from_host(L, "from", *dev, rows, cols, dtype, host8 ? static_cast<const void*>(host8) : host);
    return 1;
}

// clang-format off
static const luaL_Reg constructors[] = {
    {"matrix", l_matrix},
    {"zeros", l_filled<0>},
    {"ones", l_filled<1>},
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
}

void open_constructors(lua_State* L) {
    luaL_setfuncs(L, constructors, 0);
    document();
}

}  // namespace vela::lua

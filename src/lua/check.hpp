// What the binding files (matrix.cpp, constructors.cpp, kernels.cpp,
// devices.cpp, ...) share: the userdata layouts, the argument checks (in
// check.cpp) that turn a bad Lua value into a clear error before anything reaches the core, and the list of live
// matrices that who() reads. Everything on a kernel's success path here is
// allocation-free: a kernel call is a few pointer checks and one core call.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <lua.hpp>

#include "core/device.hpp"
#include "core/matrix.hpp"

namespace vela::lua {

inline constexpr const char* kMatrixType = "vela.Matrix";
inline constexpr const char* kDeviceType = "vela.Device";

// The payload of a "vela.Matrix" userdata: the view, and its links in the
// list of live matrices (who() walks it; __gc unlinks).
struct LMatrix {
    Matrix m;
    LMatrix* prev = nullptr;
    LMatrix* next = nullptr;
    uint64_t serial = 0;  // creation order, for who()
};

// The first (oldest) live matrix; follow ->next.
LMatrix* live_matrices();

// Arguments beyond `n` are an error ("bad argument #4 to 'axpy' (at most 3
// arguments expected, got 4)"), so a misplaced extra argument is never ignored.
inline void check_nargs(lua_State* L, int n) {
    int top = lua_gettop(L);
    if (top > n) {
        const char* msg = lua_pushfstring(L, "at most %d argument%s expected, got %d", n, n == 1 ? "" : "s", top);
        luaL_argerror(L, n + 1, msg);
    }
}

// The same for a method: n arguments besides self, counted as the user wrote them
// ("bad argument #1 to 't' (at most 0 arguments expected, got 1)").
inline void check_method_nargs(lua_State* L, int n) {
    int top = lua_gettop(L);
    if (top > n + 1) {
        const char* msg = lua_pushfstring(L, "at most %d argument%s expected, got %d", n, n == 1 ? "" : "s", top - 1);
        luaL_argerror(L, n + 2, msg);
    }
}

// A float argument (α, β, a fill value).
inline float check_float(lua_State* L, int arg) {
    return static_cast<float>(luaL_checknumber(L, arg));
}

// A size (rows, cols, n): a non-negative integer no larger than 2^31 − 1.
// `fn` and `what` name it in the message: "matrix: rows must be a
// non-negative integer, got 2.5".
int64_t check_size(lua_State* L, int arg, const char* fn, const char* what);

// A 1-based index into a dimension of extent n, returned 0-based:
// "get: row 4 is out of range 1..3".
int64_t check_index(lua_State* L, int arg, const char* fn, const char* what, int64_t n);

// An option table (at idx, a table) whose every key is one of `keys`: an
// unknown key is the error of lua/vela/options.lua's options.check ("bench:
// unknown option 'runs' (did you mean 'n'?); options: n, warmup"), raised at
// the Lua caller. The known-keys path calls no Lua.
void check_option_keys(lua_State* L, int idx, const char* fn, std::initializer_list<const char*> keys);

// A seed: a non-negative integer.
uint64_t check_seed(lua_State* L, int arg, const char* fn);

// Scratch host memory owned by Lua (a userdata left on the stack), so an
// error while filling it leaks nothing.
template <class T>
T* scratch(lua_State* L, size_t count) {
    return static_cast<T*>(lua_newuserdatauv(L, count ? count * sizeof(T) : 1, 0));
}

// A device argument: a "vela.Device" userdata or a spec string ("cpu",
// "vulkan:0", "vulkan:llvmpipe").
// fn (optional) names the called function in an unknown-spec error.
Device& check_device(lua_State* L, int arg, const char* fn = nullptr);
Device* test_device(lua_State* L, int arg, const char* fn = nullptr);  // nullptr when absent or nil; errors on a bad spec
// Pushes the one userdata that stands for `dev` in this Lua state, so that
// device() == m:device() holds.
void push_device(lua_State* L, Device& dev);

// Syncs every open device (time, bench, compare measure finished work).
void sync_all(lua_State* L);

// Pushes the device's id ("cpu", "vulkan:0") as a string.
void push_device_name(lua_State* L, const Device& dev);

// Pushes a device's counters as {dispatches=, batched=, submissions=, host_waits=} (memory.cpp).
void push_stats(lua_State* L, const DeviceStats& s);

}  // namespace vela::lua

// Constructors of regular matrices, computed on the host in float64, rounded
// once to float32 and uploaded (so every device holds the same values):
//   eye(n [, m] [, dev])             the identity, n×m
//   linspace(a, b, n [, dev])        n evenly spaced values from a to b, both included: an n×1 column
//   arange(a, b [, step] [, dev])    a, a+step, ... below b (b excluded, as NumPy/PyTorch): a column
//   randperm(n [, seed] [, dev])     a permutation of 1..n (1-based, as Lua and Torch7) from Philox
// Vectors are columns, as everywhere in vela.
#include <algorithm>
#include <cmath>
#include <utility>

#include "core/ops.hpp"
#include "core/philox.hpp"
#include "core/registry.hpp"
#include "lua/check.hpp"
#include "lua/vela.hpp"

namespace vela::lua {

namespace {

// The optional device at `arg` (a device or a spec), else the current one; nothing may follow it.
Device& device_at(lua_State* L, int arg, const char* fn) {
    check_nargs(L, arg);
    if (Device* d = test_device(L, arg, fn)) return *d;
    return guarded(L, fn, []() -> Device& { return current_device(); });
}

// v: Lua-owned scratch memory (nothing owning is alive if the upload raises a Lua error).
void push_column(lua_State* L, const char* fn, Device& dev, int64_t n, const float* v) {
    push_matrix(L, guarded(L, fn, [&] { return from_host(dev, n, 1, v); }));
}

// Host vectors above this many elements are refused before allocating (the largest exact float index).
constexpr int64_t kMaxHost = int64_t(1) << 24;

int l_eye(lua_State* L) {
    int64_t n = check_size(L, 1, "eye", "n");
    bool has_m = lua_type(L, 2) == LUA_TNUMBER;
    int64_t m = has_m ? check_size(L, 2, "eye", "m") : n;
    Device& dev = device_at(L, has_m ? 3 : 2, "eye");
    push_matrix(L, guarded(L, "eye", [&] {
                    Matrix e = zeros(dev, n, m);
                    const int64_t k = n < m ? n : m;
                    if (k > 0) {
                        Matrix diag = e;  // the diagonal: a vector stepping ld + 1 through e's storage
                        diag.rows = 1, diag.cols = k, diag.ld = n + 1;
                        fill(diag, 1.0f);
                    }
                    return e;
                }));
    return 1;
}

int l_linspace(lua_State* L) {
    double a = luaL_checknumber(L, 1), b = luaL_checknumber(L, 2);
    int64_t n = check_size(L, 3, "linspace", "n");
    if (n > kMaxHost) luaL_error(L, "linspace: n is %I (at most 2^24 values)", lua_Integer(n));
    Device& dev = device_at(L, 4, "linspace");
    float* v = scratch<float>(L, size_t(n));
    for (int64_t k = 0; k < n; k++) v[k] = float(k == n - 1 ? b : a + (b - a) * double(k) / double(n - 1));
    push_column(L, "linspace", dev, n, v);
    return 1;
}

int l_arange(lua_State* L) {
    double a = luaL_checknumber(L, 1), b = luaL_checknumber(L, 2);
    bool has_step = lua_type(L, 3) == LUA_TNUMBER;
    double step = has_step ? lua_tonumber(L, 3) : 1.0;
    if (step == 0 || !std::isfinite(step) || !std::isfinite(a) || !std::isfinite(b))
        luaL_error(L, "arange: a, b and step must be finite and step nonzero, got %f, %f, %f", a, b, step);
    Device& dev = device_at(L, has_step ? 4 : 3, "arange");
    double count = std::ceil((b - a) / step);
    if (count > double(kMaxHost))
        luaL_error(L, "arange: %f to %f by %f is %I values (at most 2^24)", a, b, step, (lua_Integer)std::min(count, 9.0e18));
    int64_t n = count > 0 ? int64_t(count) : 0;
    float* v = scratch<float>(L, size_t(n));
    for (int64_t k = 0; k < n; k++) v[k] = float(a + double(k) * step);
    push_column(L, "arange", dev, n, v);
    return 1;
}

int l_randperm(lua_State* L) {
    int64_t n = check_size(L, 1, "randperm", "n");
    if (n > kMaxHost)
        luaL_error(L, "randperm: n is %I (at most 2^24: larger indices are not exact in float32)", lua_Integer(n));
    bool has_seed = lua_type(L, 2) == LUA_TNUMBER;
    uint64_t seed = has_seed ? check_seed(L, 2, "randperm") : 0;
    Device& dev = device_at(L, has_seed ? 3 : 2, "randperm");
    if (!has_seed) seed = guarded(L, "randperm", [] { return next_seed(); });
    // Fisher–Yates from the top: position i swaps with j = (64-bit Philox draw i) mod (i + 1).
    float* v = scratch<float>(L, size_t(n));
    for (int64_t k = 0; k < n; k++) v[k] = float(k + 1);
    for (int64_t i = n - 1; i > 0; i--) {
        philox::Counter w = philox::draw(seed, uint64_t(i));
        uint64_t r = (uint64_t(w[1]) << 32) | w[0];
        std::swap(v[i], v[r % uint64_t(i + 1)]);
    }
    push_column(L, "randperm", dev, n, v);
    return 1;
}

void document() {
    doc("eye", "eye(n [, m] [, dev]) -> n×m",
        "The identity: ones on the diagonal, zeros elsewhere (n×n, or n×m). torch.eye. Example: eye(3) * from{1, 2, 3} "
        " -- the same 3×1");
    doc("linspace", "linspace(a, b, n [, dev]) -> n×1",
        "n evenly spaced values from a to b, both included (computed in float64, rounded once), as a column "
        "vector (vela's vectors are columns). torch.linspace. Example: linspace(0, 1, 5)  -- 0, 0.25, 0.5, 0.75, 1");
    doc("arange", "arange(a, b [, step] [, dev]) -> n×1",
        "a, a + step, a + 2·step, ... up to but excluding b (as NumPy and PyTorch; Torch7's torch.range included "
        "b), as a column vector; step defaults to 1 and may be negative. Example: arange(1, 4)  -- 1, 2, 3");
    doc("randperm", "randperm(n [, seed] [, dev]) -> n×1",
        "A random permutation of 1 .. n (1-based, as Lua and Torch7 index) as a column vector. Drawn from "
        "Philox on the host for the seed (the next seed of seed(n)'s sequence when absent), so the same seed "
        "gives the same permutation on every device. Fits gather_cols: gather_cols(x, randperm(x.cols):t(), y) "
        "shuffles the columns. torch.randperm. Example: randperm(5, 42)");
}

}  // namespace

void open_ranges(lua_State* L) {
    static const luaL_Reg functions[] = {
        {"eye", l_eye}, {"linspace", l_linspace}, {"arange", l_arange}, {"randperm", l_randperm}, {nullptr, nullptr}};
    luaL_setfuncs(L, functions, 0);
    document();
}

}  // namespace vela::lua

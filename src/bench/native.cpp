// vela.bench_native: what scripts/bench/kernels.lua compares vela against, the
// same operations called straight from C on plain malloc'ed arrays: OpenBLAS
// sgemm and saxpy, and a plain tanhf loop. Each returns the median seconds of
// `reps` runs (after one warm-up). Also a clock and the usable device ids.
// Not part of require "vela": the shell preloads it as its own module, and
// only the benchmark scripts require it.
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "core/registry.hpp"
#include "bench/native.hpp"
#include "cpu/cpu_device.hpp"
#include "lua/text.hpp"
#include "lua/vela.hpp"

namespace vela::lua {

namespace {

// Plain arrays of n floats filled with small values, freed at scope end.
struct Floats {
    std::vector<float> v;
    explicit Floats(size_t n) : v(n) {
        for (size_t i = 0; i < n; i++) v[i] = float(int(i % 17) - 8) / 16.0f;
    }
    float* data() { return v.data(); }
};

// OpenBLAS on its own threads, one per vela thread, for the call: vela keeps
// it on one (its products are cut across vela's pool), the comparison does not.
struct BlasThreads {
    BlasThreads() { openblas_set_num_threads(cpu::threads()); }
    ~BlasThreads() { openblas_set_num_threads(1); }
};

template <class F>
double median_of(int reps, F&& f) {
    BlasThreads threads;
    f();  // warm-up: page faults, OpenBLAS thread start
    std::vector<double> t;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        f();
        t.push_back(now() - t0);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

int check_reps(lua_State* L, int arg) {
    lua_Integer r = luaL_optinteger(L, arg, 5);
    luaL_argcheck(L, r >= 1 && r <= 1000000, arg, "reps must be 1..1000000");
    return int(r);
}

lua_Integer check_dim(lua_State* L, int arg) {
    lua_Integer n = luaL_checkinteger(L, arg);
    luaL_argcheck(L, n >= 1 && n <= (1 << 26), arg, "size must be 1..2^26");
    return n;
}

}  // namespace

// native.sgemm(m, n, k [, reps]) -> seconds for C(m×n) = A(m×k)·B(k×n)
static int n_sgemm(lua_State* L) {
    int m = int(check_dim(L, 1)), n = int(check_dim(L, 2)), k = int(check_dim(L, 3));
    int reps = check_reps(L, 4);
    luaL_argcheck(L, double(m) * n + double(m) * k + double(k) * n <= double(1 << 28), 1, "matrices too large");
    Floats a(size_t(m) * k), b(size_t(k) * n), c(size_t(m) * n);
    double t = median_of(reps, [&] {
        cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a.data(), m, b.data(), k, 0.0f,
                    c.data(), m);
    });
    lua_pushnumber(L, t);
    return 1;
}

// native.saxpy(n [, reps]) -> seconds for y ← 0.5·x + y over n floats
static int n_saxpy(lua_State* L) {
    int n = int(check_dim(L, 1)), reps = check_reps(L, 2);
    Floats x{size_t(n)}, y{size_t(n)};
    double t = median_of(reps, [&] { cblas_saxpy(n, 0.5f, x.data(), 1, y.data(), 1); });
    lua_pushnumber(L, t);
    return 1;
}

// native.tanh(n [, reps]) -> seconds for y ← tanhf(x) over n floats, a plain C loop
static int n_tanh(lua_State* L) {
    int n = int(check_dim(L, 1)), reps = check_reps(L, 2);
    Floats x{size_t(n)}, y{size_t(n)};
    double t = median_of(reps, [&] {
        const float* xp = x.data();
        float* yp = y.data();
        for (int i = 0; i < n; i++) yp[i] = std::tanh(xp[i]);
    });
    lua_pushnumber(L, t);
    return 1;
}

// native.axpy1(calls [, reps]) -> seconds per call of a 1-element cblas_saxpy
static int n_axpy1(lua_State* L) {
    lua_Integer calls = luaL_checkinteger(L, 1);
    luaL_argcheck(L, calls >= 1 && calls <= 100000000, 1, "calls must be 1..1e8");
    int reps = check_reps(L, 2);
    float x = 1.0f, y = 0.0f;
    double t = median_of(reps, [&] {
        for (lua_Integer i = 0; i < calls; i++) cblas_saxpy(1, 1e-9f, &x, 1, &y, 1);
    });
    lua_pushnumber(L, t / double(calls));
    return 1;
}

// native.now() -> seconds on a monotonic clock
static int n_now(lua_State* L) {
    lua_pushnumber(L, now());
    return 1;
}

// native.devices() -> {"cpu", "vulkan:0", ...}: the usable devices, without printing
static int n_devices(lua_State* L) {
    std::vector<DeviceInfo> list = guarded(L, [] { return list_devices(); });
    lua_createtable(L, int(list.size()), 0);
    int k = 0;
    for (const DeviceInfo& d : list) {
        if (!d.usable) continue;
        lua_pushlstring(L, d.id.data(), d.id.size());
        lua_rawseti(L, -2, ++k);
    }
    return 1;
}

int native_fma_peak(lua_State* L);  // peak.cpp

static const luaL_Reg native_funcs[] = {{"sgemm", n_sgemm}, {"saxpy", n_saxpy},   {"tanh", n_tanh},
                                        {"axpy1", n_axpy1}, {"now", n_now},       {"devices", n_devices},
                                        {"fma_peak", native_fma_peak}, {nullptr, nullptr}};

}  // namespace vela::lua

extern "C" int luaopen_vela_bench_native(lua_State* L) {
    luaL_newlib(L, vela::lua::native_funcs);
    return 1;
}

// Lua bindings of the regularization and augmentation kernels: dropout,
// batchnorm_stats, batchnorm, batchnorm_backward, random_shift (checked in
// core/ops_regularize.cpp). nn.dropout and nn.batchnorm
// (lua/vela/layers_regularize.lua) and data.loader's shift use them.
#include <cmath>

#include "core/ops.hpp"
#include "lua/bind.hpp"
#include "lua/check.hpp"
#include "lua/observe.hpp"
#include "lua/vela.hpp"

namespace vela::lua {

namespace {

uint64_t opt_seed(lua_State* L, int arg, const char* fn) {
    return lua_isnoneornil(L, arg) ? next_seed() : check_seed(L, arg, fn);
}
uint64_t opt_step(lua_State* L, int arg, const char* fn) {
    if (lua_isnoneornil(L, arg)) return 0;
    lua_Number x = luaL_checknumber(L, arg);
    if (!(x >= 0) || x != std::floor(x) || x >= 18446744073709551616.0)
        luaL_error(L, "%s: step must be a non-negative integer, got %s", fn, luaL_tolstring(L, arg, nullptr));
    return lua_isinteger(L, arg) ? uint64_t(lua_tointeger(L, arg)) : uint64_t(x);
}
int64_t opt_group(lua_State* L, int arg, const char* fn) {
    if (lua_isnoneornil(L, arg)) return 1;
    int64_t g = check_size(L, arg, fn, "group");
    if (g < 1) luaL_error(L, "%s: group must be a positive integer (rows per feature), got %d", fn, int(g));
    return g;
}
float opt_eps(lua_State* L, int arg) { return lua_isnoneornil(L, arg) ? 1e-5f : check_float(L, arg); }

// dropout(x, mask, y, p [, seed [, step]]) -> y
int k_dropout(lua_State* L) {
    check_nargs(L, 6);
    auto [x, mask, y] = check_matrices<3>(L);
    double p = luaL_checknumber(L, 4);
    uint64_t seed = opt_seed(L, 5, "dropout"), step = opt_step(L, 6, "dropout");
    guarded(L, [&] { dropout(seed, step, p, x, mask, y); });
    lua_pushvalue(L, 3);
    return 1;
}

// batchnorm_stats(x, mean, var [, group]) -> mean, var
int k_batchnorm_stats(lua_State* L) {
    check_nargs(L, 4);
    auto [x, mean, var] = check_matrices<3>(L);
    int64_t group = opt_group(L, 4, "batchnorm_stats");
    guarded(L, [&] { batchnorm_stats(x, group, mean, var); });
    lua_pushvalue(L, 2);
    lua_pushvalue(L, 3);
    return 2;
}

// batchnorm(x, mean, var, gamma, beta, y [, eps [, group]]) -> y
int k_batchnorm(lua_State* L) {
    check_nargs(L, 8);
    auto [x, mean, var, gamma, beta, y] = check_matrices<6>(L);
    float eps = opt_eps(L, 7);
    int64_t group = opt_group(L, 8, "batchnorm");
    guarded(L, [&] { batchnorm(x, mean, var, gamma, beta, eps, group, y); });
    lua_pushvalue(L, 6);
    return 1;
}

// batchnorm_backward(dy, x, mean, var, gamma, dgamma, dbeta [, dx [, eps [, group]]]) -> dx or dgamma, dbeta
int k_batchnorm_backward(lua_State* L) {
    check_nargs(L, 10);
    auto [dy, x, mean, var, gamma, dgamma, dbeta] = check_matrices<7>(L);
    Matrix none;
    Matrix& dx = lua_isnoneornil(L, 8) ? none : check_matrix(L, 8);
    float eps = opt_eps(L, 9);
    int64_t group = opt_group(L, 10, "batchnorm_backward");
    guarded(L, [&] { batchnorm_backward(dy, x, mean, var, gamma, eps, group, dgamma, dbeta, dx); });
    if (dx.buf) {
        lua_pushvalue(L, 8);
        return 1;
    }
    lua_pushvalue(L, 6);
    lua_pushvalue(L, 7);
    return 2;
}

// random_shift(x, y, shift, height, width [, seed [, step]]) -> y
int k_random_shift(lua_State* L) {
    check_nargs(L, 7);
    auto [x, y] = check_matrices<2>(L);
    int64_t shift = check_size(L, 3, "random_shift", "shift");
    int64_t height = check_size(L, 4, "random_shift", "height");
    int64_t width = check_size(L, 5, "random_shift", "width");
    uint64_t seed = opt_seed(L, 6, "random_shift"), step = opt_step(L, 7, "random_shift");
    guarded(L, [&] { random_shift(seed, step, shift, height, width, x, y); });
    lua_pushvalue(L, 2);
    return 1;
}

const luaL_Reg kernels[] = {
    {"dropout", k_dropout},
    {"batchnorm_stats", k_batchnorm_stats},
    {"batchnorm", k_batchnorm},
    {"batchnorm_backward", k_batchnorm_backward},
    {"random_shift", k_random_shift},
    {nullptr, nullptr}};

// vela._next_seed() -> the next seed of seed(n)'s sequence (what rand draws
// without a seed), cut to 53 bits so that it is a non-negative Lua integer
// that survives a float conversion: nn.dropout takes its default seed from it.
int l_next_seed(lua_State* L) {
    lua_pushinteger(L, lua_Integer(next_seed() >> 11));
    return 1;
}

const luaL_Reg helpers[] = {{"_next_seed", l_next_seed}, {nullptr, nullptr}};

void document() {
    doc({
        {"dropout", "dropout(x, mask, y, p [, seed [, step = 0]]) -> y",
         "Inverted dropout in one pass: mask(k) ← 1/(1 − p) where u(k) ≥ p, else 0; y ← x ∘ mask. u(k) is 24 bits of "
         "word k mod 4 of the Philox draw k div 4 (k column-major) for (seed, step): the same mask on every device. 0 ≤ p < 1; y "
         "may be x; the backward is mul(dy, mask, dx). Without a seed, the next of seed(n)'s sequence. nn.dropout "
         "uses it. Example: dropout(x, zeros(x.rows, x.cols), x, 0.5, 7)."},
        {"batchnorm_stats", "batchnorm_stats(x, mean, var [, group = 1]) -> mean, var",
         "Per-feature mean and (biased) variance of x, (F·group)×n: feature f is rows (f−1)·group+1 .. f·group of "
         "every column (group = 1: one feature per row; group = height·width: one per channel of images), N = "
         "group·n values each. Two passes; loops bounded on every device. mean, var: F-vectors."},
        {"batchnorm", "batchnorm(x, mean, var, gamma, beta, y [, eps = 1e-5 [, group = 1]]) -> y",
         "y ← γ·(x − mean)/√(var + eps) + β per feature (see batchnorm_stats for group); y may be x. nn.batchnorm "
         "uses it with the batch's statistics in training and the running ones in evaluation."},
        {"batchnorm_backward", "batchnorm_backward(dy, x, mean, var, gamma, dgamma, dbeta [, dx [, eps = 1e-5 [, group = 1]]]) -> dx",
         "The backward of batchnorm with the batch's statistics: dβ ← Σ dy, dγ ← Σ dy·x̂ (x̂ = (x − mean)·inv, inv "
         "= 1/√(var + eps)), and when dx is given dx ← γ·inv/N·(N·dy − dβ − x̂·dγ), N = group·n. Returns dx, or "
         "dgamma, dbeta without dx."},
        {"random_shift", "random_shift(x, y, shift, height, width [, seed [, step = 0]]) -> y",
         "Each column of x holds an image (channels·height·width rows, row-major pixels); y gets it moved by up to "
         "±shift pixels in each direction, zero fill, the move of column j drawn by Philox from (seed, step, j): the "
         "same on every device. y must not overlap x. data.loader(set, batch, {shift = 2}) uses it."},
    });
}

}  // namespace

void open_regularize(lua_State* L) {
    luaL_setfuncs(L, kernels, 0);
    luaL_setfuncs(L, helpers, 0);
    note_kernels(L, kernels);
    document();
}

}  // namespace vela::lua

// Lua bindings of the sequence kernels (docs/sequence.md; checked in
// core/ops_sequence.cpp): layernorm, layernorm_backward, embedding_backward,
// softmax_causal, softmax_causal_backward, and the strided batched product bmm
// (core/ops_bmm.cpp), and cumsum, the prefix sums down columns.
// nn.layernorm and nn.embedding (lua/vela/sequence.lua) use them.
#include "core/ops.hpp"
#include "lua/bind.hpp"
#include "lua/check.hpp"
#include "lua/observe.hpp"
#include "lua/vela.hpp"

namespace vela::lua {

namespace {

// layernorm(x, gamma, beta, mean, rstd, y [, eps]) -> y
int k_layernorm(lua_State* L) {
    check_nargs(L, 7);
    auto [x, gamma, beta, mean, rstd, y] = check_matrices<6>(L);
    float eps = lua_isnoneornil(L, 7) ? 1e-5f : check_float(L, 7);
    guarded(L, [&] { layernorm(x, gamma, beta, eps, mean, rstd, y); });
    lua_pushvalue(L, 6);
    return 1;
}

// f(x [, y]) -> y, y absent: x in place (softmax_causal, cumsum).
template <void (*F)(const Matrix&, const Matrix&)>
int k_into_or_in_place(lua_State* L) {
    check_nargs(L, 2);
    Matrix& x = check_matrix(L, 1);
    Matrix& y = lua_isnoneornil(L, 2) ? x : check_matrix(L, 2);
    guarded(L, [&] { F(x, y); });
    lua_pushvalue(L, lua_isnoneornil(L, 2) ? 1 : 2);
    return 1;
}

// An option that must be a boolean (absent: false).
bool opt_bool(lua_State* L, int idx, const char* fn, const char* key) {
    lua_getfield(L, idx, key);
    bool v = false;
    if (!lua_isnil(L, -1)) {
        if (!lua_isboolean(L, -1))
            luaL_error(L, "%s: option %s must be a boolean, got %s", fn, key, luaL_typename(L, -1));
        v = lua_toboolean(L, -1);
    }
    lua_pop(L, 1);
    return v;
}

// bmm(alpha, a, b, beta, c, count [, {ta =, tb =}]) -> c
int k_bmm(lua_State* L) {
    check_nargs(L, 7);
    float alpha = check_float(L, 1);
    auto [a, b] = check_matrices<2>(L, 2);
    float beta = check_float(L, 4);
    Matrix& c = check_matrix(L, 5);
    int64_t count = check_size(L, 6, "bmm", "count");
    bool ta = false, tb = false;
    if (!lua_isnoneornil(L, 7)) {
        luaL_checktype(L, 7, LUA_TTABLE);
        check_option_keys(L, 7, "bmm", {"ta", "tb"});
        ta = opt_bool(L, 7, "bmm", "ta"), tb = opt_bool(L, 7, "bmm", "tb");
    }
    guarded(L, [&] { bmm(alpha, a, b, beta, c, count, ta, tb); });
    lua_pushvalue(L, 5);
    return 1;
}

// layernorm_backward(dy, x, mean, rstd, gamma, dgamma, dbeta, dx) -> dx,
// embedding_backward(dy, idx, dE) -> dE, softmax_causal_backward(y, dy, dx) -> dx:
// matrices alone (bind.hpp).
const luaL_Reg kernels[] = {{"layernorm", k_layernorm},
                            {"layernorm_backward", matrix_kernel<layernorm_backward, 8>},
                            {"embedding_backward", matrix_kernel<embedding_backward, 3>},
                            {"softmax_causal", k_into_or_in_place<softmax_causal>},
                            {"cumsum", k_into_or_in_place<cumsum>},
                            {"softmax_causal_backward", matrix_kernel<softmax_causal_backward, 3>},
                            {"bmm", k_bmm},
                            {nullptr, nullptr}};

void document() {
    doc({
        {"layernorm", "layernorm(x, gamma, beta, mean, rstd, y [, eps = 1e-5]) -> y",
         "Layer norm of each column (one token per column) over its rows: y ← γ ∘ (x − mean(j))·rstd(j) + β, "
         "rstd = 1/√(var + eps), var the biased variance of column j; saves mean and rstd (n-vectors) for the "
         "backward. gamma, beta: one per row. y may be x. nn.layernorm uses it. Example: "
         "layernorm(from{{1, 2}, {3, 6}}, ones(2, 1), zeros(2, 1), zeros(2, 1), zeros(2, 1), zeros(2, 2))."},
        {"layernorm_backward", "layernorm_backward(dy, x, mean, rstd, gamma, dgamma, dbeta, dx) -> dx",
         "The backward of layernorm: dβ ← Σⱼ dy, dγ ← Σⱼ dy ∘ x̂ (x̂ = (x − mean)·rstd; both overwritten), dx ← "
         "rstd·(g − mean(g) − x̂·mean(g ∘ x̂)) per column, g = dy ∘ γ."},
        {"embedding_backward", "embedding_backward(dy, idx, dE) -> dE",
         "The backward of an embedding lookup (gather_cols(E, idx, y)): dE(:, idx[j]) += dy(:, j) for every j, "
         "repeated tokens summed in order (the same bits every run). idx: 1-based columns of dE, checked. Example: "
         "embedding_backward(ones(2, 3), from{{1, 3, 1}}, zeros(2, 4))."},
        {"softmax_causal", "softmax_causal(x [, y]) -> y",
         "Causal softmax of attention scores x (T×n, n/T sequences): column j is the query at position p = (j−1) "
         "mod T + 1, and only rows 1..p (the keys up to it) take part; the others get 0, with no −Inf mask stored. "
         "Into y, or x when y is absent. T at most 4,096 on Vulkan. Example: softmax_causal(zeros(3, 3))."},
        {"softmax_causal_backward", "softmax_causal_backward(y, dy, dx) -> dx",
         "The backward of softmax_causal from its output y: dx ← y ∘ (dy − Σᵢ y ∘ dy) per column (0 where y was "
         "masked). dx may be dy."},
        {"cumsum", "cumsum(x [, y]) -> y",
         "Prefix sums down each column: y(i, j) ← x(1, j) + … + x(i, j), like torch.cumsum(x, 0) (NumPy's "
         "cumsum(x, axis=0)). Into y (x's shape), or x in place when y is absent. Columns of any length on every "
         "device (Vulkan sums them in chunks of 4,096 rows); float32 results, the cpu sums in double. "
         "Example: cumsum(from{{1, 2}, {3, 4}, {5, 6}}) gives rows (1 2), (4 6), (9 12)."},
        {"bmm", "bmm(alpha, a, b, beta, c, count [, {ta = false, tb = false}]) -> c",
         "Strided batched product: Cᵢ ← α·op(Aᵢ)·op(Bᵢ) + β·Cᵢ for i = 1..count, Xᵢ the i-th of count equal "
         "column blocks of x, op(Aᵢ) = Aᵢᵀ with ta (Bᵢᵀ with tb). a: m×(k·count) (ta: k×(m·count)), b: "
         "k×(n·count) (tb: n×(k·count)), c: m×(n·count), not overlapping a or b. One dispatch on Vulkan; "
         "attention's scores Kᵢᵀ·Qᵢ and outputs Vᵢ·Pᵢ (docs/sequence.md). Like torch.baddbmm with the batch "
         "along the columns. Example: bmm(1, ones(2, 6), ones(3, 4), 0, zeros(2, 4), 2)."},
    });
}

}  // namespace

void open_sequence(lua_State* L) {
    luaL_setfuncs(L, kernels, 0);
    note_kernels(L, kernels);
    document();
}

}  // namespace vela::lua

// Lua bindings of the fused optimizer updates: sgd_step, adam_step,
// adamw_step, rmsprop_step, adagrad_step (checked in core/ops_optim.cpp,
// which also gives the math). lua/vela/optim.lua's optimizers use them. The
// scalars stay doubles down to core/ops_optim.cpp, which derives the kernel's
// (1 − β and the like) in double.
#include "core/ops.hpp"
#include "lua/bind.hpp"
#include "lua/check.hpp"
#include "lua/observe.hpp"
#include "lua/vela.hpp"

namespace vela::lua {

namespace {

double opt_number(lua_State* L, int arg, double dflt) {
    return lua_isnoneornil(L, arg) ? dflt : luaL_checknumber(L, arg);
}

// sgd_step(w, g, v, lr, momentum [, weight_decay [, nesterov]]) -> w
int k_sgd_step(lua_State* L) {
    check_nargs(L, 7);
    auto [w, g, v] = check_matrices<3>(L);
    double lr = luaL_checknumber(L, 4), momentum = luaL_checknumber(L, 5), wd = opt_number(L, 6, 0);
    if (!lua_isnoneornil(L, 7) && !lua_isboolean(L, 7)) luaL_typeerror(L, 7, "boolean (nesterov)");
    bool nesterov = lua_toboolean(L, 7);
    guarded(L, [&] { sgd_step(w, g, v, lr, momentum, wd, nesterov); });
    lua_pushvalue(L, 1);
    return 1;
}

// mm_sgd_step(a, b, g, w, v, lr, momentum [, weight_decay [, nesterov]]) -> w
int k_mm_sgd_step(lua_State* L) {
    check_nargs(L, 9);
    auto [a, b, g, w, v] = check_matrices<5>(L);
    double lr = luaL_checknumber(L, 6), momentum = luaL_checknumber(L, 7), wd = opt_number(L, 8, 0);
    if (!lua_isnoneornil(L, 9) && !lua_isboolean(L, 9)) luaL_typeerror(L, 9, "boolean (nesterov)");
    bool nesterov = lua_toboolean(L, 9);
    guarded(L, [&] { mm_sgd_step(a, b, g, w, v, lr, momentum, wd, nesterov); });
    lua_pushvalue(L, 4);
    return 1;
}

// adam_step(w, g, m, v, lr, beta1, beta2, eps [, weight_decay]) -> w and
// adamw_step(w, g, m, v, lr, beta1, beta2, eps, decay) -> w
template <bool decoupled>
int k_adam_step(lua_State* L) {
    check_nargs(L, 9);
    auto [w, g, m, v] = check_matrices<4>(L);
    double lr = luaL_checknumber(L, 5), b1 = luaL_checknumber(L, 6), b2 = luaL_checknumber(L, 7),
           eps = luaL_checknumber(L, 8);
    double last = decoupled ? luaL_checknumber(L, 9) : opt_number(L, 9, 0);
    guarded(L, [&] {
        if (decoupled)
            adamw_step(w, g, m, v, lr, b1, b2, eps, last);
        else
            adam_step(w, g, m, v, lr, b1, b2, eps, last);
    });
    lua_pushvalue(L, 1);
    return 1;
}

// rmsprop_step(w, g, v, lr, alpha, eps [, weight_decay [, momentum, buf [, gavg]]]) -> w
int k_rmsprop_step(lua_State* L) {
    check_nargs(L, 10);
    auto [w, g, v] = check_matrices<3>(L);
    double lr = luaL_checknumber(L, 4), alpha = luaL_checknumber(L, 5), eps = luaL_checknumber(L, 6);
    double wd = opt_number(L, 7, 0), momentum = opt_number(L, 8, 0);
    Matrix* buf = lua_isnoneornil(L, 9) ? nullptr : &check_matrix(L, 9);
    Matrix* gavg = lua_isnoneornil(L, 10) ? nullptr : &check_matrix(L, 10);
    guarded(L, [&] { rmsprop_step(w, g, v, buf, gavg, lr, alpha, eps, wd, momentum); });
    lua_pushvalue(L, 1);
    return 1;
}

// adagrad_step(w, g, sum, lr, eps [, weight_decay]) -> w
int k_adagrad_step(lua_State* L) {
    check_nargs(L, 6);
    auto [w, g, s] = check_matrices<3>(L);
    double lr = luaL_checknumber(L, 4), eps = luaL_checknumber(L, 5), wd = opt_number(L, 6, 0);
    guarded(L, [&] { adagrad_step(w, g, s, lr, eps, wd); });
    lua_pushvalue(L, 1);
    return 1;
}

// clang-format off
const luaL_Reg kernels[] = {
    {"sgd_step", k_sgd_step},
    {"mm_sgd_step", k_mm_sgd_step},
    {"adam_step", k_adam_step<false>},
    {"adamw_step", k_adam_step<true>},
    {"rmsprop_step", k_rmsprop_step},
    {"adagrad_step", k_adagrad_step},
    {nullptr, nullptr}};
// clang-format on

void document() {
    doc({
        {"sgd_step", "sgd_step(w, g, v, lr, momentum [, weight_decay [, nesterov]]) -> w",
         "One SGD-with-momentum update in one pass: g' = g + weight_decay·w, v ← momentum·v + g', "
         "w ← w − lr·v (nesterov: w ← w − lr·(g' + momentum·v)); w, g, v one shape, separate matrices; g is only "
         "read. optim.sgd uses it. Example: sgd_step(w, dw, v, 0.05, 0.9). PyTorch SGD(momentum=) step, fused."},
        {"mm_sgd_step", "mm_sgd_step(a, b, g, w, v, lr, momentum [, weight_decay [, nesterov]]) -> w",
         "A weight gradient and its SGD update in one call: g ← a·b, then sgd_step(w, g, v, lr, momentum, "
         "weight_decay, nesterov), with the same values bit for bit. On the cpu each piece of g's columns is updated "
         "by the thread that computed it, right after its product, while it is in that core's cache. nn.fit uses it "
         "for each nn.linear's W (optim.sgd with momentum, cpu). w and v must not overlap a, b or g. Example: "
         "mm_sgd_step(delta, x:t(), dw, w, v, 0.05, 0.9). PyTorch: torch.mm then SGD's step."},
        {"adam_step", "adam_step(w, g, m, v, lr, beta1, beta2, eps [, weight_decay = 0]) -> w",
         "One Adam update in one pass: g' = g + λw, m ← m + (1 − β₁)(g' − m), v ← β₂v + (1 − β₂)g'², "
         "w ← w − lr·m/(√v + ε), with the bias correction in lr and eps (optim.adam passes lr·√(1 − β₂ᵗ)/(1 − β₁ᵗ) "
         "and ε·√(1 − β₂ᵗ)); 1 − β is computed in double. Example: adam_step(w, dw, m, v, 0.001, 0.9, 0.999, 1e-8). "
         "PyTorch Adam step, fused."},
        {"adamw_step", "adamw_step(w, g, m, v, lr, beta1, beta2, eps, decay) -> w",
         "One AdamW update in one pass: w ← (1 − decay)·w, then adam_step's update without weight decay; lr and eps "
         "bias-corrected as for adam_step, decay = lr·weight_decay with the uncorrected lr (optim.adamw passes it). "
         "Example: adamw_step(w, dw, m, v, 0.001, 0.9, 0.999, 1e-8, 1e-5). PyTorch AdamW step, fused."},
        {"rmsprop_step", "rmsprop_step(w, g, v, lr, alpha, eps [, weight_decay [, momentum, buf [, gavg]]]) -> w",
         "One RMSprop update in one pass: g' = g + λw, v ← αv + (1 − α)g'², d = √v + ε (centered, when gavg is "
         "given: gavg ← gavg + (1 − α)(g' − gavg), d = √(v − gavg²) + ε); with momentum μ > 0 (buf needed): "
         "buf ← μ·buf + g'/d, w ← w − lr·buf, else w ← w − lr·g'/d. Example: rmsprop_step(w, dw, v, 0.01, 0.99, 1e-8). "
         "PyTorch RMSprop step, fused."},
        {"adagrad_step", "adagrad_step(w, g, sum, lr, eps [, weight_decay]) -> w",
         "One Adagrad update in one pass: g' = g + λw, sum ← sum + g'², w ← w − lr·g'/(√sum + ε); lr comes with "
         "its decay applied (optim.adagrad passes lr/(1 + (t − 1)·lr_decay)). Example: adagrad_step(w, dw, s, 0.01, "
         "1e-10). PyTorch Adagrad step, fused."},
    });
}

}  // namespace

void open_optim_kernels(lua_State* L) {
    luaL_setfuncs(L, kernels, 0);
    note_kernels(L, kernels);
    document();
}

}  // namespace vela::lua

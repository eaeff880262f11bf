// What the kernel bindings share beyond the argument checks (check.hpp): the
// matrices of a run of arguments at once, and the whole binding of a kernel
// whose arguments are all matrices.
#pragma once
#include <array>
#include <functional>
#include <utility>

#include "lua/check.hpp"
#include "lua/vela.hpp"

namespace vela::lua {

// The matrices at arguments first, first + 1, ..., checked in that order (the
// first bad one is the error), for a structured binding:
// auto [x, mean, var] = check_matrices<3>(L);
template <int N>
std::array<std::reference_wrapper<Matrix>, N> check_matrices(lua_State* L, int first = 1) {
    return [&]<int... I>(std::integer_sequence<int, I...>) {
        return std::array<std::reference_wrapper<Matrix>, N>{std::ref(check_matrix(L, first + I))...};
    }(std::make_integer_sequence<int, N>{});
}

namespace detail {
template <class... A>
constexpr int arity(void (*)(A...)) {
    return int(sizeof...(A));
}
}  // namespace detail

// The binding of fn(m1, ..., mN), a kernel of N matrices: exactly N matrix
// arguments, the call guarded, argument `out` returned (the one written).
template <auto Fn, int Out>
int matrix_kernel(lua_State* L) {
    constexpr int n = detail::arity(Fn);
    static_assert(Out >= 1 && Out <= n, "matrix_kernel: out names one of the arguments");
    check_nargs(L, n);
    auto m = check_matrices<n>(L);
    guarded(L, [&] { std::apply([](auto&... a) { Fn(a...); }, m); });
    lua_pushvalue(L, Out);
    return 1;
}

}  // namespace vela::lua

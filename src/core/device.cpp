// Names of the kernel enums, as the user types them (help, profile, errors).
#include "core/device.hpp"

namespace vela {

const char* unary_name(Unary op) {
    static const char* const names[] = {"tanh", "sigmoid", "relu", "exp", "log", "sqrt", "sqr", "inv",
                                        "abs", "linear_frac", "tanh_prime", "sigmoid_prime", "relu_prime"};
    static_assert(sizeof names / sizeof *names == size_t(Unary::count_));
    return op < Unary::count_ ? names[size_t(op)] : "unary";
}

const char* binary_name(Binary op) {
    static const char* const names[] = {"mul", "div", "add", "sub"};
    static_assert(sizeof names / sizeof *names == size_t(Binary::count_));
    return op < Binary::count_ ? names[size_t(op)] : "binary";
}

const char* reduce_name(Reduce op) {
    static const char* const names[] = {"dot", "nrm2", "asum", "sum"};
    static_assert(sizeof names / sizeof *names == size_t(Reduce::count_));
    return op < Reduce::count_ ? names[size_t(op)] : "reduce";
}

const char* act_name(Act a) {
    static const char* const names[] = {"identity", "relu", "sigmoid", "tanh"};
    static_assert(sizeof names / sizeof *names == size_t(Act::count_));
    return a < Act::count_ ? names[size_t(a)] : "act";
}

bool parse_act(const std::string& s, Act& out) {
    for (uint8_t i = 0; i < uint8_t(Act::count_); i++) {
        if (s == act_name(Act(i))) {
            out = Act(i);
            return true;
        }
    }
    if (s == "linear" || s == "none") {  // common synonyms of identity
        out = Act::identity;
        return true;
    }
    return false;
}

}  // namespace vela

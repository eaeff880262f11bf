// A recursive-descent parser for the GLSL expression subset of core/map_expr.hpp,
// with GLSL's precedence and implicit int → float conversions. It returns no
// program at the first thing outside the subset (the kernel then runs through
// the software driver), so every program it gives means what glslang made of the text.
#include "core/map_expr.hpp"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace vela {

namespace {

struct Unsupported {};

struct Fn {
    const char* name;
    MapFn fn;
    int args;
    bool boolean;  // returns bool (isnan, isinf)
};
// map's preamble #defines exp, log, tanh, expm1, log1p, sigmoid, relu and
// softplus as the op table's functions; the *_f names are those functions
// under their own names (ops.glsl).
const Fn kFns[] = {
    {"exp", f_exp, 1, false}, {"exp_f", f_exp, 1, false}, {"log", f_log, 1, false}, {"log_f", f_log, 1, false},
    {"tanh", f_tanh, 1, false}, {"tanh_f", f_tanh, 1, false}, {"expm1", f_expm1, 1, false},
    {"expm1_f", f_expm1, 1, false}, {"log1p", f_log1p, 1, false}, {"log1p_f", f_log1p, 1, false},
    {"sigmoid", f_sigmoid, 1, false}, {"sigmoid_f", f_sigmoid, 1, false}, {"relu", f_relu, 1, false},
    {"relu_f", f_relu, 1, false}, {"softplus", f_softplus, 1, false}, {"softplus_f", f_softplus, 1, false},
    {"elu_f", f_elu, 1, false}, {"gelu_f", f_gelu, 1, false}, {"leaky_relu_f", f_leaky_relu, 1, false},
    {"abs", f_abs, 1, false}, {"sign", f_sign, 1, false}, {"floor", f_floor, 1, false}, {"ceil", f_ceil, 1, false},
    {"trunc", f_trunc, 1, false}, {"fract", f_fract, 1, false}, {"sqrt", f_sqrt, 1, false},
    {"inversesqrt", f_inversesqrt, 1, false}, {"exp2", f_exp2, 1, false}, {"log2", f_log2, 1, false},
    {"sin", f_sin, 1, false}, {"cos", f_cos, 1, false}, {"tan", f_tan, 1, false}, {"asin", f_asin, 1, false},
    {"acos", f_acos, 1, false}, {"atan", f_atan, 1, false}, {"atan", f_atan2, 2, false},
    {"sinh", f_sinh, 1, false}, {"cosh", f_cosh, 1, false}, {"radians", f_radians, 1, false},
    {"degrees", f_degrees, 1, false}, {"isnan", f_isnan, 1, true}, {"isinf", f_isinf, 1, true},
    {"pow", f_pow, 2, false}, {"min", f_min, 2, false}, {"max", f_max, 2, false}, {"mod", f_mod, 2, false},
    {"step", f_step, 2, false}, {"clamp", f_clamp, 3, false}, {"mix", f_mix, 3, false},
    {"smoothstep", f_smoothstep, 3, false}, {"fma", f_fma, 3, false},
};

enum class T { f, i, b };
struct Val {
    T type;
    int32_t node = -1;  // f, b
    int64_t ival = 0;   // i: a folded constant
};

class Parser {
public:
    Parser(const std::string& e, const std::vector<std::string>& mats, const std::vector<std::string>& scalars)
        : s_(e), mats_(mats), scalars_(scalars) {}

    MapProgram run() {
        Val v = ternary();
        skip();
        if (pos_ != s_.size()) throw Unsupported{};  // a comma, an assignment, ...
        if (v.type != T::f) v = to_float(v);          // map writes float(expr)
        MapProgram::Op op = prog_.nodes[size_t(v.node)].op;
        if (op == MapProgram::input || op == MapProgram::scalar || op == MapProgram::constant ||
            v.node != int32_t(prog_.nodes.size()) - 1) {
            // the result is computed by the last node: x alone becomes x + (−0), which is x
            int32_t z = zero();
            push({MapProgram::add, 0, 0, v.node, z, -1, 0});
        }
        return std::move(prog_);
    }

private:
    const std::string& s_;
    const std::vector<std::string>& mats_;
    const std::vector<std::string>& scalars_;
    size_t pos_ = 0;
    int depth_ = 0;
    MapProgram prog_;

    int32_t push(MapProgram::Node n) {
        if (prog_.nodes.size() >= 256) throw Unsupported{};
        prog_.nodes.push_back(n);
        return int32_t(prog_.nodes.size()) - 1;
    }
    int32_t constant(float v) { return push({MapProgram::constant, 0, 0, -1, -1, -1, v}); }
    int32_t zero() { return constant(-0.0f); }  // x + (−0) is x for every x, −0 included

    void skip() {
        for (;;) {
            while (pos_ < s_.size() && std::strchr(" \t\r\n\f\v", s_[pos_]) && s_[pos_]) ++pos_;
            if (s_.compare(pos_, 2, "//") == 0) {
                while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
            } else if (s_.compare(pos_, 2, "/*") == 0) {
                size_t e = s_.find("*/", pos_ + 2);
                if (e == std::string::npos) throw Unsupported{};
                pos_ = e + 2;
            } else {
                return;
            }
        }
    }
    // Consumes `op` when it comes next and is not the start of a longer operator in `longer`.
    bool eat(const char* op, const char* longer = "") {
        skip();
        size_t n = std::strlen(op);
        if (s_.compare(pos_, n, op) != 0) return false;
        if (pos_ + n < s_.size() && s_[pos_ + n] && std::strchr(longer, s_[pos_ + n])) return false;
        pos_ += n;
        return true;
    }

    Val to_float(Val v) {
        if (v.type == T::f) return v;
        if (v.type == T::i) return {T::f, constant(float(int32_t(v.ival)))};
        // bool → float: 1.0 or 0.0
        return {T::f, push({MapProgram::select, 0, 0, v.node, constant(1.0f), constant(0.0f), 0})};
    }
    static int64_t wrap(int64_t v) { return int64_t(int32_t(uint32_t(uint64_t(v)))); }

    Val ternary() {
        if (++depth_ > 64) throw Unsupported{};
        Val c = logical_or();
        if (eat("?")) {
            if (c.type != T::b) throw Unsupported{};
            Val a = ternary();
            if (!eat(":")) throw Unsupported{};
            Val b = ternary();
            if (a.type == T::i && b.type == T::i) throw Unsupported{};  // an int that is not a constant
            if (a.type != b.type) a = to_float(a), b = to_float(b);
            c = {a.type, push({MapProgram::select, 0, 0, c.node, a.node, b.node, 0})};
        }
        --depth_;
        return c;
    }
    Val logical(Val (Parser::*next)(), const char* op, MapProgram::Op code) {
        Val a = (this->*next)();
        while (eat(op)) {
            Val b = (this->*next)();
            if (a.type != T::b || b.type != T::b) throw Unsupported{};
            a = {T::b, push({code, 0, 0, a.node, b.node, -1, 0})};
        }
        return a;
    }
    Val logical_or() { return logical(&Parser::logical_xor, "||", MapProgram::or_); }
    Val logical_xor() { return logical(&Parser::logical_and, "^^", MapProgram::xor_); }
    Val logical_and() { return logical(&Parser::equality, "&&", MapProgram::and_); }

    Val compare(Val a, Val b, MapProgram::Op code) {
        if (a.type == T::i && b.type == T::i) {
            bool r = code == MapProgram::lt ? a.ival < b.ival : code == MapProgram::le ? a.ival <= b.ival
                   : code == MapProgram::gt ? a.ival > b.ival : code == MapProgram::ge ? a.ival >= b.ival
                   : code == MapProgram::eq ? a.ival == b.ival : a.ival != b.ival;
            return {T::b, constant(r ? 1.0f : 0.0f)};
        }
        if (a.type == T::b || b.type == T::b) {
            if (a.type != b.type || (code != MapProgram::eq && code != MapProgram::ne)) throw Unsupported{};
        } else {
            a = to_float(a), b = to_float(b);
        }
        return {T::b, push({code, 0, 0, a.node, b.node, -1, 0})};
    }
    Val equality() {
        Val a = relational();
        for (;;) {
            if (eat("==")) a = compare(a, relational(), MapProgram::eq);
            else if (eat("!=")) a = compare(a, relational(), MapProgram::ne);
            else return a;
        }
    }
    Val relational() {
        Val a = additive();
        for (;;) {
            if (eat("<=")) a = compare(a, additive(), MapProgram::le);
            else if (eat(">=")) a = compare(a, additive(), MapProgram::ge);
            else if (eat("<", "<=")) a = compare(a, additive(), MapProgram::lt);
            else if (eat(">", ">=")) a = compare(a, additive(), MapProgram::gt);
            else return a;
        }
    }
    Val arith(Val a, Val b, char op) {
        if (a.type == T::b || b.type == T::b) throw Unsupported{};
        if (a.type == T::i && b.type == T::i) {
            int64_t x = a.ival, y = b.ival;
            switch (op) {
            case '+': return {T::i, -1, wrap(x + y)};
            case '-': return {T::i, -1, wrap(x - y)};
            case '*': return {T::i, -1, wrap(x * y)};
            case '/':
                if (y == 0 || (x == INT32_MIN && y == -1)) throw Unsupported{};
                return {T::i, -1, x / y};  // truncates, as GLSL
            default:  // '%': undefined for negative operands in GLSL
                if (y <= 0 || x < 0) throw Unsupported{};
                return {T::i, -1, x % y};
            }
        }
        if (op == '%') throw Unsupported{};
        a = to_float(a), b = to_float(b);
        MapProgram::Op code = op == '+' ? MapProgram::add : op == '-' ? MapProgram::sub
                            : op == '*' ? MapProgram::mul : MapProgram::div;
        return {T::f, push({code, 0, 0, a.node, b.node, -1, 0})};
    }
    Val additive() {
        Val a = multiplicative();
        for (;;) {
            if (eat("+", "+=")) a = arith(a, multiplicative(), '+');
            else if (eat("-", "-=")) a = arith(a, multiplicative(), '-');
            else return a;
        }
    }
    Val multiplicative() {
        Val a = unary();
        for (;;) {
            if (eat("*", "=")) a = arith(a, unary(), '*');
            else if (eat("/", "=")) a = arith(a, unary(), '/');
            else if (eat("%", "=")) a = arith(a, unary(), '%');
            else return a;
        }
    }
    Val unary() {
        if (++depth_ > 64) throw Unsupported{};
        Val v;
        if (eat("-", "-=")) {
            v = unary();
            if (v.type == T::b) throw Unsupported{};
            v = v.type == T::i ? Val{T::i, -1, wrap(-v.ival)} : Val{T::f, push({MapProgram::neg, 0, 0, v.node, -1, -1, 0})};
        } else if (eat("+", "+=")) {
            v = unary();
            if (v.type == T::b) throw Unsupported{};
        } else if (eat("!", "=")) {
            v = unary();
            if (v.type != T::b) throw Unsupported{};
            v = {T::b, push({MapProgram::not_, 0, 0, v.node, -1, -1, 0})};
        } else {
            v = primary();
        }
        --depth_;
        return v;
    }

    static bool ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
    static bool digit(char c) { return c >= '0' && c <= '9'; }

    Val number() {
        size_t b = pos_, n = s_.size();
        bool is_float = false;
        if (s_.compare(pos_, 2, "0x") == 0 || s_.compare(pos_, 2, "0X") == 0) {
            pos_ += 2;
            size_t d = pos_;
            while (pos_ < n && std::isxdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
            if (pos_ == d) throw Unsupported{};
        } else {
            while (pos_ < n && digit(s_[pos_])) ++pos_;
            if (pos_ < n && s_[pos_] == '.') is_float = true, ++pos_;
            while (pos_ < n && digit(s_[pos_])) ++pos_;
            if (pos_ < n && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
                is_float = true;
                ++pos_;
                if (pos_ < n && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
                size_t d = pos_;
                while (pos_ < n && digit(s_[pos_])) ++pos_;
                if (pos_ == d) throw Unsupported{};
            }
        }
        std::string text = s_.substr(b, pos_ - b);
        if (pos_ < n && (s_[pos_] == 'f' || s_[pos_] == 'F')) {
            if (!is_float && text.compare(0, 2, "0x") != 0 && text.compare(0, 2, "0X") != 0) is_float = true;
            else if (!is_float) throw Unsupported{};
            ++pos_;
        }
        if (pos_ < n && (ident_char(s_[pos_]) || s_[pos_] == '.')) throw Unsupported{};  // 1u, 1.0lf, ...
        if (is_float) return {T::f, constant(std::strtof(text.c_str(), nullptr))};
        int base = text.size() > 1 && text[0] == '0' ? (text[1] == 'x' || text[1] == 'X' ? 16 : 8) : 10;
        const char* digits = text.c_str() + (base == 16 ? 2 : 0);
        for (const char* p = digits; base == 8 && *p; ++p)
            if (*p > '7') throw Unsupported{};
        errno = 0;
        unsigned long long v = std::strtoull(digits, nullptr, base);
        if (errno || v > 0x7fffffffull) throw Unsupported{};
        return {T::i, -1, int64_t(v)};
    }
    static bool ident_char(char c) { return ident_start(c) || digit(c); }

    Val primary() {
        skip();
        if (pos_ >= s_.size()) throw Unsupported{};
        char c = s_[pos_];
        if (digit(c) || (c == '.' && pos_ + 1 < s_.size() && digit(s_[pos_ + 1]))) return number();
        if (c == '(') {
            ++pos_;
            Val v = ternary();
            if (!eat(")")) throw Unsupported{};
            return v;
        }
        if (!ident_start(c)) throw Unsupported{};
        size_t b = pos_;
        while (pos_ < s_.size() && ident_char(s_[pos_])) ++pos_;
        std::string id = s_.substr(b, pos_ - b);
        skip();
        if (pos_ < s_.size() && s_[pos_] == '(') return call(id);
        if (pos_ < s_.size() && (s_[pos_] == '.' || s_[pos_] == '[')) throw Unsupported{};
        if (id == "true" || id == "false") return {T::b, constant(id == "true" ? 1.0f : 0.0f)};
        for (size_t i = 0; i < mats_.size(); ++i)
            if (mats_[i] == id) return {T::f, push({MapProgram::input, 0, uint16_t(i), -1, -1, -1, 0})};
        for (size_t i = 0; i < scalars_.size(); ++i)
            if (scalars_[i] == id) return {T::f, push({MapProgram::scalar, 0, uint16_t(i), -1, -1, -1, 0})};
        throw Unsupported{};
    }

    Val call(const std::string& id) {
        ++pos_;  // '('
        std::vector<Val> args;
        if (!eat(")")) {
            do args.push_back(ternary());
            while (eat(","));
            if (!eat(")")) throw Unsupported{};
        }
        if (id == "float") {
            if (args.size() != 1) throw Unsupported{};
            return to_float(args[0]);
        }
        bool any_float = false;
        for (const Val& a : args) {
            if (a.type == T::b) throw Unsupported{};
            any_float |= a.type == T::f;
        }
        if (!any_float) throw Unsupported{};  // the int overloads (abs(-2), min(1, 2), ...)
        for (const Fn& f : kFns) {
            if (id != f.name || int(args.size()) != f.args) continue;
            for (Val& a : args) a = to_float(a);
            MapProgram::Op op = f.args == 1 ? MapProgram::call1 : f.args == 2 ? MapProgram::call2 : MapProgram::call3;
            int32_t n = push({op, uint8_t(f.fn), 0, args[0].node, f.args > 1 ? args[1].node : -1,
                              f.args > 2 ? args[2].node : -1, 0});
            return {f.boolean ? T::b : T::f, n};
        }
        throw Unsupported{};
    }
};

}  // namespace

std::shared_ptr<const MapProgram> parse_map(const std::string& expr, const std::vector<std::string>& mats,
                                            const std::vector<std::string>& scalars) {
    try {
        Parser p(expr, mats, scalars);
        return std::make_shared<const MapProgram>(p.run());
    } catch (const Unsupported&) {
        return nullptr;
    }
}

}  // namespace vela

// The GLSL vela writes around the text of a kernel written at the prompt:
// the free names of a map expression, the preamble (headers, workgroup size,
// push constants, the op table's functions), and the whole shaders of map and
// general kernels.
#include <algorithm>
#include <cstring>

#include "core/error.hpp"
#include "userk/glsl.hpp"

namespace vela::userk {

namespace {

bool ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9'); }
bool space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// At a comment ("//" or "/*"): the index after it; elsewhere i itself.
size_t skip_comment(const std::string& e, size_t i) {
    if (e.compare(i, 2, "//") == 0) return std::min(e.find('\n', i), e.size());
    if (e.compare(i, 2, "/*") == 0) {
        size_t end = e.find("*/", i + 2);
        return end == std::string::npos ? e.size() : end + 2;
    }
    return i;
}

// At a number (digits, '.', exponent with sign, suffixes): the index after it; elsewhere i itself.
size_t skip_number(const std::string& e, size_t i) {
    size_t n = e.size();
    if (!((e[i] >= '0' && e[i] <= '9') || (e[i] == '.' && i + 1 < n && e[i + 1] >= '0' && e[i + 1] <= '9')))
        return i;
    while (i < n && (ident_char(e[i]) || e[i] == '.' || ((e[i] == '+' || e[i] == '-') && (e[i - 1] == 'e' || e[i - 1] == 'E'))))
        ++i;
    return i;
}

// Past spaces and comments from i.
size_t skip_blank(const std::string& e, size_t i) {
    for (;;) {
        while (i < e.size() && space(e[i])) ++i;
        size_t c = skip_comment(e, i);
        if (c == i) return i;
        i = c;
    }
}

// Whether a loop condition declares a variable (`while (bool go = f())`): no
// expression can be put in front of it.
bool declares(const std::string& cond) {
    size_t i = skip_blank(cond, 0), j = i;
    while (j < cond.size() && ident_char(cond[j])) ++j;
    static const char* const types[] = {"const", "bool", "int", "uint", "float", "double", "highp", "mediump", "lowp"};
    for (const char* t : types)
        if (cond.compare(i, j - i, t) == 0 && std::strlen(t) == j - i) return true;
    return false;
}

// What every user kernel starts with: the shared headers, the workgroup size
// as specialization constant 0, and the op table's accurate functions under
// their GLSL names (the same math as the built-in kernels on every device).
std::string preamble(const Spec& s) {
    std::string g = std::string(kUserVersion) + "\n" +
        "#extension GL_GOOGLE_cpp_style_line_directive : require\n"
        "#extension GL_KHR_memory_scope_semantics : require\n"  // atomicLoad: the stop word, below
        "#include \"common.glsl\"\n"
        "#include \"ops.glsl\"\n"
        "layout(constant_id = 0) const uint WG = 64;\n"
        "layout(local_size_x_id = 0) in;\n"
        "layout(push_constant) uniform Push {\n";
    for (size_t i = 0; i < s.mats.size() + (s.elementwise ? 1 : 0); ++i) g += format("    View m%zu;\n", i);
    g += "    uint n;\n";
    for (const Scalar& sc : s.scalars)
        g += format("    %s s_%s;\n", sc.type == 'f' ? "float" : sc.type == 'i' ? "int" : "uint", sc.name.c_str());
    g += "} p;\n"
         "#define exp(t) exp_f(t)\n"
         "#define log(t) log_f(t)\n"
         "#define tanh(t) tanh_f(t)\n"
         "#define expm1(t) expm1_f(t)\n"
         "#define log1p(t) log1p_f(t)\n"
         "#define sigmoid(t) sigmoid_f(t)\n"
         "#define relu(t) relu_f(t)\n"
         "#define softplus(t) softplus_f(t)\n"
         // The loop probe (vulkan/loop_probe.hpp): two iterations, with bounds the
         // compilers cannot count (no unrolling), unless the driver's loop count
         // is spent; then the status word is set. CHUNKED (the cpu device's
         // runner, which submits a large grid in parts so Ctrl-C can stop it
         // between them): the word after the status word holds the first
         // invocation of this part, read once per invocation.
         "layout(constant_id = 2) const uint VELA_LOOP_LO = 0u;\n"
         "layout(constant_id = 3) const uint VELA_LOOP_HI = 0u;\n"
         "layout(constant_id = 4) const uint VELA_CHUNKED = 0u;\n"
         "layout(constant_id = 5) const uint VELA_LOOP_CHECK = 0u;\n"
         "uint vela_first = 0u;\n"
         "void vela_start() {\n"
         "    if (VELA_CHUNKED != 0u) vela_first = U32(addr_make(VELA_LOOP_LO + 4u, VELA_LOOP_HI)).v;\n"
         "}\n"
         "uint id() { return global_index(WG) + vela_first; }\n"
         // The stop word (vulkan/loop_probe.hpp): the third word at the status address, set
         // by the host on Ctrl-C. A general kernel reads it at its start and,
         // where VELA_LOOP_CHECK is set (drivers that do not bound loops), once
         // every 256 iterations of its loops (vela_go, put in front of each
         // loop condition by guard_loops), and returns once it is set. The read
         // is an atomic load: glslang marks a volatile block's member with a
         // decoration only and emits a plain OpLoad, which a compiler may
         // hoist out of the loop through a buffer_reference (the likely reason
         // an H200 never stopped such a loop); an OpAtomicLoad is read each
         // time it runs.
         "layout(buffer_reference, buffer_reference_align = 4) coherent volatile buffer VelaStop { uint v; };\n"
         "bool vela_stopped() {\n"
         "    if (VELA_LOOP_LO == 0u && VELA_LOOP_HI == 0u) return false;\n"
         "    return atomicLoad(VelaStop(addr_f32(addr_make(VELA_LOOP_LO, VELA_LOOP_HI), 2u)).v, gl_ScopeDevice,\n"
         "                      gl_StorageSemanticsBuffer, gl_SemanticsRelaxed) != 0u;\n"
         "}\n"
         "uint vela_tick = 0u;\n"
         "bool vela_halt = false;\n"
         "bool vela_go() {\n"
         "    if (VELA_LOOP_CHECK == 0u) return true;\n"
         "    if ((++vela_tick & 255u) == 0u && vela_stopped()) vela_halt = true;\n"
         "    return !vela_halt;\n"
         "}\n"
         "void vela_probe() {\n"
         "    if (VELA_LOOP_LO == 0u && VELA_LOOP_HI == 0u) return;\n"
         "    uint c = 0u;\n"
         "    for (uint i = p.n; i < p.n + 2u; ++i) ++c;\n"
         "    if (c < 2u) atomicOr(U32(addr_make(VELA_LOOP_LO, VELA_LOOP_HI)).v, 1u);\n"
         "}\n";
    return g;
}

std::string scalar_type(char t) { return t == 'f' ? "float" : t == 'i' ? "int" : "uint"; }

}  // namespace

bool valid_name(const std::string& s) {
    if (s.empty() || !ident_start(s[0])) return false;
    for (char c : s)
        if (!ident_char(c)) return false;
    return true;
}

// Names the generated code uses or GLSL reserves: not available as argument names.
bool reserved(const std::string& s) {
    static const char* const words[] = {
        "at", "set", "rows", "cols", "id", "main", "p", "WG", "true", "false", "float", "int", "uint", "bool",
        "vec2", "vec3", "vec4", "ivec2", "ivec3", "ivec4", "uvec2", "uvec3", "uvec4", "mat2", "mat3", "mat4",
        "if", "else", "for", "while", "do", "return", "break", "continue", "switch", "case", "default", "const",
        "in", "out", "inout", "uniform", "buffer", "shared", "struct", "void", "discard", "precise", "View",
        "input", "output", "sample", "filter", "common", "partition", "active", "double", "half", "fixed",
    };
    for (const char* w : words)
        if (s == w) return true;
    return s.compare(0, 3, "gl_") == 0 || s.compare(0, 5, "vela_") == 0 || s.find("__") != std::string::npos;
}

// Matrix names of map expressions: x, y, z, u, v, w, each optionally followed
// by digits; in that order (then by number) they are the kernel's inputs.
int matrix_rank(const std::string& s) {
    static const char order[] = "xyzuvw";
    const char* p = std::strchr(order, s[0]);
    if (!p || s[0] == '\0') return -1;
    for (size_t i = 1; i < s.size(); ++i)
        if (s[i] < '0' || s[i] > '9') return -1;
    return int(p - order);
}

// The free names of a GLSL expression: identifiers that are not called as
// functions, not fields (after '.'), not keywords or gl_ built-ins, not parts of numbers.
std::vector<std::string> free_names(const std::string& e) {
    std::vector<std::string> out;
    size_t i = 0, n = e.size();
    while (i < n) {
        char c = e[i];
        if (size_t k = skip_comment(e, i); k != i) {  // comments name nothing
            i = k;
            continue;
        }
        if (size_t k = skip_number(e, i); k != i) {
            i = k;
            continue;
        }
        if (ident_start(c)) {
            size_t j = i;
            while (j < n && ident_char(e[j])) ++j;
            std::string id = e.substr(i, j - i);
            size_t k = j;
            while (k < n && (e[k] == ' ' || e[k] == '\t' || e[k] == '\n' || e[k] == '\r')) ++k;
            bool call = k < n && e[k] == '(';
            size_t b = i;
            while (b > 0 && (e[b - 1] == ' ' || e[b - 1] == '\t')) --b;
            bool field = b > 0 && e[b - 1] == '.';
            if (!call && !field && !reserved(id) && std::find(out.begin(), out.end(), id) == out.end())
                out.push_back(id);
            i = j;
            continue;
        }
        ++i;
    }
    return out;
}

// vela_go() in front of the condition of every for, while and do-while loop,
// on the condition's own line (the user's line numbers stay):
// `for (i = 0; i < n; ++i)` → `for (i = 0; vela_go() && (i < n); ++i)`,
// `for (;;)` → `for (;vela_go();)`, `while (c)` → `while (vela_go() && (c))`.
// Comments and numbers are skipped; a condition that declares a variable is
// left as it is (that loop is not checked); an unbalanced one is left to the compiler.
std::string guard_loops(const std::string& e) {
    std::vector<std::pair<size_t, const char*>> ins;  // (position, text), in order
    size_t i = 0, n = e.size();
    while (i < n) {
        if (size_t k = skip_comment(e, i); k != i) {
            i = k;
            continue;
        }
        if (size_t k = skip_number(e, i); k != i) {
            i = k;
            continue;
        }
        if (!ident_start(e[i])) {
            ++i;
            continue;
        }
        size_t j = i;
        while (j < n && ident_char(e[j])) ++j;
        bool is_for = e.compare(i, j - i, "for") == 0 && j - i == 3;
        bool is_while = e.compare(i, j - i, "while") == 0 && j - i == 5;
        size_t b = i;
        while (b > 0 && space(e[b - 1])) --b;
        size_t k = skip_blank(e, j);
        if ((is_for || is_while) && (b == 0 || e[b - 1] != '.') && k < n && e[k] == '(') {
            int depth = 0, semis = 0;
            size_t semi[2] = {0, 0}, close = std::string::npos;
            for (size_t q = k; q < n;) {
                if (size_t c = skip_comment(e, q); c != q) {
                    q = c;
                    continue;
                }
                char x = e[q];
                if (x == '(' || x == '[' || x == '{') {
                    ++depth;
                } else if (x == ')' || x == ']' || x == '}') {
                    if (--depth == 0) {
                        close = q;
                        break;
                    }
                } else if (x == ';' && depth == 1 && semis < 2) {
                    semi[semis++] = q;
                }
                ++q;
            }
            size_t from = is_for ? semi[0] + 1 : k + 1, to = is_for ? semi[1] : close;
            if (close != std::string::npos && (is_while || semis == 2)) {
                std::string cond = e.substr(from, to - from);
                if (skip_blank(cond, 0) == cond.size()) {
                    ins.emplace_back(from, "vela_go()");
                } else if (!declares(cond)) {
                    ins.emplace_back(from, "vela_go() && (");
                    ins.emplace_back(to, ")");
                }
            }
        }
        i = j;
    }
    std::string out;
    out.reserve(n + ins.size() * 16);
    size_t at = 0;
    for (auto& [pos, text] : ins) {
        out.append(e, at, pos - at);
        out += text;
        at = pos;
    }
    out.append(e, at, n - at);
    return out;
}

std::string map_source(const Spec& s) {
    std::string g = preamble(s);
    g += "float vela_f(";
    for (size_t i = 0; i < s.mats.size(); ++i) g += (i ? ", float " : "float ") + s.mats[i];
    for (size_t i = 0; i < s.scalars.size(); ++i)
        g += (i || !s.mats.empty() ? ", " : "") + scalar_type(s.scalars[i].type) + " " + s.scalars[i].name;
    g += ") {\n    return float(\n#line 1 \"user\"\n" + s.user_text + "\n#line 1 \"vela-end\"\n    );\n}\n";
    // VEC4 (set by the device when every view is one dense 16-byte aligned run):
    // four elements per invocation, one 16-byte load per operand.
    // (addr_f32 from common.glsl, as the built-in elementwise shaders)
    g += "layout(constant_id = 1) const uint VEC4 = 0;\n"
         "layout(buffer_reference, buffer_reference_align = 16) buffer VelaV4 { vec4 v; };\n"
         "vec4 vela_ld4(View v, uint k) { return VelaV4(addr_f32(v.addr, k)).v; }\n"
         "void vela_st4(View v, uint k, vec4 x) { VelaV4(addr_f32(v.addr, k)).v = x; }\n";
    std::string scal;
    for (size_t i = 0; i < s.scalars.size(); ++i) scal += ", p.s_" + s.scalars[i].name;
    auto call = [&](const char* load, const char* comp) {
        std::string c = "vela_f(";
        for (size_t i = 0; i < s.mats.size(); ++i) c += format("%s%s%zu%s", i ? ", " : "", load, i, comp);
        return c + (s.mats.empty() && !scal.empty() ? scal.substr(2) : scal) + ")";
    };
    size_t o = s.mats.size();
    g += "void vela_map() {\n"
         "    if (VEC4 != 0u) {\n"
         "        uint k = id() * 4u;\n"
         "        if (k >= p.n) return;\n"
         "        if (p.n - k >= 4u) {\n";
    for (size_t i = 0; i < o; ++i) g += format("            vec4 a%zu = vela_ld4(p.m%zu, k);\n", i, i);
    g += format("            vela_st4(p.m%zu, k, vec4(%s, %s, %s, %s));\n", o, call("a", ".x").c_str(),
                call("a", ".y").c_str(), call("a", ".z").c_str(), call("a", ".w").c_str());
    g += "            return;\n        }\n";
    // The tail of a dense run: plain addressing, no view_index (its division runs
    // on CPU drivers, which execute both sides of a branch under a lane mask).
    g += format("        for (; k < p.n; ++k) store_f32(p.m%zu.addr, k, %s);\n", o,
                call("load_f32(p.m", ".addr, k)").c_str());
    g += "        return;\n    }\n";
    g += "    uint k = id();\n    if (k >= p.n) return;\n";
    g += format("    st(p.m%zu, k, %s);\n}\n", o, call("ld(p.m", ", k)").c_str());
    g += "void main() {\n    vela_start();\n    vela_map();\n    vela_probe();\n}\n";
    return g;
}

std::string kernel_source(const Spec& s) {
    std::string g = preamble(s);
    g += "// 1-based accessors; outside the matrix at() reads 0 and set() writes nothing.\n"
         "uint rows(View v) { return v.rows; }\n"
         "uint cols(View v) { return v.pad; }\n"
         "float at(View v, uint i, uint j) {\n"
         "    return i - 1u < v.rows && j - 1u < v.pad ? load_f32(v.addr, view_index2(v, i - 1u, j - 1u)) : 0.0;\n"
         "}\n"
         "void set(View v, uint i, uint j, float x) {\n"
         "    if (i - 1u < v.rows && j - 1u < v.pad) store_f32(v.addr, view_index2(v, i - 1u, j - 1u), x);\n"
         "}\n";
    for (const std::string& m : s.mats) g += "View " + m + ";\n";
    for (const Scalar& sc : s.scalars) g += scalar_type(sc.type) + " " + sc.name + ";\n";
    g += "void vela_body() {\n#line 1 \"user\"\n" + guard_loops(s.user_text) + "\n#line 1 \"vela-end\"\n}\n";
    g += "void main() {\n    vela_start();\n    if (id() >= p.n || vela_stopped()) return;\n";
    for (size_t i = 0; i < s.mats.size(); ++i) g += format("    %s = p.m%zu;\n", s.mats[i].c_str(), i);
    for (const Scalar& sc : s.scalars) g += format("    %s = p.s_%s;\n", sc.name.c_str(), sc.name.c_str());
    g += "    vela_body();\n    vela_probe();\n}\n";
    return g;
}

}  // namespace vela::userk

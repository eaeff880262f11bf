// Kernels written at the prompt: map(expr) for elementwise kernels and
// kernel{args =, size =, glsl =} for general ones. Each returns a Lua function
// that checks its arguments in vela's style and runs the compiled SPIR-V on
// the operands' device through the same stream as every built-in kernel.
//
// The GLSL vela writes around the user's text (the preamble) is built here;
// compilation and its caches are src/vulkan/user_kernel.cpp; the dispatch is
// the device's (VulkanDevice::run_user, CpuDevice::run_user).
#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/map_expr.hpp"
#include "core/ops.hpp"
#include "core/user_kernel.hpp"
#include "lua/check.hpp"
#include "lua/observe.hpp"
#include "lua/vela.hpp"
#include "vulkan/user_kernel.hpp"

namespace vela::lua {

namespace {

constexpr const char* kSpecType = "vela.UserKernelSpec";
constexpr int kMaxMats = int(kUserPushBytes / kUserViewBytes);  // 5
constexpr int kMaxScalars = 30;
constexpr uint64_t kMaxInvocations = 0xffffffffull - 4096;  // 32-bit indices; a rounded-up grid must not wrap

struct Scalar {
    std::string name;
    char type = 'f';  // f float, i int, u uint
};

struct Spec {
    bool elementwise = true;
    std::string name;       // as errors and profile show it
    bool named = false;     // name given by the user (help finds it)
    std::string user_text;  // the expression or body
    std::string source;     // the whole generated shader
    std::string signature;
    std::vector<std::string> mats;  // map: the inputs; kernel: every matrix argument, in call order
    std::vector<Scalar> scalars;    // in push order
    UserKernel uk;
    vk::CompiledKernel compiled;
};

// Formats a message and raises it as a Lua error. Callers hold no C++ object
// that owns memory when they call this (lua_error skips destructors).
[[noreturn]] void lfail(lua_State* L, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void lfail(lua_State* L, const char* fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    raise(L, msg);
}

bool ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9'); }

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
        if (e.compare(i, 2, "//") == 0) {  // comments name nothing
            while (i < n && e[i] != '\n') ++i;
            continue;
        }
        if (e.compare(i, 2, "/*") == 0) {
            size_t end = e.find("*/", i + 2);
            i = end == std::string::npos ? n : end + 2;
            continue;
        }
        if ((c >= '0' && c <= '9') || (c == '.' && i + 1 < n && e[i + 1] >= '0' && e[i + 1] <= '9')) {
            // a number: digits, '.', exponent with sign, suffixes
            while (i < n && (ident_char(e[i]) || e[i] == '.' ||
                             ((e[i] == '+' || e[i] == '-') && (e[i - 1] == 'e' || e[i - 1] == 'E'))))
                ++i;
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

// What every user kernel starts with: the shared headers, the workgroup size
// as specialization constant 0, and the op table's accurate functions under
// their GLSL names (the same math as the built-in kernels on every device).
std::string preamble(const Spec& s) {
    std::string g = std::string(vk::kUserVersion) + "\n" +
        "#extension GL_GOOGLE_cpp_style_line_directive : require\n"
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
         "uint id() { return global_index(WG); }\n";
    return g;
}

std::string scalar_type(char t) { return t == 'f' ? "float" : t == 'i' ? "int" : "uint"; }

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
    g += "void main() {\n"
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
    g += "void vela_body() {\n#line 1 \"user\"\n" + s.user_text + "\n#line 1 \"vela-end\"\n}\n";
    g += "void main() {\n    if (id() >= p.n) return;\n";
    for (size_t i = 0; i < s.mats.size(); ++i) g += format("    %s = p.m%zu;\n", s.mats[i].c_str(), i);
    for (const Scalar& sc : s.scalars) g += format("    %s = p.s_%s;\n", sc.name.c_str(), sc.name.c_str());
    g += "    vela_body();\n}\n";
    return g;
}

int spec_gc(lua_State* L) {
    auto* s = static_cast<Spec*>(luaL_checkudata(L, 1, kSpecType));
    s->~Spec();
    return 0;
}

Spec* new_spec(lua_State* L) {
    void* mem = lua_newuserdatauv(L, sizeof(Spec), 0);
    Spec* s = new (mem) Spec;
    if (luaL_newmetatable(L, kSpecType)) {
        lua_pushcfunction(L, spec_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_setmetatable(L, -2);
    return s;
}

// The value at idx as a number for scalar `sc`, its 32-bit pattern in *out;
// false when it is not a number of that type.
bool scalar_bits(lua_State* L, int idx, const Scalar& sc, uint32_t* out) {
    if (lua_type(L, idx) != LUA_TNUMBER) return false;
    if (sc.type == 'f') {
        float f = float(lua_tonumber(L, idx));
        std::memcpy(out, &f, 4);
        return true;
    }
    int ok = 0;
    lua_Integer v = lua_tointegerx(L, idx, &ok);
    if (!ok) return false;
    if (sc.type == 'i' ? (v < INT32_MIN || v > INT32_MAX) : (v < 0 || v > int64_t(UINT32_MAX))) return false;
    int32_t iv = int32_t(v);
    uint32_t uv = uint32_t(v);
    std::memcpy(out, sc.type == 'i' ? static_cast<void*>(&iv) : static_cast<void*>(&uv), 4);
    return true;
}

// "a, b": the scalar names, into a fixed buffer (no allocation: callers may raise next).
void join_scalars(const Spec& s, char* out, size_t size) {
    size_t n = 0;
    out[0] = '\0';
    for (const Scalar& sc : s.scalars)
        n += size_t(std::snprintf(out + n, n < size ? size - n : 0, "%s%s", n ? ", " : "", sc.name.c_str()));
    if (n >= size) out[size - 1] = '\0';
}
void join_mats(const Spec& s, char* out, size_t size) {
    size_t n = 0;
    out[0] = '\0';
    for (const std::string& m : s.mats) n += size_t(std::snprintf(out + n, n < size ? size - n : 0, "%s%s", n ? ", " : "", m.c_str()));
    if (n >= size) out[size - 1] = '\0';
}

// Reads the scalar parameters from the table at `t` (0: none given) into bits.
void read_scalars(lua_State* L, const Spec& s, int t, uint32_t* bits) {
    const char* kn = s.name.c_str();
    if (t) {
        lua_pushnil(L);
        while (lua_next(L, t)) {
            lua_pop(L, 1);
            const char* key = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : nullptr;
            bool known = false;
            for (const Scalar& sc : s.scalars) known |= key && sc.name == key;
            if (!known) {
                char names[256];
                join_scalars(s, names, sizeof names);
                lfail(L, "%s: no scalar parameter named '%s' (this kernel takes: %s)", kn,
                      key ? key : luaL_typename(L, -1), names[0] ? names : "none");
            }
        }
    }
    for (size_t i = 0; i < s.scalars.size(); ++i) {
        const Scalar& sc = s.scalars[i];
        if (!t) lfail(L, "%s: scalar '%s' missing (pass {%s = <number>} as the last argument)", kn, sc.name.c_str(),
                      sc.name.c_str());
        lua_getfield(L, t, sc.name.c_str());
        if (lua_isnil(L, -1))
            lfail(L, "%s: scalar '%s' missing (pass {%s = <number>} as the last argument)", kn, sc.name.c_str(),
                  sc.name.c_str());
        if (!scalar_bits(L, -1, sc, &bits[i]))
            lfail(L, "%s: scalar '%s' must be %s, got %s", kn, sc.name.c_str(),
                  sc.type == 'f' ? "a number" : sc.type == 'i' ? "an integer (int32)" : "a non-negative integer (uint32)",
                  lua_type(L, -1) == LUA_TNUMBER ? lua_pushfstring(L, "%f", lua_tonumber(L, -1)) : luaL_typename(L, -1));
        lua_pop(L, 1);
    }
}

const char* arg_name(const Spec& s, int i, int) {
    return !s.elementwise || i < int(s.mats.size()) ? s.mats[size_t(i)].c_str() : "out";
}

// Checks shared by both kinds: live, float32, one device, no partial overlap
// of a written matrix with another operand. Throws vela::Error.
void check_operands(const Spec& s, const Matrix* const* m, int nm, const bool* written) {
    const char* kn = s.name.c_str();
    for (int i = 0; i < nm; ++i) {
        const char* an = arg_name(s, i, nm);
        check_live(kn, an, *m[i]);
        if (m[i]->dtype() != DType::f32) fail("%s: %s is %s but must be float32", kn, an, dtype_name(m[i]->dtype()));
        if (m[i]->buf->count() > 0xffffffffull)  // shaders index elements with 32-bit integers
            fail("%s: %s lives in a buffer of %zu elements; kernels written at the prompt address at most %llu", kn,
                 an, m[i]->buf->count(), 0xffffffffull);
        if (&m[i]->device() != &m[0]->device()) {
            std::string d0 = m[0]->device().name(), di = m[i]->device().name();
            fail("%s: %s is on %s but %s is on %s (move one with :to(\"%s\") or :to(\"%s\"))", kn,
                 arg_name(s, 0, nm), d0.c_str(), an, di.c_str(), di.c_str(), d0.c_str());
        }
    }
    for (int i = 0; i < nm; ++i) {
        if (!written[i]) continue;
        for (int j = 0; j < nm; ++j) {
            if (j == i || !m[i]->overlaps(*m[j])) continue;
            const Matrix &a = *m[i], &b = *m[j];
            bool same = a.buf == b.buf && a.offset == b.offset && a.rows == b.rows && a.cols == b.cols &&
                        (a.size() <= 1 || (a.ld == b.ld && a.trans == b.trans));
            if (!s.elementwise || !same)
                fail("%s: %s %s %s (%s)", kn, arg_name(s, i, nm), same ? "is the same matrix as" : "partially overlaps",
                     arg_name(s, j, nm),
                     s.elementwise ? "use the same view for in-place work, or disjoint views"
                                   : "a general kernel's matrices must not overlap");
        }
    }
}

// f(x, ... [, out] [, {scalars}]) for a map kernel; f(m1, ..., {scalars}) for a general one.
int call_kernel(lua_State* L) {
    Spec& s = *static_cast<Spec*>(lua_touserdata(L, lua_upvalueindex(1)));
    const char* kn = s.name.c_str();
    int top = lua_gettop(L);
    int t = top >= 1 && lua_type(L, top) == LUA_TTABLE ? top : 0;
    int nargs = t ? top - 1 : top;
    int nin = int(s.mats.size());
    Matrix* m[kMaxMats + 1] = {};
    int nmax = s.elementwise ? nin + 1 : nin;
    if (nargs > nmax || (s.elementwise ? nargs < std::max(nin, 1) : nargs != nin)) {
        char names[256];
        join_mats(s, names, sizeof names);
        if (s.elementwise)
            lfail(L, "%s: %d matri%s given; expected %d input%s%s%s%s and an optional output%s (%s)", kn, nargs,
                  nargs == 1 ? "x" : "ces", nin, nin == 1 ? "" : "s", nin ? " (" : "", names, nin ? ")" : "",
                  s.scalars.empty() ? "" : ", then a table of scalars", s.signature.c_str());
        lfail(L, "%s: %d matri%s given; expected %d (%s)", kn, nargs, nargs == 1 ? "x" : "ces", nin, s.signature.c_str());
    }
    for (int i = 1; i <= nargs; ++i) {
        Matrix* mi = test_matrix(L, i);
        if (!mi)
            lfail(L, "%s: argument #%d (%s) must be a matrix, got %s", kn, i,
                  i <= nin ? s.mats[size_t(i - 1)].c_str() : "out", luaL_typename(L, i));
        m[i - 1] = mi;
    }
    int nm = nargs;
    uint32_t bits[kMaxScalars] = {};
    read_scalars(L, s, t, bits);
    int out = nm;  // 1-based stack index of the matrix returned
    uint64_t invocations = 0;
    if (!s.elementwise) {
        // size: a number, or a function of the matrices (then the scalars table)
        lua_pushvalue(L, lua_upvalueindex(2));
        if (lua_isfunction(L, -1)) {
            for (int i = 1; i <= nm; ++i) lua_pushvalue(L, i);
            if (t) lua_pushvalue(L, t);
            lua_call(L, nm + (t ? 1 : 0), 1);
        }
        int ok = 0;
        lua_Integer n = lua_tointegerx(L, -1, &ok);
        if (!ok || n < 0)
            lfail(L, "%s: size must give a non-negative integer (the number of invocations), got %s", kn,
                  lua_type(L, -1) == LUA_TNUMBER ? lua_tostring(L, -1) : luaL_typename(L, -1));
        lua_pop(L, 1);
        invocations = uint64_t(n);
    }
    guarded(L, [&] {
        bool written[kMaxMats + 1] = {};
        if (s.elementwise) {
            written[nm - 1] = true;
            const Matrix& o = *m[nm - 1];
            for (int i = 0; i + 1 < nm; ++i) {
                const Matrix& a = *m[i];
                bool vec = a.is_vector() && o.is_vector() && a.size() == o.size();
                if ((a.rows != o.rows || a.cols != o.cols) && !vec)
                    fail("%s: %s is %s but %s is %s (shapes must match)", kn, arg_name(s, i, nm), a.shape_str().c_str(),
                         arg_name(s, nm - 1, nm), o.shape_str().c_str());
            }
        } else {
            for (int i = 0; i < nm; ++i) written[i] = true;
        }
        const Matrix* cm[kMaxMats + 1];
        for (int i = 0; i < nm; ++i) cm[i] = m[i];
        check_operands(s, cm, nm, written);
        UserCall call;
        call.kernel = &s.uk;
        for (int i = 0; i < nm; ++i) {
            const Matrix& a = *m[i];
            const Matrix& o = *m[nm - 1];
            // a vector of another orientation than the output is read in the output's order
            call.mats.push_back(s.elementwise && (a.rows != o.rows) ? a.t() : a);
            call.written.push_back(written[i]);
        }
        if (s.elementwise && nm == nin) {  // in place: the last input is the output too
            call.mats.push_back(*m[nm - 1]);
            call.written.back() = false;
            call.written.push_back(true);
        }
        call.scalars.assign(bits, bits + s.scalars.size());
        call.invocations = s.elementwise ? uint64_t(m[nm - 1]->size()) : invocations;
        if (call.invocations > kMaxInvocations)
            fail("%s: %llu invocations; a kernel runs at most %llu", kn, (unsigned long long)call.invocations,
                 (unsigned long long)kMaxInvocations);
        if (call.invocations) m[0]->device().run_user(call);  // an empty matrix: nothing to run
    });
    lua_pushvalue(L, out);
    return 1;
}

// Compiles spec (on top of the stack, as userdata) and replaces it with the kernel function.
// upvalue 2 (size) is pushed by the caller before the spec for general kernels.
void finish(lua_State* L, Spec& s, const char* doc_text, bool has_size) {
    guarded(L, [&] {
        s.source = s.elementwise ? map_source(s) : kernel_source(s);
        s.compiled = vk::compile_user(s.name, s.source, s.user_text);
        s.uk.name = intern(s.name);
        s.uk.module = s.compiled.module;
        s.uk.spirv = s.compiled.spirv;
        s.uk.elementwise = s.elementwise;
        if (s.elementwise) {
            std::vector<std::string> names;
            for (const Scalar& sc : s.scalars) names.push_back(sc.name);
            s.uk.program = parse_map(s.user_text, s.mats, names);
        }
    });
    if (has_size) {
        // stack: size, spec → closure(spec, size)
        lua_insert(L, -2);
        lua_pushcclosure(L, call_kernel, 2);
    } else {
        lua_pushcclosure(L, call_kernel, 1);
    }
    note_user_kernel(L, -1, s.uk.name);  // profile, trace and diverge name it
    // remember the spec for kernel_info
    push_weak_table(L, "vela.user_kernels");
    lua_pushvalue(L, -2);
    lua_pushboolean(L, 1);
    lua_rawset(L, -3);
    lua_pop(L, 1);
    if (s.named) {
        lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
        lua_getfield(L, -1, "vela");
        lua_getfield(L, -1, "doc");
        if (lua_isfunction(L, -1)) {
            lua_pushstring(L, s.name.c_str());
            lua_pushstring(L, s.signature.c_str());
            if (doc_text)
                lua_pushstring(L, doc_text);
            else
                lua_pushfstring(L, "A kernel written at the prompt: %s", s.user_text.c_str());
            lua_pushvalue(L, -7);  // the kernel function
            lua_call(L, 4, 0);
            lua_pop(L, 2);
        } else {
            lua_pop(L, 3);
        }
    }
}

// Reads name= and doc= of an options table at idx (0: none).
void read_name_doc(lua_State* L, int idx, const char* fn, const char** name, const char** doc_text) {
    *name = nullptr;
    *doc_text = nullptr;
    if (!idx) return;
    lua_getfield(L, idx, "name");
    if (!lua_isnil(L, -1) && lua_type(L, -1) != LUA_TSTRING)
        lfail(L, "%s: name must be a string, got %s", fn, luaL_typename(L, -1));
    *name = lua_tostring(L, -1);
    lua_pop(L, 1);  // the string stays alive in the options table
    lua_getfield(L, idx, "doc");
    if (!lua_isnil(L, -1) && lua_type(L, -1) != LUA_TSTRING)
        lfail(L, "%s: doc must be a string, got %s", fn, luaL_typename(L, -1));
    *doc_text = lua_tostring(L, -1);
    lua_pop(L, 1);
    if (*doc_text && !*name) lfail(L, "%s: doc needs a name too (name is what ?name and help look up)", fn);
    if (*name && !valid_name(*name)) lfail(L, "%s: name '%s' is not a Lua identifier", fn, *name);
    if (*name) {  // help entries of built-ins stay theirs
        int top = lua_gettop(L);
        lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
        lua_getfield(L, -1, "vela");
        bool builtin = lua_istable(L, -1) && lua_getfield(L, -1, *name) != LUA_TNIL;
        if (builtin) lfail(L, "%s: '%s' is the name of a built-in (vela.%s); choose another name", fn, *name, *name);
        lua_settop(L, top);
    }
}

// map(expr [, {name =, doc =}])
int l_map(lua_State* L) {
    check_nargs(L, 2);
    size_t len = 0;
    const char* expr = luaL_checklstring(L, 1, &len);
    int o = lua_isnoneornil(L, 2) ? 0 : (luaL_checktype(L, 2, LUA_TTABLE), 2);
    const char *name, *doc_text;
    read_name_doc(L, o, "map", &name, &doc_text);
    Spec* sp = new_spec(L);
    guarded(L, [&] {
        Spec& s = *sp;
        s.elementwise = true;
        s.user_text.assign(expr, len);
        bool blank = true;
        for (char c : s.user_text) blank &= c == ' ' || c == '\t' || c == '\n' || c == '\r';
        if (blank) fail("map: the expression is empty (e.g. map\"x / (1.0 + exp(-x))\")");
        s.named = name != nullptr;
        if (name) {
            s.name = name;
        } else {
            std::string e;  // the expression on one line, spaces collapsed
            for (char c : s.user_text) {
                bool sp = c == ' ' || c == '\t' || c == '\n' || c == '\r';
                if (!sp) e += c;
                else if (!e.empty() && e.back() != ' ') e += ' ';
            }
            while (!e.empty() && e.back() == ' ') e.pop_back();
            if (e.size() > 40) e = e.substr(0, 37) + "...";
            s.name = "map(" + e + ")";
        }
        for (const std::string& id : free_names(s.user_text)) {
            if (matrix_rank(id) >= 0)
                s.mats.push_back(id);
            else
                s.scalars.push_back({id, 'f'});
        }
        std::sort(s.mats.begin(), s.mats.end(), [](const std::string& a, const std::string& b) {
            int ra = matrix_rank(a), rb = matrix_rank(b);
            if (ra != rb) return ra < rb;
            if (a.size() != b.size()) return a.size() < b.size();
            return a < b;
        });
        std::sort(s.scalars.begin(), s.scalars.end(), [](const Scalar& a, const Scalar& b) { return a.name < b.name; });
        if (int(s.mats.size()) + 1 > kMaxMats)
            fail("map: %zu input matrices; at most %d (with the output, push constants hold %d views)", s.mats.size(),
                 kMaxMats - 1, kMaxMats);
        size_t bytes = (s.mats.size() + 1) * kUserViewBytes + 4 + s.scalars.size() * 4;
        if (bytes > kUserPushBytes)
            fail("map: %zu matrices and %zu scalars need %zu bytes of push constants; at most %u fit", s.mats.size() + 1,
                 s.scalars.size(), bytes, kUserPushBytes);
        std::string sig = s.named ? s.name : std::string("f");
        sig += "(";
        for (size_t i = 0; i < s.mats.size(); ++i) sig += (i ? ", " : "") + s.mats[i];
        sig += s.mats.empty() ? "out" : " [, out]";
        if (!s.scalars.empty()) {
            sig += ", {";
            for (size_t i = 0; i < s.scalars.size(); ++i) sig += (i ? ", " : "") + s.scalars[i].name + " =";
            sig += "}";
        }
        sig += ")";
        s.signature = sig;
    });
    finish(L, *sp, doc_text, false);
    return 1;
}

// kernel{args = {name = "matrix" | "float" | "int" | "uint", ...}, size = n | function(matrices..., scalars),
//        glsl = body [, name =] [, doc =]}
int l_kernel(lua_State* L) {
    check_nargs(L, 1);
    luaL_checktype(L, 1, LUA_TTABLE);
    const char *name, *doc_text;
    read_name_doc(L, 1, "kernel", &name, &doc_text);
    if (lua_getfield(L, 1, "glsl") != LUA_TSTRING)
        lfail(L, "kernel: glsl must be a string (the kernel's body), got %s", luaL_typename(L, -1));
    size_t blen = 0;
    const char* body = lua_tolstring(L, -1, &blen);
    lua_pop(L, 1);
    if (lua_getfield(L, 1, "args") != LUA_TTABLE)
        lfail(L, "kernel: args must be a table {name = \"matrix\" | \"float\" | \"int\" | \"uint\", ...}, got %s",
              luaL_typename(L, -1));
    int args = lua_gettop(L);
    int st = lua_getfield(L, 1, "size");
    if (st != LUA_TFUNCTION && !lua_isinteger(L, -1))
        lfail(L, "kernel: size must be an integer or a function of the matrices returning one, got %s",
              st == LUA_TNUMBER ? lua_pushfstring(L, "%f", lua_tonumber(L, -1)) : luaL_typename(L, -1));
    int size = lua_gettop(L);
    for (lua_pushnil(L); lua_next(L, args); lua_pop(L, 1)) {
        if (lua_type(L, -2) != LUA_TSTRING) lfail(L, "kernel: args keys must be names, got %s", luaL_typename(L, -2));
        const char* k = lua_tostring(L, -2);
        const char* v = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : nullptr;
        if (!v || (std::strcmp(v, "matrix") && std::strcmp(v, "float") && std::strcmp(v, "int") && std::strcmp(v, "uint")))
            lfail(L, "kernel: args.%s must be \"matrix\", \"float\", \"int\" or \"uint\", got %s", k,
                  v ? lua_pushfstring(L, "\"%s\"", v) : luaL_typename(L, -1));
    }
    // The matrices' call order: the size function's parameter names, where they name them; then by name.
    char order[kMaxMats + 1][64] = {};
    int norder = 0;
    if (st == LUA_TFUNCTION) {
        lua_pushvalue(L, size);
        for (int i = 1; norder <= kMaxMats; ++i) {
            const char* pn = lua_getlocal(L, nullptr, i);
            if (!pn) break;
            lua_getfield(L, args, pn);
            bool is_m = lua_type(L, -1) == LUA_TSTRING && std::strcmp(lua_tostring(L, -1), "matrix") == 0;
            lua_pop(L, 1);
            if (is_m && std::strlen(pn) < 64) std::strcpy(order[norder++], pn);
        }
        lua_pop(L, 1);
    }
    lua_pushvalue(L, size);
    Spec* sp = new_spec(L);
    guarded(L, [&] {
        Spec& s = *sp;
        s.elementwise = false;
        s.user_text.assign(body, blen);
        s.named = name != nullptr;
        s.name = name ? name : "kernel";
        std::vector<std::string> mats;
        for (lua_pushnil(L); lua_next(L, args); lua_pop(L, 1)) {
            std::string k = lua_tostring(L, -2), v = lua_tostring(L, -1);
            if (!valid_name(k) || reserved(k))
                fail("kernel: '%s' cannot name an argument (a GLSL keyword or a name vela's preamble uses)", k.c_str());
            if (v == "matrix")
                mats.push_back(k);
            else
                s.scalars.push_back({k, v == "float" ? 'f' : v == "int" ? 'i' : 'u'});
        }
        std::sort(mats.begin(), mats.end());
        for (int i = 0; i < norder; ++i) s.mats.push_back(order[i]);
        for (const std::string& m : mats)
            if (std::find(s.mats.begin(), s.mats.end(), m) == s.mats.end()) s.mats.push_back(m);
        std::sort(s.scalars.begin(), s.scalars.end(), [](const Scalar& a, const Scalar& b) { return a.name < b.name; });
        if (s.mats.empty()) fail("kernel: args has no matrix (at least one \"matrix\" argument names the device)");
        if (int(s.mats.size()) > kMaxMats) fail("kernel: %zu matrices; at most %d fit in push constants", s.mats.size(), kMaxMats);
        size_t bytes = s.mats.size() * kUserViewBytes + 4 + s.scalars.size() * 4;
        if (bytes > kUserPushBytes)
            fail("kernel: %zu matrices and %zu scalars need %zu bytes of push constants; at most %u fit",
                 s.mats.size(), s.scalars.size(), bytes, kUserPushBytes);
        std::string sig = s.name + "(";
        for (size_t i = 0; i < s.mats.size(); ++i) sig += (i ? ", " : "") + s.mats[i];
        if (!s.scalars.empty()) {
            sig += ", {";
            for (size_t i = 0; i < s.scalars.size(); ++i) sig += (i ? ", " : "") + s.scalars[i].name + " =";
            sig += "}";
        }
        s.signature = sig + ")";
    });
    finish(L, *sp, doc_text, true);
    return 1;
}

// kernel_info(f) -> {name =, kind = "map" | "kernel", signature =, matrices = {...}, scalars = {...},
//                    compiled = "compiled" | "memory" | "disk", compile_ms =, glsl = generated source}
int l_kernel_info(lua_State* L) {
    check_nargs(L, 1);
    luaL_checktype(L, 1, LUA_TFUNCTION);
    Spec* s = nullptr;
    lua_getfield(L, LUA_REGISTRYINDEX, "vela.user_kernels");
    if (lua_istable(L, -1)) {
        lua_pushvalue(L, 1);
        if (lua_rawget(L, -2) != LUA_TNIL && lua_getupvalue(L, 1, 1)) {
            s = static_cast<Spec*>(luaL_testudata(L, -1, kSpecType));
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    if (!s) lfail(L, "kernel_info: argument #1 is not a kernel made by map or kernel");
    lua_createtable(L, 0, 8);
    lua_pushstring(L, s->name.c_str());
    lua_setfield(L, -2, "name");
    lua_pushstring(L, s->elementwise ? "map" : "kernel");
    lua_setfield(L, -2, "kind");
    lua_pushstring(L, s->signature.c_str());
    lua_setfield(L, -2, "signature");
    lua_createtable(L, int(s->mats.size()), 0);
    for (size_t i = 0; i < s->mats.size(); ++i) {
        lua_pushstring(L, s->mats[i].c_str());
        lua_rawseti(L, -2, lua_Integer(i + 1));
    }
    lua_setfield(L, -2, "matrices");
    lua_createtable(L, int(s->scalars.size()), 0);
    for (size_t i = 0; i < s->scalars.size(); ++i) {
        lua_pushstring(L, s->scalars[i].name.c_str());
        lua_rawseti(L, -2, lua_Integer(i + 1));
    }
    lua_setfield(L, -2, "scalars");
    const char* from[] = {"compiled", "memory", "disk"};
    lua_pushstring(L, from[s->compiled.from]);
    lua_setfield(L, -2, "compiled");
    lua_pushnumber(L, s->compiled.ms);
    lua_setfield(L, -2, "compile_ms");
    lua_pushstring(L, s->source.c_str());
    lua_setfield(L, -2, "glsl");
    lua_pushstring(L, s->uk.program ? "native" : "driver");
    lua_setfield(L, -2, "cpu");
    return 1;
}

const luaL_Reg funcs[] = {
    {"map", l_map},
    {"kernel", l_kernel},
    {"kernel_info", l_kernel_info},
    {nullptr, nullptr},
};

}  // namespace

void open_user_kernels(lua_State* L) {
    luaL_setfuncs(L, funcs, 0);
    vk::start_compiler();  // glslang's start-up beside the session, not in the first kernel's compile
    doc("map", "map(expr [, {name =, doc =}]) -> f",
        "An elementwise kernel from one GLSL expression, compiled in-process (libshaderc) and cached in memory and "
        "on disk. Free names x, y, z, u, v, w (optionally with digits) are matrices, taken in that order; every other "
        "free name is a float scalar passed by name. f(x, ... [, out] [, {a = 1}]) writes out, or the last input in "
        "place; shapes must match, views are welcome. exp, log, tanh, expm1, log1p, sigmoid, relu, softplus are the "
        "op table's accurate functions. Example: elu = map[[x > 0.0 ? x : a * (exp(x) - 1.0)]]; elu(x, y, {a = 1})");
    doc("kernel", "kernel{args = {a = \"matrix\", s = \"float\", ...}, size = n | function(a, ...), glsl = body [, name =, doc =]} -> f",
        "A general compute kernel: glsl is the body of one invocation. vela writes the preamble: id() (0-based "
        "invocation index, 0 ≤ id() < size), rows(a), cols(a), at(a, i, j) and set(a, i, j, v) with 1-based "
        "indices honouring views and transposes (outside the matrix at reads 0, set does nothing), the declared "
        "scalars as variables. Matrices are passed in the order of size's parameters (else by name), scalars as a "
        "table. Example: colsum = kernel{args = {a = \"matrix\", s = \"matrix\", scale = \"float\"}, size = "
        "function(a, s) return a.cols end, glsl = [[float acc = 0.0; for (uint i = 1; i <= rows(a); ++i) acc += "
        "at(a, i, id() + 1); set(s, 1, id() + 1, scale * acc);]]}; colsum(a, s, {scale = 2})");
    doc("kernel_info", "kernel_info(f) -> {name, kind, signature, matrices, scalars, compiled, compile_ms, glsl}",
        "What vela knows of a kernel made by map or kernel: its argument order, how its SPIR-V was found this session "
        "(\"compiled\", from \"memory\", or from the \"disk\" cache), the time that took, and the whole GLSL it "
        "compiled (the preamble vela wrote around your text).");
}

}  // namespace vela::lua

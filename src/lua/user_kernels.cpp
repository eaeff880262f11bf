// Kernels written at the prompt: map(expr) for elementwise kernels and
// kernel{args =, size =, glsl =} for general ones. Each returns a Lua function
// that checks its arguments in vela's style and runs the compiled SPIR-V on
// the operands' device through the same stream as every built-in kernel.
//
// This file: the constructors and kernel_info. The GLSL vela writes around the
// user's text is src/userk/glsl.cpp, a call's checks user_kernels_call.cpp;
// compilation and its caches are src/userk/compiler.cpp; the dispatch is
// the device's (VulkanDevice::run_user, CpuDevice::run_user).
#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/map_expr.hpp"
#include "core/ops.hpp"
#include "core/user_kernel.hpp"
#include "lua/check.hpp"
#include "lua/observe.hpp"
#include "lua/user_kernels.hpp"

namespace vela::lua {

namespace {

using namespace user;

// Bounds on text the GLSL compiler will see (DESIGN.md, "Untrusted input"):
// glslang recurses once per operator of an expression and once per level of
// nesting, so a 20,000-term map overflowed the stack (SIGSEGV) on every device.
// Checked before anything is compiled, with the limits in the message.
constexpr size_t kMaxText = 64 * 1024;  // bytes of the user's text
constexpr int kMaxTerms = 4096;         // names and numbers in one expression (statement)
constexpr int kMaxDepth = 256;          // nesting of ( [ {

void check_bounds(const char* fn, const std::string& text, bool statements) {
    if (text.size() > kMaxText)
        fail("%s: the text is %zu bytes; at most %zu (split the work into several kernels)", fn, text.size(), kMaxText);
    int terms = 0, depth = 0, most_terms = 0, most_depth = 0;
    for (size_t i = 0; i < text.size();) {
        unsigned char c = (unsigned char)text[i];
        if (std::isalnum(c) || c == '_' || c == '.') {
            ++terms;
            while (i < text.size() && (std::isalnum((unsigned char)text[i]) || text[i] == '_' || text[i] == '.')) ++i;
            most_terms = std::max(most_terms, terms);
            continue;
        }
        if (c == '(' || c == '[' || c == '{') most_depth = std::max(most_depth, ++depth);
        if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
        if (statements && (c == ';' || c == '{' || c == '}')) terms = 0;
        ++i;
    }
    if (most_terms > kMaxTerms)
        fail("%s: an expression of %d terms; at most %d in one %s (split it into steps)", fn, most_terms, kMaxTerms,
             statements ? "statement" : "map");
    if (most_depth > kMaxDepth) fail("%s: brackets nested %d deep; at most %d", fn, most_depth, kMaxDepth);
}

// Compiles spec (on top of the stack, as userdata) and replaces it with the kernel function.
// upvalue 2 (size) is pushed by the caller before the spec for general kernels.
void finish(lua_State* L, Spec& s, const char* doc_text, bool has_size) {
    guarded(L, [&] {
        s.source = s.elementwise ? map_source(s) : kernel_source(s);
        s.compiled = userk::compile_user(s.name, s.source, s.user_text);
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
    if (o) check_option_keys(L, o, "map", {"name", "doc"});
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
        check_bounds("map", s.user_text, false);
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
    // An unknown field (a misspelt "sizes", "body") would be ignored silently.
    for (lua_pushnil(L); lua_next(L, 1); lua_pop(L, 1)) {
        const char* k = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : nullptr;
        static const char* const known[] = {"args", "size", "glsl", "name", "doc"};
        bool ok = false;
        for (const char* kn : known) ok |= k && std::strcmp(k, kn) == 0;
        if (!ok)
            lfail(L, "kernel: unknown field %s (expected args, size, glsl, name, doc)",
                  k ? lua_pushfstring(L, "'%s'", k) : luaL_typename(L, -2));
    }
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
        check_bounds("kernel", s.user_text, true);
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
//                    compiled = "compiled" | "memory" | "disk", compile_ms =, glsl = generated source,
//                    cpu = "native" | "driver"}
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
    lua_createtable(L, 0, 10);
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
    doc("map", "map(expr [, {name =, doc =}]) -> f",
        "An elementwise kernel from one GLSL expression, compiled in-process (libshaderc) and cached in memory and "
        "on disk. Free names x, y, z, u, v, w (optionally with digits) are matrices, taken in that order; every other "
        "free name is a float scalar passed by name. f(x, ... [, out] [, {a = 1}]) writes out, or the last input in "
        "place; shapes must match, views are welcome. exp, log, tanh, expm1, log1p, sigmoid, relu, softplus are the "
        "op table's accurate functions. On the cpu the expression runs natively (kernel_info(f).cpu). Example: elu = "
        "map[[x > 0.0 ? x : a * (exp(x) - 1.0)]]; elu(x, y, {a = 1})");
    doc("kernel", "kernel{args = {a = \"matrix\", s = \"float\", ...}, size = n | function(a, ...), glsl = body [, name =, doc =]} -> f",
        "A general compute kernel: glsl is the body of one invocation. vela writes the preamble: id() (0-based "
        "invocation index, 0 ≤ id() < size), rows(a), cols(a), at(a, i, j) and set(a, i, j, v) with 1-based "
        "indices honouring views and transposes (outside the matrix at reads 0, set does nothing), the declared "
        "scalars as variables. Matrices are passed in the order of size's parameters (else by name), scalars as a "
        "table. Example: colsum = kernel{args = {a = \"matrix\", s = \"matrix\", scale = \"float\"}, size = "
        "function(a, s) return a.cols end, glsl = [[float acc = 0.0; for (uint i = 1; i <= rows(a); ++i) acc += "
        "at(a, i, id() + 1); set(s, 1, id() + 1, scale * acc);]]}; colsum(a, s, {scale = 2}). On llvmpipe (lavapipe, "
        "and the cpu) an invocation's loops end after 65,535 iterations in all: such a call is an error, not a cut result. "
        "Ctrl-C stops a running kernel on every device: it reads a stop word at its start and (where loops are "
        "unbounded) in its loops, so the call ends with 'interrupted' within a fraction of a second, its matrices "
        "hold partial values, and the device runs the next kernel whole.");
    doc("kernel_info", "kernel_info(f) -> {name, kind, signature, matrices, scalars, compiled, compile_ms, glsl, cpu}",
        "What vela knows of a kernel made by map or kernel: its argument order, how its SPIR-V was found this session "
        "(\"compiled\", from \"memory\", or from the \"disk\" cache), the time that took, the whole GLSL it "
        "compiled (the preamble vela wrote around your text), and how the cpu runs it: \"native\" (a map "
        "expression as vectorised loops) or \"driver\" (its SPIR-V through lavapipe).");
}

}  // namespace vela::lua

// Calling a kernel written at the prompt: the arguments checked in vela's
// style (count, types, shapes, devices, overlap, the scalars by name), then
// one UserCall for the operands' device (Device::run_user).
#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "core/error.hpp"
#include "core/ops.hpp"
#include "lua/check.hpp"
#include "lua/user_kernels.hpp"

namespace vela::lua::user {

void lfail(lua_State* L, const char* fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    raise(L, msg);
}

namespace {

int spec_gc(lua_State* L) {
    auto* s = static_cast<Spec*>(luaL_checkudata(L, 1, kSpecType));
    s->~Spec();
    return 0;
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

}  // namespace

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

}  // namespace vela::lua::user

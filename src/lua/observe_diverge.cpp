// diverge: each kernel a function calls re-run on copies of its inputs on a
// reference device and compared (the hook is observe.cpp's).
#include <cmath>
#include <vector>

#include "core/ops.hpp"
#include "core/registry.hpp"
#include "lua/check.hpp"
#include "lua/observe_hook.hpp"
#include "lua/text.hpp"
#include "lua/vela.hpp"

namespace vela::lua::observe {

namespace {

std::string shape(const Matrix& m) { return format("%lld×%lld", (long long)m.rows, (long long)m.cols); }

// Largest differences of `got` from `want`; fills d when beyond tolerance (or records the worst).
bool differs(Observer& o, const std::vector<float>& got, const std::vector<float>& want, int64_t rows, Divergence& d) {
    double amax = 0, refmax = 0;
    size_t at = 0;
    bool nan = false;
    for (size_t k = 0; k < want.size(); k++) refmax = std::max(refmax, std::fabs(double(want[k])));
    for (size_t k = 0; k < want.size(); k++) {
        double a = got[k], b = want[k];
        if (std::isnan(a) && std::isnan(b)) continue;
        double diff = std::isnan(a) || std::isnan(b) ? INFINITY : std::fabs(a - b);
        if (diff > amax || (!nan && std::isinf(diff))) {
            amax = diff, at = k;
            nan = std::isinf(diff);
        }
    }
    d.max_abs = amax;
    d.max_rel = refmax > 0 ? amax / refmax : (amax > 0 ? INFINITY : 0);
    if (!want.empty()) {
        d.value = got[at], d.ref_value = want[at];
        d.row = rows > 0 ? int64_t(at) % rows + 1 : 1;
        d.col = rows > 0 ? int64_t(at) / rows + 1 : 1;
    }
    return amax > o.atol + o.rtol * refmax;
}

int sentinel_key;  // the error value diverge raises to stop fn at the first divergence

}  // namespace

// Copies the kernel's matrix arguments to the reference device (the host waits for them).
void snapshot(lua_State* L, lua_Debug* ar, Observer& o, Frame& fr) {
    lua_getinfo(L, "r", ar);
    fr.narg = ar->ntransfer;
    for (int i = 1; i <= fr.narg; i++) {
        if (!lua_getlocal(L, ar, i)) break;
        Matrix* m = test_matrix(L, -1);
        if (m && m->buf && !m->buf->released()) {  // (a released one: the kernel itself says so)
            const void* ud = lua_touserdata(L, -1);
            Copy c;
            c.arg = i, c.ud = ud, c.original = *m;
            for (const Copy& prev : fr.copies)
                if (prev.ud == ud) c.copy = prev.copy;
            if (!c.copy.buf) c.copy = guarded(L, [&] { return to_device(*m, *o.ref); });
            fr.copies.push_back(std::move(c));
        }
        lua_pop(L, 1);
    }
}

// The planted divergence: the first element of the kernel's matrix result
// becomes v·(1 + 1e-2) + 1e-2.
void perturb(lua_State* L, lua_Debug* ar, Observer& o, const Frame& fr) {
    if (o.perturb_kernel != fr.kernel) return;
    lua_getinfo(L, "r", ar);
    if (ar->ntransfer < 1 || !lua_getlocal(L, ar, ar->ftransfer)) return;
    Matrix* m = test_matrix(L, -1);
    if (m && m->buf && !m->empty() && m->dtype() == DType::f32 && m->device().name() == o.perturb_device) {
        guarded(L, [&] {
            Matrix first = *m;
            first.rows = first.cols = 1;
            float v = 0;
            first.device().download(first, &v);
            v = v * 1.01f + 0.01f;
            first.device().upload(first, &v);
        });
    }
    lua_pop(L, 1);
}

namespace {

// After the kernel ran on the current device: the same call on the copies, then compare.
// Compares one kernel's output with the reference device's; true when it
// diverges (o.first says how). Raises no error of its own, so that its
// locals are destroyed before check_kernel raises.
bool compare_kernel(lua_State* L, lua_Debug* ar, Observer& o, Frame& fr) {
    lua_getinfo(L, "r", ar);
    int fres = ar->ftransfer, nres = ar->ntransfer;
    lua_getinfo(L, "f", ar);  // the kernel itself (a closure keeps its upvalues)
    for (int i = 1; i <= fr.narg; i++) {
        const Copy* c = nullptr;
        for (const Copy& k : fr.copies)
            if (k.arg == i) c = &k;
        if (c)
            push_matrix(L, c->copy);
        else if (!lua_getlocal(L, ar, i))
            lua_pushnil(L);
    }
    lua_call(L, fr.narg, 1);  // on the reference device; an error there ends diverge with it
    int refres = lua_gettop(L);
    o.checked++;
    Divergence d;
    d.kernel = fr.kernel, d.inner = fr.at.inner, d.user = fr.at.user;
    for (const Copy& c : fr.copies) d.shapes += (d.shapes.empty() ? "" : ", ") + shape(c.original);
    bool bad = false;
    if (lua_type(L, refres) == LUA_TNUMBER && nres >= 1 && lua_getlocal(L, ar, fres)) {
        double got = lua_tonumber(L, -1), want = lua_tonumber(L, refres);
        lua_pop(L, 1);
        std::vector<float> g{float(got)}, w{float(want)};
        bad = differs(o, g, w, 1, d);
        d.value = got, d.ref_value = want;
        d.output = "result";
    } else {
        Matrix* want_m = test_matrix(L, refres);
        if (want_m && nres >= 1 && lua_getlocal(L, ar, fres)) {  // a new matrix, not one of the arguments
            Matrix* got_m = test_matrix(L, -1);
            bool arg = false;
            for (const Copy& c : fr.copies) arg |= c.ud == lua_touserdata(L, -1);
            if (got_m && !arg && got_m->buf && want_m->buf && got_m->size() == want_m->size()) {
                std::vector<float> got = guarded(L, [&] { return to_host(*got_m); });
                std::vector<float> want = guarded(L, [&] { return to_host(*want_m); });
                bad = differs(o, got, want, got_m->rows, d);
                d.output = "result";
            }
            lua_pop(L, 1);
        }
        for (size_t k = 0; k < fr.copies.size() && !bad; k++) {
            const Copy& c = fr.copies[k];
            bool dup = false;
            for (size_t j = 0; j < k; j++) dup |= fr.copies[j].ud == c.ud;
            if (dup || c.original.buf->released()) continue;
            Divergence e = d;
            std::vector<float> got = guarded(L, [&] { return to_host(c.original); });
            std::vector<float> want = guarded(L, [&] { return to_host(c.copy); });
            bad = differs(o, got, want, c.original.rows, e);
            e.output = format("argument %d", c.arg);
            if (bad || e.max_rel > d.max_rel || d.output.empty()) d = e;
        }
    }
    lua_settop(L, refres - 1);
    if (bad) {
        d.found = true;
        o.first = d;
        return true;
    }
    if (!o.worst.found && (o.worst.kernel.empty() || d.max_rel > o.worst.max_rel)) o.worst = d;
    return false;
}

}  // namespace

void check_kernel(lua_State* L, lua_Debug* ar, Observer& o, Frame& fr) {
    if (!compare_kernel(L, ar, o, fr)) return;
    lua_pushlightuserdata(L, &sentinel_key);  // diverge's pcall tells this from an error
    lua_error(L);
}

namespace {

std::string num(double v) {
    if (std::isinf(v)) return "inf";
    return format("%.3g", v);
}

/* ---------------------------------------------------------------------- */
/* diverge                                                                */
/* ---------------------------------------------------------------------- */

void push_divergence(lua_State* L, const Divergence& d) {
    lua_pushstring(L, d.kernel.c_str()), lua_setfield(L, -2, "kernel");
    lua_pushstring(L, d.inner.c_str()), lua_setfield(L, -2, "line");
    lua_pushstring(L, d.user.c_str()), lua_setfield(L, -2, "user_line");
    lua_pushstring(L, d.shapes.c_str()), lua_setfield(L, -2, "shapes");
    lua_pushstring(L, d.output.c_str()), lua_setfield(L, -2, "output");
    lua_pushnumber(L, d.max_abs), lua_setfield(L, -2, "max_abs");
    lua_pushnumber(L, d.max_rel), lua_setfield(L, -2, "max_rel");
    lua_pushinteger(L, d.row), lua_setfield(L, -2, "row");
    lua_pushinteger(L, d.col), lua_setfield(L, -2, "col");
    lua_pushnumber(L, d.value), lua_setfield(L, -2, "value");
    lua_pushnumber(L, d.ref_value), lua_setfield(L, -2, "ref_value");
}

std::string where_text(const Divergence& d) {
    if (d.user.empty() || d.user == d.inner) return d.inner;
    return d.inner + " (called from " + d.user + ")";
}

void end_diverge(lua_State* L) {
    Observer& o = obs();
    o.diverge = false;
    o.stack.clear();
    o.done = Frame{};  // its copies are device matrices: none may outlive diverge
    install(L);
}

}  // namespace

// diverge(fn [, {ref = "cpu", rtol = 1e-4, atol = 0}])
int l_diverge(lua_State* L) {
    check_nargs(L, 2);
    luaL_checktype(L, 1, LUA_TFUNCTION);
    Observer& o = obs();
    if (o.diverge || o.trace) luaL_error(L, "diverge: already inside diverge or trace (they do not nest)");
    Device* ref = nullptr;
    double rtol = 1e-4, atol = 0;
    if (!lua_isnoneornil(L, 2)) {
        luaL_checktype(L, 2, LUA_TTABLE);
        check_option_keys(L, 2, "diverge", {"ref", "rtol", "atol"});
        if (lua_getfield(L, 2, "ref") == LUA_TSTRING) {
            std::string spec = lua_tostring(L, -1);
            ref = guarded(L, [&] {
                try {
                    return &get_device(spec);
                } catch (const Error& e) {
                    std::string m = e.what();
                    if (m.rfind("device: ", 0) == 0) m = m.substr(8);
                    throw Error("diverge: ref: " + m);
                }
            });
        } else if (!lua_isnil(L, -1)) {
            ref = test_device(L, -1);
            if (!ref) luaL_error(L, "diverge: ref must be a device or a device name, got %s", luaL_typename(L, -1));
        }
        lua_pop(L, 1);
        if (lua_getfield(L, 2, "rtol") != LUA_TNIL) {
            if (!lua_isnumber(L, -1) || lua_tonumber(L, -1) < 0)
                luaL_error(L, "diverge: rtol must be a number >= 0, got %s", luaL_tolstring(L, -1, nullptr));
            rtol = lua_tonumber(L, -1);
        }
        if (lua_getfield(L, 2, "atol") != LUA_TNIL) {
            if (!lua_isnumber(L, -1) || lua_tonumber(L, -1) < 0)
                luaL_error(L, "diverge: atol must be a number >= 0, got %s", luaL_tolstring(L, -1, nullptr));
            atol = lua_tonumber(L, -1);
        }
        lua_settop(L, 2);
    }
    Device& cur = guarded(L, []() -> Device& { return current_device(); });
    if (!ref) ref = guarded(L, [] { return &get_device("cpu"); });
    if (ref == &cur)
        luaL_error(L, "diverge: the reference device %s is the current device; switch to the device to check "
                      "(device(\"vulkan:0\")) or pass another ref ({ref = \"vulkan:0\"})",
                   cur.name().c_str());
    sync_all(L);
    o.ref = ref, o.cur = &cur, o.rtol = rtol, o.atol = atol, o.checked = 0;
    o.first = Divergence{}, o.worst = Divergence{};
    o.moddir = module_dir(L);
    o.stack.clear();
    o.diverge = true;
    install(L);
    lua_pushvalue(L, 1);
    int status = lua_pcall(L, 0, 0, 0);
    end_diverge(L);
    bool found = status != LUA_OK && lua_touserdata(L, -1) == &sentinel_key;
    if (status != LUA_OK && !found) return lua_error(L);
    lua_settop(L, 2);
    std::string text, cname = cur.name(), rname = ref->name();
    lua_createtable(L, 0, 16);
    lua_pushboolean(L, found), lua_setfield(L, -2, "diverged");
    lua_pushstring(L, cname.c_str()), lua_setfield(L, -2, "device");
    lua_pushstring(L, rname.c_str()), lua_setfield(L, -2, "ref");
    lua_pushinteger(L, lua_Integer(o.checked)), lua_setfield(L, -2, "kernels");
    if (found) {
        const Divergence& d = o.first;
        push_divergence(L, d);
        text = format("diverged at kernel %llu of %s vs %s: %s at %s\n", (unsigned long long)o.checked, cname.c_str(),
                      rname.c_str(), d.kernel.c_str(), where_text(d).c_str()) +
               format("  shapes %s; %s differs by up to %s (abs), %s (rel. to max |ref|)\n", d.shapes.c_str(),
                      d.output.c_str(), num(d.max_abs).c_str(), num(d.max_rel).c_str()) +
               format("  largest at (%lld, %lld): %.9g on %s, %.9g on %s", (long long)d.row, (long long)d.col, d.value,
                      cname.c_str(), d.ref_value, rname.c_str());
    } else if (o.checked == 0) {
        text = "no kernel ran: nothing to compare";
    } else {
        const Divergence& w = o.worst;
        lua_createtable(L, 0, 11);
        push_divergence(L, w);
        lua_setfield(L, -2, "worst");
        text = format("all %llu kernels agreed (%s vs %s, rtol %g, atol %g); worst: %s at %s, %s abs, %s rel",
                      (unsigned long long)o.checked, cname.c_str(), rname.c_str(), rtol, atol, w.kernel.c_str(),
                      where_text(w).c_str(), num(w.max_abs).c_str(), num(w.max_rel).c_str());
    }
    set_report(L, "vela.Diverge", text);
    return 1;
}

/* ---------------------------------------------------------------------- */
/* trace                                                                  */
/* ---------------------------------------------------------------------- */
}  // namespace vela::lua::observe

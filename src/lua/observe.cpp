// One Lua call hook for the tools that watch a function run: profile's kernel
// names, trace (host waits, transfers, submissions by source line) and diverge
// (each kernel re-run on copies of its inputs on a reference device).
//
// The hook sees every call and return. A C function is a kernel when its
// pointer is in the table kernels.cpp registered (note_kernels), whatever
// local name the Lua code gave it. Lua runs hooks with hooks off, so the
// reference run of a kernel inside the hook is not observed again.
#include "lua/observe.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <vector>

#include "core/ops.hpp"
#include "core/registry.hpp"
#include "lua/check.hpp"
#include "lua/text.hpp"
#include "lua/vela.hpp"

namespace vela::lua {

namespace {

constexpr const char* kKernels = "vela.kernels";  // registry: kernel function value → its name
constexpr const char* kUserKernels = "vela.kernels.user";  // the same for user kernels (weak keys)

std::vector<std::string>& kernel_names() {
    static std::vector<std::string> names;
    return names;
}

// The kernel name of the function on top of the stack (popped), or nullptr.
// By function value, so closures sharing one C function keep their names.
bool kernels_fresh = false;  // the registry table matches the module (refresh_kernels)
void refresh_kernels(lua_State* L);

const char* kernel_name(lua_State* L) {
    if (!kernels_fresh) refresh_kernels(L);
    int fn = lua_gettop(L);
    const char* name = nullptr;
    // The built-in kernels, then the kernels written at the prompt (note_user_kernel);
    // the names stay alive in those registry tables.
    for (const char* table : {kKernels, kUserKernels}) {
        if (lua_getfield(L, LUA_REGISTRYINDEX, table) == LUA_TTABLE) {
            lua_pushvalue(L, fn);
            lua_rawget(L, -2);
            name = lua_tostring(L, -1);
        }
        lua_settop(L, fn);
        if (name) break;
    }
    lua_settop(L, fn - 1);
    return name;
}

// Device counters summed over every open device.
struct Totals {
    uint64_t dispatches = 0, submissions = 0, waits = 0, uploads = 0, upload_bytes = 0, downloads = 0,
             download_bytes = 0;
    double wait_s = 0;
};
Totals totals() {
    Totals t;
    for (Device* d : vela::open_devices()) {
        DeviceStats s = d->stats();
        t.dispatches += s.dispatches, t.submissions += s.submissions, t.waits += s.host_waits;
        t.uploads += s.uploads, t.upload_bytes += s.upload_bytes;
        t.downloads += s.downloads, t.download_bytes += s.download_bytes;
        t.wait_s += s.wait_seconds;
    }
    return t;
}

struct TraceRow {
    std::string line;
    uint64_t waits = 0, submissions = 0, uploads = 0, upload_bytes = 0, downloads = 0, download_bytes = 0;
    double wait_s = 0;
    uint64_t order = 0;  // first seen
};

// One argument of the kernel being checked: its copy on the reference device.
struct Copy {
    int arg = 0;               // 1-based argument index
    const void* ud = nullptr;  // the userdata (the same one twice shares a copy)
    Matrix original, copy;
};

struct Divergence {
    bool found = false;
    std::string kernel, inner, user, shapes;
    double max_abs = 0, max_rel = 0, value = 0, ref_value = 0;
    int64_t row = 0, col = 0;  // 1-based, of the largest absolute difference
    std::string output;        // which argument ("argument 3", "result")
};

struct Frame {
    lua_CFunction f = nullptr;
    const char* kernel = nullptr;
    std::string line;  // trace: the user's line that called it
    int narg = 0;
    Where at;  // diverge: where the kernel was called
    std::vector<Copy> copies;
};

struct Observer {
    bool label = false, trace = false, diverge = false;
    std::vector<Frame> stack;
    // The kernel being checked by diverge: kept here, not in a local of the
    // hook, because a divergence (or an error on the reference device) leaves
    // the hook by longjmp, which runs no destructor.
    Frame done;
    uint64_t next_call = 1;
    std::string moddir;  // "@/…/lua/vela/": sources of vela's own modules
    // trace
    Totals last;
    std::map<std::string, TraceRow> rows;
    uint64_t seen = 0;
    // diverge
    Device* ref = nullptr;
    Device* cur = nullptr;
    double rtol = 1e-4, atol = 0;
    uint64_t checked = 0;
    Divergence first, worst;  // worst: the largest relative difference among kernels that agreed
    // VELA_PERTURB="kernel@device" (tests): while the hook is on (diverge,
    // trace, profile, compare's warm-up; the shell clears hooks after each
    // call), that kernel's result on that device gets its first element
    // changed, a planted divergence.
    std::string perturb_kernel, perturb_device;
    // compare's row check
    Device* guard = nullptr;
    std::string stray;
    bool any() const { return label || trace || diverge || guard || !perturb_kernel.empty(); }
};

Observer& obs() {
    static Observer o;
    return o;
}

// The directory of vela's Lua modules, as a chunk source prefix ("@/…/vela/").
std::string module_dir(lua_State* L) {
    std::string dir;
    lua_getglobal(L, "package");
    if (lua_istable(L, -1)) {
        lua_getfield(L, -1, "searchpath");
        lua_pushliteral(L, "vela.nn");
        lua_getfield(L, -3, "path");
        if (lua_isfunction(L, -3) && lua_pcall(L, 2, 1, 0) == LUA_OK && lua_isstring(L, -1)) {
            std::string p = lua_tostring(L, -1);
            size_t slash = p.rfind('/');
            if (slash != std::string::npos) dir = "@" + p.substr(0, slash + 1);
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return dir;
}

void account(Observer& o) {
    Totals now = totals();
    Totals d;
    d.submissions = now.submissions - o.last.submissions;
    d.waits = now.waits - o.last.waits;
    d.uploads = now.uploads - o.last.uploads, d.upload_bytes = now.upload_bytes - o.last.upload_bytes;
    d.downloads = now.downloads - o.last.downloads, d.download_bytes = now.download_bytes - o.last.download_bytes;
    d.wait_s = now.wait_s - o.last.wait_s;
    o.last = now;
    if (!d.submissions && !d.waits && !d.uploads && !d.downloads && d.wait_s <= 0) return;
    const std::string& line = o.stack.empty() ? std::string("(outside a call)") : o.stack.back().line;
    TraceRow& r = o.rows[line];
    if (r.line.empty()) r.line = line, r.order = ++o.seen;
    r.submissions += d.submissions, r.waits += d.waits;
    r.uploads += d.uploads, r.upload_bytes += d.upload_bytes;
    r.downloads += d.downloads, r.download_bytes += d.download_bytes;
    r.wait_s += d.wait_s;
}

std::string shape(const Matrix& m) { return format("%lld×%lld", (long long)m.rows, (long long)m.cols); }

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

void check_kernel(lua_State* L, lua_Debug* ar, Observer& o, Frame& fr) {
    if (!compare_kernel(L, ar, o, fr)) return;
    lua_pushlightuserdata(L, &sentinel_key);  // diverge's pcall tells this from an error
    lua_error(L);
}

void hook(lua_State* L, lua_Debug* ar) {
    Observer& o = obs();
    if (!o.any()) return;
    bool call = ar->event == LUA_HOOKCALL || ar->event == LUA_HOOKTAILCALL;
    if (!call && ar->event != LUA_HOOKRET) return;
    lua_getinfo(L, "f", ar);
    lua_CFunction f = lua_tocfunction(L, -1);
    if (!f) {  // a Lua function
        lua_pop(L, 1);
        return;
    }
    if (call) {
        if (o.trace) account(o);
        Frame fr;
        fr.f = f;
        fr.kernel = kernel_name(L);
        if (fr.kernel && o.guard && o.stray.empty()) {
            lua_getinfo(L, "r", ar);
            for (int i = 1, n = ar->ntransfer; i <= n && o.stray.empty(); i++) {
                if (!lua_getlocal(L, ar, i)) break;
                Matrix* m = test_matrix(L, -1);
                if (m && m->buf && !m->buf->released() && &m->device() != o.guard) {
                    if (o.moddir.empty()) o.moddir = module_dir(L);
                    Where w = where(L, 1);
                    o.stray = format("%s at %s with a matrix on %s", fr.kernel,
                                     (w.user == w.inner ? w.inner : w.inner + " (called from " + w.user + ")").c_str(),
                                     m->device().name().c_str());
                }
                lua_pop(L, 1);
            }
        }
        if (o.trace || (o.diverge && fr.kernel)) {
            fr.at = where(L, 1);
            fr.line = fr.at.user;
        }
        if (fr.kernel && o.label) current_call() = KernelCall{fr.kernel, o.next_call++};
        o.stack.push_back(std::move(fr));
        if (o.diverge && o.stack.back().kernel) snapshot(L, ar, o, o.stack.back());
        return;
    }
    lua_pop(L, 1);
    // A return: frames above the matching one were left by errors.
    while (!o.stack.empty() && o.stack.back().f != f) o.stack.pop_back();
    if (o.stack.empty()) return;
    Frame& fr = o.stack.back();
    if (fr.kernel && !o.perturb_kernel.empty()) perturb(L, ar, o, fr);
    if (o.trace) account(o);
    if (fr.kernel && o.label) current_call() = KernelCall{};
    if (fr.kernel && o.diverge) {
        o.done = std::move(fr);
        o.stack.pop_back();
        check_kernel(L, ar, o, o.done);
        return;
    }
    o.stack.pop_back();
}

// The kernel table by function value, from the module as it is now: a later
// area may take a name over (sum(x [, dim]) replaces the kernel sum(x)).
void refresh_kernels(lua_State* L) {
    lua_newtable(L);
    lua_getfield(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
    lua_getfield(L, -1, "vela");
    kernels_fresh = lua_istable(L, -1);  // not yet while the module is being opened
    if (kernels_fresh)
        for (const std::string& name : kernel_names()) {
            if (lua_getfield(L, -1, name.c_str()) == LUA_TFUNCTION) {
                lua_pushstring(L, name.c_str());
                lua_rawset(L, -5);
            } else {
                lua_pop(L, 1);
            }
        }
    lua_pop(L, 2);
    lua_setfield(L, LUA_REGISTRYINDEX, kKernels);
}

void install(lua_State* L) {
    Observer& o = obs();
    kernels_fresh = false;  // looked up again at the next kernel call
    if (o.any())
        lua_sethook(L, hook, LUA_MASKCALL | LUA_MASKRET, 0);
    else
        lua_sethook(L, nullptr, 0, 0);
}

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

int l_trace(lua_State* L) {
    check_nargs(L, 1);
    luaL_checktype(L, 1, LUA_TFUNCTION);
    Observer& o = obs();
    if (o.diverge || o.trace) luaL_error(L, "trace: already inside diverge or trace (they do not nest)");
    guarded(L, [] { current_device(); });
    sync_all(L);
    o.moddir = module_dir(L);
    o.rows.clear();
    o.seen = 0;
    o.stack.clear();
    o.last = guarded(L, totals);
    o.trace = true;
    install(L);
    lua_pushvalue(L, 1);
    int status = lua_pcall(L, 0, 0, 0);
    o.trace = false;
    o.stack.clear();
    install(L);
    if (status != LUA_OK) return lua_error(L);
    // Work fn queued but left unsubmitted: submitted now, on a row of its own.
    Frame end;
    end.line = "(end of fn: queued work submitted)";
    o.stack.push_back(std::move(end));
    guarded(L, [&] {
        for (Device* d : vela::open_devices()) d->flush();
        account(o);
    });
    o.stack.clear();
    std::vector<TraceRow> rows;
    for (auto& [_, r] : o.rows) rows.push_back(r);
    o.rows.clear();
    std::sort(rows.begin(), rows.end(), [](const TraceRow& a, const TraceRow& b) {
        if (a.waits != b.waits) return a.waits > b.waits;
        if (a.wait_s != b.wait_s) return a.wait_s > b.wait_s;
        if (a.downloads + a.uploads != b.downloads + b.uploads) return a.downloads + a.uploads > b.downloads + b.uploads;
        return a.order < b.order;
    });
    std::vector<std::vector<std::string>> table = {
        {"line", "waits", "wait ms", "downloads", "uploads", "submits"}};
    char b1[32], b2[32];
    lua_createtable(L, int(rows.size()), 0);
    for (size_t k = 0; k < rows.size(); k++) {
        const TraceRow& r = rows[k];
        table.push_back({r.line, std::to_string(r.waits), format("%.3f", r.wait_s * 1e3),
                         r.downloads ? format("%llu (%s)", (unsigned long long)r.downloads,
                                              format_bytes(b1, sizeof b1, r.download_bytes))
                                     : "0",
                         r.uploads ? format("%llu (%s)", (unsigned long long)r.uploads,
                                            format_bytes(b2, sizeof b2, r.upload_bytes))
                                   : "0",
                         std::to_string(r.submissions)});
        lua_createtable(L, 0, 8);
        lua_pushstring(L, r.line.c_str()), lua_setfield(L, -2, "line");
        lua_pushinteger(L, lua_Integer(r.waits)), lua_setfield(L, -2, "waits");
        lua_pushnumber(L, r.wait_s), lua_setfield(L, -2, "wait_seconds");
        lua_pushinteger(L, lua_Integer(r.downloads)), lua_setfield(L, -2, "downloads");
        lua_pushinteger(L, lua_Integer(r.download_bytes)), lua_setfield(L, -2, "download_bytes");
        lua_pushinteger(L, lua_Integer(r.uploads)), lua_setfield(L, -2, "uploads");
        lua_pushinteger(L, lua_Integer(r.upload_bytes)), lua_setfield(L, -2, "upload_bytes");
        lua_pushinteger(L, lua_Integer(r.submissions)), lua_setfield(L, -2, "submissions");
        lua_rawseti(L, -2, lua_Integer(k + 1));
    }
    std::string text = rows.empty() ? "no host waits, transfers or submissions"
                                    : table_text(table, {false, true, true, true, true, true});
    while (!text.empty() && text.back() == '\n') text.pop_back();
    set_report(L, "vela.Trace", text);
    return 1;
}

}  // namespace

// The table on top gets a metatable that prints it as `text` (and names it).
void set_report(lua_State* L, const char* name, std::string text) {
    while (!text.empty() && text.back() == '\n') text.pop_back();
    lua_createtable(L, 0, 2);
    lua_pushlstring(L, text.data(), text.size());
    lua_pushcclosure(L, [](lua_State* L) -> int {
        lua_pushvalue(L, lua_upvalueindex(1));
        return 1;
    }, 1);
    lua_setfield(L, -2, "__tostring");
    lua_pushstring(L, name);
    lua_setfield(L, -2, "__name");
    lua_setmetatable(L, -2);
}

void note_user_kernel(lua_State* L, int idx, const char* name) {
    idx = lua_absindex(L, idx);
    push_weak_table(L, kUserKernels);
    lua_pushvalue(L, idx);
    lua_pushstring(L, name);
    lua_rawset(L, -3);
    lua_pop(L, 1);
}

void note_kernels(lua_State* L, const luaL_Reg* list) {
    (void)L;
    for (; list->name; ++list) kernel_names().push_back(list->name);
}

void guard_begin(lua_State* L, Device* dev) {
    obs().guard = dev;
    obs().stray.clear();
    install(L);
}

std::string guard_end(lua_State* L) {
    Observer& o = obs();
    o.guard = nullptr;
    install(L);
    return std::move(o.stray);
}

void label_kernels(lua_State* L, bool on) {
    obs().label = on;
    if (!on) current_call() = KernelCall{};
    install(L);
}

Where where(lua_State* L, int level) {
    Where w;
    const std::string& mod = obs().moddir;
    lua_Debug ar;
    for (int l = level; lua_getstack(L, l, &ar); l++) {
        if (!lua_getinfo(L, "Sl", &ar) || ar.currentline <= 0) continue;
        bool ours = !mod.empty() && std::string(ar.source).rfind(mod, 0) == 0;
        // vela's own modules by their module path: "vela/nn.lua:150".
        std::string file = ours ? "vela/" + std::string(ar.source + mod.size()) : std::string(ar.short_src);
        std::string at = file + ":" + std::to_string(ar.currentline);
        if (w.inner.empty()) w.inner = at;
        if (!ours) {
            w.user = at;
            break;
        }
    }
    if (w.user.empty()) w.user = w.inner;
    if (w.inner.empty()) w.inner = w.user = "?";
    return w;
}

// clang-format off
static const luaL_Reg functions[] = {
    {"diverge", l_diverge},
    {"trace", l_trace},
    {nullptr, nullptr}};
// clang-format on

void open_observe(lua_State* L) {
    luaL_setfuncs(L, functions, 0);
    if (const char* p = std::getenv("VELA_PERTURB")) {
        std::string spec = p;
        size_t at = spec.find('@');
        if (at != std::string::npos && at > 0) {
            obs().perturb_kernel = spec.substr(0, at);
            obs().perturb_device = spec.substr(at + 1);
            install(L);
        }
    }
    doc("diverge",
        "diverge(fn [, {ref = \"cpu\", rtol = 1e-4, atol = 0}]) -> {diverged=, kernel=, line=, user_line=, shapes=, "
        "max_abs=, max_rel=, row=, col=, kernels=, worst=}",
        "Runs fn on the current device and every kernel it calls again on copies of that kernel's inputs on ref; "
        "stops at the first kernel whose output differs by more than atol + rtol·max|ref output| and reports the "
        "kernel, the line that called it (and the user's line when that was inside nn or optim), the shapes, the "
        "largest absolute and relative difference and where; else that all kernels agreed, with the worst. "
        "Example: device(\"vulkan:0\"); x = rand(64, 64, 1); y = zeros(64, 64); "
        "diverge(function() tanh(x, y) end)");
    doc("trace", "trace(fn) -> {{line=, waits=, wait_seconds=, downloads=, download_bytes=, uploads=, upload_bytes=, "
        "submissions=}, ...}",
        "Runs fn and lists every host wait, download, upload (with bytes) and submission it caused, by the Lua line "
        "that caused it (the user's line, past nn and optim), most waits first. On the cpu a read is a wait of zero "
        "cost. Example: x = rand(100, 1, 1); trace(function() for i = 1, 10 do scal(0.5, x); local s = sum(x) "
        "end end)");
}

}  // namespace vela::lua

// One Lua call hook for the tools that watch a function run: profile's kernel
// names, trace (host waits, transfers, submissions by source line) and diverge
// (each kernel re-run on copies of its inputs on a reference device).
//
// The hook sees every call and return. A C function is a kernel when its
// pointer is in the table kernels.cpp registered (note_kernels), whatever
// local name the Lua code gave it. Lua runs hooks with hooks off, so the
// reference run of a kernel inside the hook is not observed again.
//
// The tools themselves: observe_diverge.cpp, observe_trace.cpp; the state they
// share with the hook: observe_hook.hpp.
#include "lua/observe.hpp"

#include <cstdlib>
#include <vector>

#include "core/ops.hpp"
#include "core/registry.hpp"
#include "lua/check.hpp"
#include "lua/observe_hook.hpp"
#include "lua/text.hpp"
#include "lua/vela.hpp"

namespace vela::lua {

namespace observe {

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

}  // namespace

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
            if (slash != std::string::npos) dir.assign(1, '@').append(p, 0, slash + 1);
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return dir;
}

namespace {

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

}  // namespace

namespace {

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

}  // namespace

void install(lua_State* L) {
    Observer& o = obs();
    kernels_fresh = false;  // looked up again at the next kernel call
    if (o.any())
        lua_sethook(L, hook, LUA_MASKCALL | LUA_MASKRET, 0);
    else
        lua_sethook(L, nullptr, 0, 0);
}

}  // namespace observe

using namespace observe;

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
        std::string file = ours ? std::string("vela/").append(ar.source + mod.size()) : std::string(ar.short_src);
        std::string at = file + ":" + std::to_string(ar.currentline);
        if (w.inner.empty()) w.inner = at;
        if (!ours) {
            w.user = at;
            break;
        }
    }
    if (w.inner.empty()) return Where{"?", "?"};
    if (w.user.empty()) w.user = w.inner;
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

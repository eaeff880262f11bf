// compare: one function run on every device, timed, its results compared
// with the first device's (a row whose kernels ran elsewhere is an error).
#include <algorithm>
#include <cmath>
#include <new>
#include <string>
#include <vector>

#include "core/ops.hpp"
#include "core/registry.hpp"
#include "lua/check.hpp"
#include "lua/observe.hpp"
#include "lua/text.hpp"
#include "lua/vela.hpp"

namespace vela::lua {

// What compare(fn, {inputs = {...}}) moves: matrices (their userdata, in
// place, a fresh copy for each device) and objects with a :to(dev) method
// (networks: moved with it, and back to their device at the end). Other
// tables (an optimizer, a list) are searched for both.
struct Inputs {
    struct Slot {
        Matrix* m;
        Matrix original;
    };
    std::vector<Slot> matrices;
    std::vector<std::pair<int, Device*>> movables;  // registry refs of objects with :to, and their home device
};

static Device* first_device(lua_State* L, int idx, int depth) {
    if (Matrix* m = test_matrix(L, idx)) return m->buf ? &m->device() : nullptr;
    if (!lua_istable(L, idx) || depth > 4) return nullptr;
    idx = lua_absindex(L, idx);
    Device* d = nullptr;
    lua_pushnil(L);
    while (!d && lua_next(L, idx)) {
        d = first_device(L, -1, depth + 1);
        lua_pop(L, 1);
    }
    if (d) lua_pop(L, 1);
    return d;
}

static void collect_inputs(lua_State* L, int idx, Inputs& in, int seen, int depth) {
    idx = lua_absindex(L, idx);
    if (Matrix* m = test_matrix(L, idx)) {
        for (const Inputs::Slot& s : in.matrices)
            if (s.m == m) return;
        in.matrices.push_back({m, *m});
        return;
    }
    if (!lua_istable(L, idx) || depth > 4) return;
    lua_pushvalue(L, idx);
    if (lua_rawget(L, seen) != LUA_TNIL) return lua_pop(L, 1);
    lua_pop(L, 1);
    lua_pushvalue(L, idx), lua_pushboolean(L, 1), lua_rawset(L, seen);
    if (luaL_getmetafield(L, idx, "__index") != LUA_TNIL) {
        lua_pop(L, 1);
        lua_getfield(L, idx, "to");
        bool movable = lua_isfunction(L, -1);
        lua_pop(L, 1);
        if (movable) {
            Device* home = first_device(L, idx, 0);
            lua_pushvalue(L, idx);
            in.movables.push_back({luaL_ref(L, LUA_REGISTRYINDEX), home});
            return;
        }
    }
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        collect_inputs(L, -1, in, seen, depth + 1);
        lua_pop(L, 1);
    }
}

// Moves every input to dev (nullptr: back home). Matrices get a fresh copy of
// their original each time, so every device starts from the same values.
static void move_inputs(lua_State* L, Inputs& in, Device* dev) {
    for (Inputs::Slot& s : in.matrices) {
        if (!dev) {
            *s.m = s.original;
            continue;
        }
        Matrix moved = guarded(L, [&] { return to_device(s.original, *dev); });
        *s.m = std::move(moved);
    }
    for (auto& [ref, home] : in.movables) {
        Device* to = dev ? dev : home;
        if (!to) continue;
        lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
        lua_getfield(L, -1, "to");
        lua_insert(L, -2);
        push_device(L, *to);
        lua_call(L, 2, 0);
    }
}

// compare(fn [, devs | {inputs = {...}, devices = {...}}]): for each device
// (default: every usable one) makes it current, calls fn(dev) once to warm up
// and once timed (synchronised), downloads the matrix fn returns and compares
// it with the first device's. A row whose kernels ran on another device, or
// whose result lives elsewhere, is an error: never a mislabelled row.
static int l_compare(lua_State* L) {
    check_nargs(L, 2);
    luaL_checktype(L, 1, LUA_TFUNCTION);
    lua_settop(L, 2);
    bool has_inputs = false;
    if (lua_istable(L, 2)) {
        // A list of devices, or the options form: any named key makes it the options.
        bool named = false;
        lua_pushnil(L);
        while (!named && lua_next(L, 2)) {
            lua_pop(L, 1);
            if (lua_type(L, -1) == LUA_TSTRING) named = true, lua_pop(L, 1);
        }
        if (named) check_option_keys(L, 2, "compare", {"inputs", "devices"});
        int ti = lua_getfield(L, 2, "inputs");   // 3
        int td = lua_getfield(L, 2, "devices");  // 4
        if (ti != LUA_TNIL || td != LUA_TNIL) {  // the options form
            if (ti != LUA_TNIL && ti != LUA_TTABLE)
                luaL_error(L, "compare: inputs must be a list such as {net, x}, got %s", luaL_typename(L, 3));
            has_inputs = ti != LUA_TNIL;
            lua_replace(L, 2);  // 2: devices (or nil), 3: inputs
        } else {
            lua_pop(L, 2);
            lua_pushnil(L);  // 3: no inputs
        }
    } else {
        lua_pushnil(L);
    }
    if (lua_isnil(L, 2)) {
        std::vector<DeviceInfo> list = guarded(L, [] { return list_devices(); });
        lua_createtable(L, int(list.size()), 0);
        int k = 0;
        for (const DeviceInfo& i : list)
            if (i.usable) lua_pushstring(L, i.id.c_str()), lua_rawseti(L, -2, ++k);
        lua_replace(L, 2);
    }
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_Integer ndev = lua_Integer(lua_rawlen(L, 2));
    if (ndev == 0) luaL_error(L, "compare: devs is empty, expected a list of devices such as {\"cpu\", \"vulkan:0\"}");
    for (lua_Integer k = 1; k <= ndev; k++) {  // every entry resolves before any device is switched
        lua_rawgeti(L, 2, k);
        if (!test_device(L, -1)) luaL_error(L, "compare: devs[%I] is nil, expected a device", k);
        lua_pop(L, 1);
    }
    // Inputs: found once; the Inputs object lives in a userdata so no error leaks it.
    auto* in = new (lua_newuserdatauv(L, sizeof(Inputs), 0)) Inputs();
    if (has_inputs) {
        lua_newtable(L);
        collect_inputs(L, 3, *in, lua_gettop(L), 0);
        lua_pop(L, 1);
    }
    Device& prev = guarded(L, []() -> Device& { return current_device(); });
    lua_newtable(L);  // results
    int results = lua_gettop(L);
    // Every path out of the loop restores the inputs and the current device, then frees `in`.
    auto finish = [&]() {
        if (has_inputs) {
            lua_pushcfunction(L, [](lua_State* L) -> int {
                move_inputs(L, *static_cast<Inputs*>(lua_touserdata(L, 1)), nullptr);
                return 0;
            });
            lua_pushvalue(L, 4);
            if (lua_pcall(L, 1, 0, 0) != LUA_OK) lua_pop(L, 1);  // moving back failed: fn's own error wins
        }
        for (auto& [ref, _] : in->movables) luaL_unref(L, LUA_REGISTRYINDEX, ref);
        in->~Inputs();
        set_current_device(prev);
    };
    const float* ref = nullptr;
    int64_t rrows = 0, rcols = 0;
    double refmax = 0;
    std::string refname;
    for (lua_Integer k = 1; k <= ndev; k++) {
        lua_rawgeti(L, 2, k);
        Device* dev = test_device(L, -1);
        lua_pop(L, 1);
        guarded(L, [&] { set_current_device(*dev); });
        int status = LUA_OK;
        double dt = 0;
        if (has_inputs) {
            lua_pushcfunction(L, [](lua_State* L) -> int {
                move_inputs(L, *static_cast<Inputs*>(lua_touserdata(L, 1)), static_cast<Device*>(lua_touserdata(L, 2)));
                return 0;
            });
            lua_pushvalue(L, 4);
            lua_pushlightuserdata(L, dev);
            status = lua_pcall(L, 2, 0, 0);
        }
        std::string stray;
        for (int pass = 0; pass < 2 && status == LUA_OK; pass++) {
            lua_settop(L, results);
            sync_all(L);
            if (pass == 0) guard_begin(L, dev);  // the warm-up notes kernels on other devices; the timed run is bare
            double t0 = now();
            lua_pushvalue(L, 1);
            push_device(L, *dev);
            status = lua_pcall(L, 1, 1, 0);
            if (pass == 0) {
                stray = guard_end(L);
                if (status == LUA_OK && !stray.empty()) break;
            }
            if (status == LUA_OK) {
                sync_all(L);
                dt = now() - t0;
            }
        }
        if (status != LUA_OK) {
            lua_replace(L, results);  // the error, safe from finish()
            lua_settop(L, results);
            finish();
            return lua_error(L);
        }
        // Kernels that ran on another device than this row's: the row would be mislabelled.
        if (!stray.empty()) {
            std::string a = dev->name();
            finish();
            luaL_where(L, 1);
            lua_pushfstring(L,
                            "compare: the %s row called %s, not on %s: fn uses matrices or a network that live "
                            "elsewhere. Let compare move them to each device: compare(fn, {inputs = {net, x, ...}}), "
                            "or build them in fn from the device it is given (fn(dev))",
                            a.c_str(), stray.c_str(), a.c_str());
            lua_concat(L, 2);
            // lua_error leaves by longjmp, which runs no destructor: free the strings first.
            std::string().swap(stray);
            std::string().swap(a);
            return lua_error(L);
        }
        Matrix* r = test_matrix(L, -1);
        if (!r) {
            std::string a = dev->name();
            const char* t = luaL_typename(L, -1);
            finish();
            return luaL_error(L, "compare: fn must return a matrix, got %s on %s", t, a.c_str());
        }
        if (r->buf && &r->device() != dev) {
            std::string a = dev->name(), b = r->device().name();
            finish();
            return luaL_error(L,
                              "compare: the %s row returned a matrix on %s; a result computed on another device is "
                              "not a row (pass what fn uses as inputs: compare(fn, {inputs = {net, x}}))",
                              a.c_str(), b.c_str());
        }
        int64_t n = r->size();
        auto* host = static_cast<float*>(lua_newuserdatauv(L, size_t(n ? n : 1) * sizeof(float), 0));
        char err[512] = "";
        try {
            std::vector<float> v = to_host(*r);
            std::copy(v.begin(), v.end(), host);
        } catch (const std::exception& e) {
            std::snprintf(err, sizeof err, "compare: %s", e.what());
        }
        if (err[0]) {
            finish();
            return luaL_error(L, "%s", err);
        }
        lua_createtable(L, 0, 5);
        lua_pushstring(L, dev->name().c_str()), lua_setfield(L, -2, "device");
        lua_pushnumber(L, dt), lua_setfield(L, -2, "seconds");
        if (!ref) {
            ref = host, rrows = r->rows, rcols = r->cols, refname = dev->name();
            lua_pushvalue(L, -2);
            lua_setfield(L, results, "reference");  // keeps the reference download alive
            for (int64_t e = 0; e < n; e++) refmax = std::max(refmax, std::fabs(double(ref[e])));
            lua_pushnumber(L, 0), lua_setfield(L, -2, "max_abs");
            lua_pushnumber(L, 0), lua_setfield(L, -2, "max_rel");
        } else if (r->rows != rrows || r->cols != rcols) {
            std::string a = dev->name();
            finish();
            return luaL_error(L, "compare: fn returned %I×%I on %s but %I×%I on %s", lua_Integer(r->rows),
                              lua_Integer(r->cols), a.c_str(), lua_Integer(rrows), lua_Integer(rcols), refname.c_str());
        } else {
            double amax = 0;
            for (int64_t e = 0; e < n; e++) amax = std::max(amax, std::fabs(double(host[e]) - double(ref[e])));
            if (std::isnan(amax)) amax = NAN;
            lua_pushnumber(L, amax), lua_setfield(L, -2, "max_abs");
            lua_pushnumber(L, refmax > 0 ? amax / refmax : amax), lua_setfield(L, -2, "max_rel");
        }
        lua_rawseti(L, results, k);
        lua_settop(L, results);
    }
    finish();
    lua_settop(L, results);
    std::vector<std::vector<std::string>> table = {{"device", "time", "max abs diff", "max rel diff"}};
    for (lua_Integer k = 1; k <= ndev; k++) {
        lua_rawgeti(L, results, k);
        lua_getfield(L, -1, "device");
        lua_getfield(L, -2, "seconds");
        lua_getfield(L, -3, "max_abs");
        lua_getfield(L, -4, "max_rel");
        std::string dev = lua_tostring(L, -4), t = format_seconds(lua_tonumber(L, -3));
        if (k == 1)
            table.push_back({dev, t, "(reference)", ""});
        else
            table.push_back({dev, t, format("%.3g", lua_tonumber(L, -2)), format("%.3g", lua_tonumber(L, -1))});
        lua_pop(L, 5);
    }
    lua_pushnil(L);
    lua_setfield(L, results, "reference");
    set_report(L, "vela.Compare", table_text(table, {false, true, true, true}));
    return 1;
}

void open_compare(lua_State* L) {
    lua_pushcfunction(L, l_compare);
    lua_setfield(L, -2, "compare");
    doc("compare", "compare(fn [, devs | {inputs = {net, x, ...}, devices = devs}]) -> "
        "{{device=, seconds=, max_abs=, max_rel=}, ...}",
        "For each device (default: every usable one) makes it current, calls fn(dev) once to warm up and once "
        "timed (synchronised); fn returns a matrix, compared with the first device's (largest absolute "
        "difference, and that over max |reference|). inputs: matrices (each device gets a fresh copy in the same "
        "userdata), networks (moved with :to) and tables holding them, moved to each device and back afterwards. "
        "A row whose kernels ran on another device, or whose result lives elsewhere, is an error, never a row. "
        "Example: device(\"vulkan:0\"); x, w, c = rand(256, 128, 1), rand(64, 256, 2), zeros(64, 128); "
        "compare(function() return mm(w, x, c) end, {inputs = {w, x, c}})");
}

}  // namespace vela::lua

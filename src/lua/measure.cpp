// Measuring: time, bench, profile and compare. Every timing tool
// synchronises the devices it measures, so a queued GPU never makes a kernel
// look free.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/ops.hpp"
#include "core/registry.hpp"
#include "lua/check.hpp"
#include "lua/text.hpp"
#include "lua/vela.hpp"

namespace vela::lua {

/* ---------------------------------------------------------------------- */
/* time, bench, profile, compare                                          */
/* ---------------------------------------------------------------------- */

// time(fn [, n]): calls fn n times (default 1) between two syncs of every
// open device; returns {seconds =, calls =} (seconds per call), printing as
// "2.043 ms".
static int l_time(lua_State* L) {
    check_nargs(L, 2);
    luaL_checktype(L, 1, LUA_TFUNCTION);
    int64_t n = lua_isnoneornil(L, 2) ? 1 : check_size(L, 2, "time", "n");
    if (n < 1) luaL_error(L, "time: n must be at least 1, got 0");
    sync_all(L);
    double t0 = now();
    for (int64_t k = 0; k < n; k++) {
        lua_pushvalue(L, 1);
        lua_call(L, 0, 0);
    }
    sync_all(L);
    double dt = (now() - t0) / double(n);
    lua_createtable(L, 0, 2);
    lua_pushnumber(L, dt), lua_setfield(L, -2, "seconds");
    lua_pushinteger(L, lua_Integer(n)), lua_setfield(L, -2, "calls");
    set_report(L, n == 1 ? format_seconds(dt) : format_seconds(dt) + format(" per call (%lld calls)", (long long)n));
    return 1;
}

static int bench_tostring(lua_State* L) {
    lua_getfield(L, 1, "median");
    lua_getfield(L, 1, "min");
    lua_getfield(L, 1, "max");
    lua_getfield(L, 1, "n");
    std::string s = "median " + format_seconds(lua_tonumber(L, -4)) + ", min " + format_seconds(lua_tonumber(L, -3)) +
                    ", max " + format_seconds(lua_tonumber(L, -2)) +
                    format(" (n = %lld)", (long long)lua_tointeger(L, -1));
    lua_pushlstring(L, s.data(), s.size());
    return 1;
}

// bench(fn [, {n=, warmup=}]) -> {median=, min=, max=, n=} in seconds; each
// run is synchronised on its own. Without n, runs for about half a second
// (5 to 1000 runs).
static int l_bench(lua_State* L) {
    check_nargs(L, 2);
    luaL_checktype(L, 1, LUA_TFUNCTION);
    int64_t n = 0, warmup = 1;
    if (!lua_isnoneornil(L, 2)) {
        luaL_checktype(L, 2, LUA_TTABLE);
        if (lua_getfield(L, 2, "n") != LUA_TNIL) {
            n = check_size(L, 3, "bench", "n");
            if (n < 1) luaL_error(L, "bench: n must be at least 1, got 0");
        }
        if (lua_getfield(L, 2, "warmup") != LUA_TNIL) warmup = check_size(L, 4, "bench", "warmup");
        lua_settop(L, 2);
    }
    auto run = [&] {
        double t0 = now();
        lua_pushvalue(L, 1);
        lua_call(L, 0, 0);
        sync_all(L);
        return now() - t0;
    };
    sync_all(L);
    double first = 0;
    for (int64_t k = 0; k < warmup; k++) first = run();
    if (n == 0) {
        if (warmup == 0) first = run();
        n = first > 0 ? int64_t(std::ceil(0.5 / first)) : 1000;
        n = std::clamp<int64_t>(n, 5, 1000);
    }
    auto* t = static_cast<double*>(lua_newuserdatauv(L, size_t(n) * sizeof(double), 0));
    for (int64_t k = 0; k < n; k++) t[k] = run();
    std::sort(t, t + n);
    double median = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    lua_createtable(L, 0, 4);
    lua_pushnumber(L, median), lua_setfield(L, -2, "median");
    lua_pushnumber(L, t[0]), lua_setfield(L, -2, "min");
    lua_pushnumber(L, t[n - 1]), lua_setfield(L, -2, "max");
    lua_pushinteger(L, n), lua_setfield(L, -2, "n");
    if (luaL_newmetatable(L, "vela.BenchResult")) {
        lua_pushcfunction(L, bench_tostring);
        lua_setfield(L, -2, "__tostring");
    }
    lua_setmetatable(L, -2);
    return 1;
}

// profile(fn): per-kernel device time of everything fn runs, on every open
// device; prints a table sorted by total time and returns it as a list.
struct ProfileRow {
    std::string device, kernel;
    double ms = 0;
    int64_t calls = 0;
};

// Ends profiling on every open device; per (device, kernel) totals, largest first.
static std::vector<ProfileRow> profile_end_all() {
    std::vector<ProfileRow> rows;
    for (Device* d : vela::open_devices()) {
        std::map<std::string, ProfileRow> by;
        for (const KernelTime& k : d->profile_end()) {
            ProfileRow& r = by[k.kernel];
            r.device = d->name(), r.kernel = k.kernel, r.ms += k.ms, r.calls++;
        }
        for (auto& [_, r] : by) rows.push_back(r);
    }
    std::sort(rows.begin(), rows.end(), [](const ProfileRow& a, const ProfileRow& b) { return a.ms > b.ms; });
    return rows;
}

// Prints the profile and pushes it as a list. Its own frame owns every C++
// object, and the only call that can raise comes before any exists.
static void profile_report(lua_State* L, double wall) {
    std::vector<ProfileRow> rows = guarded(L, profile_end_all);
    double total = 0;
    int64_t calls = 0;
    for (const ProfileRow& r : rows) total += r.ms, calls += r.calls;
    std::vector<std::vector<std::string>> table = {{"kernel", "device", "total ms", "calls", "share"}};
    for (const ProfileRow& r : rows)
        table.push_back({r.kernel, r.device, format("%.3f", r.ms), std::to_string(r.calls),
                         format("%.1f%%", total > 0 ? 100.0 * r.ms / total : 0.0)});
    table.push_back({"total", "", format("%.3f", total), std::to_string(calls), rows.empty() ? "" : "100.0%"});
    std::string report = table_text(table, {false, false, true, true, true}) + "wall time " + format_seconds(wall);
    lua_createtable(L, int(rows.size()), 0);
    for (size_t k = 0; k < rows.size(); k++) {
        lua_createtable(L, 0, 5);
        lua_pushstring(L, rows[k].kernel.c_str()), lua_setfield(L, -2, "kernel");
        lua_pushstring(L, rows[k].device.c_str()), lua_setfield(L, -2, "device");
        lua_pushnumber(L, rows[k].ms), lua_setfield(L, -2, "ms");
        lua_pushinteger(L, rows[k].calls), lua_setfield(L, -2, "calls");
        lua_pushnumber(L, total > 0 ? rows[k].ms / total : 0.0), lua_setfield(L, -2, "share");
        lua_rawseti(L, -2, lua_Integer(k + 1));
    }
    set_report(L, report);
}

static int l_profile(lua_State* L) {
    check_nargs(L, 1);
    luaL_checktype(L, 1, LUA_TFUNCTION);
    sync_all(L);
    guarded(L, [] {
        current_device();  // opens the default device, so it is profiled too
        for (Device* d : vela::open_devices()) d->profile_begin();
    });
    double t0 = now();
    lua_pushvalue(L, 1);
    if (lua_pcall(L, 0, 0, 0) != LUA_OK) {
        guarded(L, [] { profile_end_all(); });  // profiling off again; fn's error stays on top
        return lua_error(L);
    }
    profile_report(L, now() - t0);
    return 1;
}

// compare(fn [, devs]): for each device (default: every usable one) makes it
// current, calls fn(dev) once to warm up and once timed (synchronised),
// downloads the matrix fn returns, and prints the times and the largest
// absolute and relative (to max |reference|) difference from the first device.
static int l_compare(lua_State* L) {
    check_nargs(L, 2);
    luaL_checktype(L, 1, LUA_TFUNCTION);
    if (lua_isnoneornil(L, 2)) {
        lua_settop(L, 1);
        std::vector<DeviceInfo> list = guarded(L, [] { return list_devices(); });
        lua_createtable(L, int(list.size()), 0);
        int k = 0;
        for (const DeviceInfo& i : list)
            if (i.usable) lua_pushstring(L, i.id.c_str()), lua_rawseti(L, -2, ++k);
    }
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_Integer ndev = lua_Integer(lua_rawlen(L, 2));
    if (ndev == 0) luaL_error(L, "compare: devs is empty, expected a list of devices such as {\"cpu\", \"vulkan:0\"}");
    for (lua_Integer k = 1; k <= ndev; k++) {  // every entry resolves before any device is switched
        lua_rawgeti(L, 2, k);
        if (!test_device(L, -1)) luaL_error(L, "compare: devs[%I] is nil, expected a device", k);
        lua_pop(L, 1);
    }
    Device& prev = guarded(L, []() -> Device& { return current_device(); });
    lua_newtable(L);  // results
    int results = lua_gettop(L);
    const float* ref = nullptr;
    int64_t rrows = 0, rcols = 0;
    double refmax = 0;
    for (lua_Integer k = 1; k <= ndev; k++) {
        lua_rawgeti(L, 2, k);
        Device* dev = test_device(L, -1);
        if (!dev) luaL_error(L, "compare: devs[%I] is not a device", k);
        lua_pop(L, 1);
        guarded(L, [&] { set_current_device(*dev); });
        int status = LUA_OK;
        double dt = 0;
        for (int pass = 0; pass < 2 && status == LUA_OK; pass++) {
            lua_settop(L, results);
            sync_all(L);
            double t0 = now();
            lua_pushvalue(L, 1);
            push_device(L, *dev);
            status = lua_pcall(L, 1, 1, 0);
            if (status == LUA_OK) {
                sync_all(L);
                dt = now() - t0;
            }
        }
        if (status != LUA_OK) {
            set_current_device(prev);
            return lua_error(L);
        }
        Matrix* r = test_matrix(L, -1);
        if (!r) {
            set_current_device(prev);
            push_device_name(L, *dev);
            return luaL_error(L, "compare: fn must return a matrix, got %s on %s", luaL_typename(L, -2),
                              lua_tostring(L, -1));
        }
        int64_t n = r->size();
        auto* host = static_cast<float*>(lua_newuserdatauv(L, size_t(n ? n : 1) * sizeof(float), 0));
        guarded(L, [&] {
            std::vector<float> v = to_host(*r);
            std::copy(v.begin(), v.end(), host);
        });
        lua_createtable(L, 0, 5);
        lua_pushstring(L, dev->name().c_str()), lua_setfield(L, -2, "device");
        lua_pushnumber(L, dt), lua_setfield(L, -2, "seconds");
        if (!ref) {
            ref = host, rrows = r->rows, rcols = r->cols;
            lua_pushvalue(L, -2);
            lua_setfield(L, results, "reference");  // keeps the reference download alive
            for (int64_t e = 0; e < n; e++) refmax = std::max(refmax, std::fabs(double(ref[e])));
            lua_pushnumber(L, 0), lua_setfield(L, -2, "max_abs");
            lua_pushnumber(L, 0), lua_setfield(L, -2, "max_rel");
        } else if (r->rows != rrows || r->cols != rcols) {
            set_current_device(prev);
            push_device_name(L, *dev);
            return luaL_error(L, "compare: fn returned %I×%I on %s but %I×%I on the first device", lua_Integer(r->rows),
                              lua_Integer(r->cols), lua_tostring(L, -1), lua_Integer(rrows), lua_Integer(rcols));
        } else {
            double amax = 0;
            for (int64_t e = 0; e < n; e++) amax = std::max(amax, std::fabs(double(host[e]) - double(ref[e])));
            if (std::isnan(amax)) amax = NAN;
            lua_pushnumber(L, amax), lua_setfield(L, -2, "max_abs");
            lua_pushnumber(L, refmax > 0 ? amax / refmax : amax), lua_setfield(L, -2, "max_rel");
        }
        lua_rawseti(L, results, k);
    }
    guarded(L, [&] { set_current_device(prev); });
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
    std::string report = table_text(table, {false, true, true, true});
    report.pop_back();
    lua_pushnil(L);
    lua_setfield(L, results, "reference");
    set_report(L, report);
    return 1;
}

// clang-format off
static const luaL_Reg functions[] = {
    {"time", l_time},
    {"bench", l_bench},
    {"profile", l_profile},
    {"compare", l_compare},
    {nullptr, nullptr}};
// clang-format on

static void document() {
    doc("time", "time(fn [, n]) -> {seconds =, calls =}",
        "Calls fn n times (default 1) with every open device synchronised before and after; the result prints as "
        "the time per call (\"2.043 ms\"); time(fn).seconds is the number. In a script: print(time(fn)).");
    doc("bench", "bench(fn [, {n=, warmup=}]) -> {median=, min=, max=, n=}",
        "Times fn over n synchronised runs after warmup runs (default 1); without n, runs about 0.5 s (5 to 1000 "
        "runs). Seconds; the result prints as one line.");
    doc("profile", "profile(fn) -> {{kernel=, device=, ms=, calls=, share=}, ...}",
        "Runs fn with per-kernel device timing (timestamp queries on Vulkan); the list prints as a table of total "
        "device ms, calls and share for each kernel, sorted by time. Devices are profiled when already open as fn starts (the current one "
        "always).");
    doc("compare", "compare(fn [, devs]) -> {{device=, seconds=, max_abs=, max_rel=}, ...}",
        "For each device of devs (default: every usable one) makes it current, calls fn(dev) once to warm up and "
        "once timed (synchronised); fn returns a matrix, downloaded and compared with the first device's: the list "
        "prints as the times side by side and the largest absolute difference and that divided by max |reference|.");
}

void open_measure(lua_State* L) {
    luaL_setfuncs(L, functions, 0);
    document();
}

}  // namespace vela::lua

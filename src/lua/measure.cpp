// Measuring: time, bench, profile (compare is compare.cpp). Every timing tool
// synchronises the devices it measures, so a queued GPU never makes a kernel
// look free.
#include <algorithm>
#include <cstdio>
#include <new>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/ops.hpp"
#include "core/registry.hpp"
#include "lua/check.hpp"
#include "lua/observe.hpp"
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
        check_option_keys(L, 2, "bench", {"n", "warmup"});
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
// device, with wall time that includes the device work fn queued; returns a
// list (largest first) that prints as a table.
struct ProfileRow {
    std::string device, kernel;
    double ms = 0;
    int64_t calls = 0;
    uint64_t bytes = 0;  // transfers only
};

// Ends profiling on every open device; per (device, kernel) totals, largest
// first, then a row per transfer direction that moved bytes. A call that ran
// several kernels on a device (named after the call) counts once.
static std::vector<ProfileRow> profile_end_all(const std::map<Device*, DeviceStats>& before) {
    std::vector<ProfileRow> rows, transfers;
    for (Device* d : vela::open_devices()) {
        std::map<std::string, ProfileRow> by;
        std::map<std::string, std::vector<uint64_t>> ids;
        for (const KernelTime& k : d->profile_end()) {
            ProfileRow& r = by[k.kernel];
            r.device = d->name(), r.kernel = k.kernel, r.ms += k.ms;
            if (k.call == 0) r.calls++;
            else ids[k.kernel].push_back(k.call);
        }
        for (auto& [name, v] : ids) {
            std::sort(v.begin(), v.end());
            by[name].calls += int64_t(std::unique(v.begin(), v.end()) - v.begin());
        }
        for (auto& [_, r] : by) rows.push_back(r);
        auto b = before.find(d);
        DeviceStats s0 = b == before.end() ? DeviceStats{} : b->second, s1 = d->stats();
        if (s1.uploads > s0.uploads)
            transfers.push_back({d->name(), "upload", 0, int64_t(s1.uploads - s0.uploads),
                                 s1.upload_bytes - s0.upload_bytes});
        if (s1.downloads > s0.downloads)
            transfers.push_back({d->name(), "download", 0, int64_t(s1.downloads - s0.downloads),
                                 s1.download_bytes - s0.download_bytes});
    }
    std::sort(rows.begin(), rows.end(), [](const ProfileRow& a, const ProfileRow& b) { return a.ms > b.ms; });
    rows.insert(rows.end(), transfers.begin(), transfers.end());
    return rows;
}

// Pushes the profile. Its own frame owns every C++ object, and the only call
// that can raise comes before any exists.
static void profile_report(lua_State* L, const std::map<Device*, DeviceStats>& before, double wall) {
    std::vector<ProfileRow> rows = guarded(L, [&] { return profile_end_all(before); });
    double total = 0;
    int64_t calls = 0;
    for (const ProfileRow& r : rows)
        if (!r.bytes) total += r.ms, calls += r.calls;
    std::vector<std::vector<std::string>> table = {{"kernel", "device", "total ms", "calls", "share"}};
    char b[32];
    // A transfer's row says its direction: host → device (upload), device → host (download).
    auto direction = [](const ProfileRow& r) {
        return r.kernel == "upload" ? "host → " + r.device : r.device + " → host";
    };
    for (const ProfileRow& r : rows)
        if (r.bytes)
            table.push_back({r.kernel, direction(r), "", std::to_string(r.calls), format_bytes(b, sizeof b, r.bytes)});
        else
            table.push_back({r.kernel, r.device, format("%.3f", r.ms), std::to_string(r.calls),
                             format("%.1f%%", total > 0 ? 100.0 * r.ms / total : 0.0)});
    table.push_back({"total", "", format("%.3f", total), std::to_string(calls), rows.empty() ? "" : "100.0%"});
    std::string text = table_text(table, {false, false, true, true, true});
    text += "wall time " + format_seconds(wall) + " (device work included)";
    lua_createtable(L, int(rows.size()), 2);
    for (size_t k = 0; k < rows.size(); k++) {
        lua_createtable(L, 0, 6);
        lua_pushstring(L, rows[k].kernel.c_str()), lua_setfield(L, -2, "kernel");
        lua_pushstring(L, rows[k].device.c_str()), lua_setfield(L, -2, "device");
        lua_pushinteger(L, rows[k].calls), lua_setfield(L, -2, "calls");
        if (rows[k].bytes) {
            lua_pushinteger(L, lua_Integer(rows[k].bytes)), lua_setfield(L, -2, "bytes");
            lua_pushstring(L, direction(rows[k]).c_str()), lua_setfield(L, -2, "direction");
        } else {
            lua_pushnumber(L, rows[k].ms), lua_setfield(L, -2, "ms");
            lua_pushnumber(L, total > 0 ? rows[k].ms / total : 0.0), lua_setfield(L, -2, "share");
        }
        lua_rawseti(L, -2, lua_Integer(k + 1));
    }
    lua_pushnumber(L, wall), lua_setfield(L, -2, "wall");
    lua_pushnumber(L, total), lua_setfield(L, -2, "device_ms");
    set_report(L, "vela.Profile", text);
}

static int l_profile(lua_State* L) {
    check_nargs(L, 1);
    luaL_checktype(L, 1, LUA_TFUNCTION);
    sync_all(L);
    auto* before = new (lua_newuserdatauv(L, sizeof(std::map<Device*, DeviceStats>), 0))
        std::map<Device*, DeviceStats>();  // freed below on every path (no error can skip it)
    int status = LUA_OK;
    double wall = 0;
    {
        char msg[512] = "";
        try {
            current_device();  // opens the default device, so it is profiled too
            for (Device* d : vela::open_devices()) (*before)[d] = d->stats(), d->profile_begin();
        } catch (const std::exception& e) {
            std::snprintf(msg, sizeof msg, "profile: %s", e.what());
        }
        if (msg[0]) {
            before->~map();
            return luaL_error(L, "%s", msg);
        }
    }
    label_kernels(L, true);
    double t0 = now();
    lua_pushvalue(L, 1);
    status = lua_pcall(L, 0, 0, 0);
    label_kernels(L, false);
    if (status == LUA_OK) {
        char msg[512] = "";
        try {
            for (Device* d : vela::open_devices()) d->sync();  // the wall time includes the work fn queued
        } catch (const std::exception& e) {
            std::snprintf(msg, sizeof msg, "%s", e.what());
        }
        wall = now() - t0;
        if (msg[0]) {
            try {
                profile_end_all(*before);
            } catch (...) {
            }
            before->~map();
            return luaL_error(L, "%s", msg);
        }
    } else {
        try {
            profile_end_all(*before);  // profiling off again; fn's error stays on top
        } catch (...) {
        }
        before->~map();
        return lua_error(L);
    }
    std::map<Device*, DeviceStats> copy = std::move(*before);
    before->~map();
    profile_report(L, copy, wall);
    return 1;
}

// clang-format off
static const luaL_Reg functions[] = {
    {"time", l_time},
    {"bench", l_bench},
    {"profile", l_profile},
    {nullptr, nullptr}};
// clang-format on

static void document() {
    doc("time", "time(fn [, n]) -> {seconds =, calls =}",
        "Calls fn n times (default 1) with every open device synchronised before and after; the result prints as "
        "the time per call (\"2.043 ms\"); time(fn).seconds is the number. In a script: print(time(fn)).");
    doc("bench", "bench(fn [, {n=, warmup=}]) -> {median=, min=, max=, n=}",
        "Times fn over n synchronised runs after warmup runs (default 1); without n, runs about 0.5 s (5 to 1000 "
        "runs). Seconds; the result prints as one line.");
    doc("profile", "profile(fn) -> {{kernel=, device=, ms=, calls=, share=}, ..., wall=, device_ms=}",
        "Runs fn with per-kernel device time on every open device (timestamp queries on Vulkan, wall time per "
        "kernel on the cpu), each kernel named after your call (axpy is axpy on every device) and counted once per "
        "call; rows \"upload\"/\"download\" (calls, bytes) only where bytes moved, each with its direction (host → vulkan:0, vulkan:0 → host; row.direction). wall: seconds including the "
        "device work fn queued (profile waits for it). Returns the rows, which print as a table. Example: "
        "x, w, c = rand(256, 128, 1), rand(64, 256, 2), zeros(64, 128); profile(function() for i = 1, 20 do "
        "mm(w, x, c) end end)");
}

void open_measure(lua_State* L) {
    luaL_setfuncs(L, functions, 0);
    document();
    open_compare(L);
}

}  // namespace vela::lua

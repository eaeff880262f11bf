// Devices and measurement: devices(), device(), the "vela.Device" userdata,
// sync, stats, mem, who, threads, seed, and the timing tools time, bench,
// profile and compare. Every timing tool synchronises the devices it
// measures, so a queued GPU never makes a kernel look free.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/ops.hpp"
#include "core/registry.hpp"
#include "cpu/cpu_device.hpp"
#include "lua/check.hpp"
#include "lua/vela.hpp"

namespace vela::lua {

static double now() {
    using namespace std::chrono;
    return duration<double>(steady_clock::now().time_since_epoch()).count();
}

const char* format_bytes(char* out, size_t size, uint64_t bytes) {
    static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = double(bytes);
    int u = 0;
    while (v >= 1024 && u < 4) v /= 1024, u++;
    if (u == 0)
        std::snprintf(out, size, "%llu B", (unsigned long long)bytes);
    else
        std::snprintf(out, size, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s", v, units[u]);
    return out;
}

// "1.23 ms", "45.6 µs", "2.35 s".
static std::string format_seconds(double s) {
    char buf[32];
    if (s >= 1)
        std::snprintf(buf, sizeof buf, "%.3f s", s);
    else if (s >= 1e-3)
        std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
    else
        std::snprintf(buf, sizeof buf, "%.2f µs", s * 1e6);
    return buf;
}

static void out(const std::string& s) {
    std::fwrite(s.data(), 1, s.size(), stdout);
    std::fflush(stdout);
}

// Display width of UTF-8 text (×, µ, … count as one column).
static size_t width_of(const std::string& s) {
    size_t w = 0;
    for (unsigned char c : s) w += (c & 0xC0) != 0x80;
    return w;
}

// Cuts text longer than n columns, ending it with "…".
static std::string clip(const std::string& s, size_t n) {
    if (width_of(s) <= n) return s;
    std::string r;
    size_t w = 0;
    for (size_t k = 0; k < s.size(); k++) {
        unsigned char c = static_cast<unsigned char>(s[k]);
        if ((c & 0xC0) != 0x80 && ++w > n - 1) break;
        r += s[k];
    }
    return r + "…";
}

// Prints rows as aligned columns, two spaces apart; the columns flagged in
// `right` are right-aligned (numbers). Row 0 is the header.
static void print_table(const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right = {}) {
    std::vector<size_t> w;
    for (const auto& r : rows) {
        if (w.size() < r.size()) w.resize(r.size(), 0);
        for (size_t c = 0; c < r.size(); c++) w[c] = std::max(w[c], width_of(r[c]));
    }
    std::string s;
    for (const auto& r : rows) {
        std::string line;
        for (size_t c = 0; c < r.size(); c++) {
            std::string pad(w[c] - width_of(r[c]), ' ');
            bool ra = c < right.size() && right[c];
            line += ra ? pad + r[c] : r[c] + (c + 1 < r.size() ? pad : "");
            if (c + 1 < r.size()) line += "  ";
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        s += line + "\n";
    }
    out(s);
}

static int summary_tostring(lua_State* L) {
    lua_pushvalue(L, lua_upvalueindex(1));
    return 1;
}

// The functions that print a table also return it; at the prompt the shell
// prints that value again, so it prints as this one line instead.
static void set_summary(lua_State* L, const std::string& line) {
    lua_createtable(L, 0, 1);
    lua_pushlstring(L, line.data(), line.size());
    lua_pushcclosure(L, summary_tostring, 1);
    lua_setfield(L, -2, "__tostring");
    lua_setmetatable(L, -2);
}

/* ---------------------------------------------------------------------- */
/* the device userdata                                                    */
/* ---------------------------------------------------------------------- */

struct LDevice {
    Device* dev;
};

// The registry's table from each Device* to its one userdata.
static const char kDeviceCache = 0;

void push_device(lua_State* L, Device& dev) {
    if (lua_rawgetp(L, LUA_REGISTRYINDEX, &kDeviceCache) != LUA_TTABLE) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_rawsetp(L, LUA_REGISTRYINDEX, &kDeviceCache);
    }
    if (lua_rawgetp(L, -1, &dev) == LUA_TNIL) {
        lua_pop(L, 1);
        auto* ld = static_cast<LDevice*>(lua_newuserdatauv(L, sizeof(LDevice), 0));
        ld->dev = &dev;
        luaL_setmetatable(L, kDeviceType);
        lua_pushvalue(L, -1);
        lua_rawsetp(L, -3, &dev);
    }
    lua_remove(L, -2);
}

Device* test_device(lua_State* L, int arg) {
    if (lua_isnoneornil(L, arg)) return nullptr;
    if (auto* ld = static_cast<LDevice*>(luaL_testudata(L, arg, kDeviceType))) return ld->dev;
    if (lua_type(L, arg) == LUA_TSTRING) {
        const char* spec = lua_tostring(L, arg);
        return &guarded(L, [&]() -> Device& { return get_device(spec); });
    }
    luaL_typeerror(L, arg, "device or device name");
    return nullptr;
}

Device& check_device(lua_State* L, int arg) {
    Device* d = test_device(L, arg);
    if (!d) luaL_typeerror(L, arg, "device or device name");
    return *d;
}

void sync_all(lua_State* L) {
    guarded(L, [] {
        for (Device* d : vela::open_devices()) d->sync();
    });
}

// What list_devices() says about an open device (looked up once per session).
static const DeviceInfo* info_of(const Device& dev) {
    static std::vector<DeviceInfo> infos = list_devices();
    std::string id = dev.name();
    for (const DeviceInfo& i : infos)
        if (i.id == id) return &i;
    return nullptr;
}

static std::string describe(const Device& dev) {
    std::string s = dev.name();
    if (const DeviceInfo* i = info_of(dev)) {
        s += " (" + i->name;
        if (i->software && i->type != "cpu") s += ", software";
        s += ")";
    }
    return s;
}

static void push_info(lua_State* L, const DeviceInfo& i) {
    lua_createtable(L, 0, 12);
    lua_pushstring(L, i.id.c_str()), lua_setfield(L, -2, "id");
    lua_pushstring(L, i.name.c_str()), lua_setfield(L, -2, "name");
    lua_pushstring(L, i.type.c_str()), lua_setfield(L, -2, "type");
    lua_pushstring(L, i.driver.c_str()), lua_setfield(L, -2, "driver");
    lua_pushstring(L, i.driver_version.c_str()), lua_setfield(L, -2, "driver_version");
    lua_pushstring(L, i.api_version.c_str()), lua_setfield(L, -2, "api_version");
    lua_pushinteger(L, lua_Integer(i.memory)), lua_setfield(L, -2, "memory");
    lua_pushinteger(L, i.subgroup), lua_setfield(L, -2, "subgroup");
    lua_pushboolean(L, i.software), lua_setfield(L, -2, "software");
    lua_pushboolean(L, i.usable), lua_setfield(L, -2, "usable");
    lua_pushstring(L, i.reason.c_str()), lua_setfield(L, -2, "reason");
    lua_createtable(L, 0, int(i.limits.size()));
    for (const auto& [k, v] : i.limits) lua_pushstring(L, v.c_str()), lua_setfield(L, -2, k.c_str());
    lua_setfield(L, -2, "limits");
}

static void push_stats(lua_State* L, const DeviceStats& s) {
    lua_createtable(L, 0, 4);
    lua_pushinteger(L, lua_Integer(s.dispatches)), lua_setfield(L, -2, "dispatches");
    lua_pushinteger(L, lua_Integer(s.batched)), lua_setfield(L, -2, "batched");
    lua_pushinteger(L, lua_Integer(s.submissions)), lua_setfield(L, -2, "submissions");
    lua_pushinteger(L, lua_Integer(s.host_waits)), lua_setfield(L, -2, "host_waits");
}

static Device& device_arg(lua_State* L, int arg) {
    Device* d = test_device(L, arg);
    return d ? *d : guarded(L, []() -> Device& { return current_device(); });
}

static void push_name(lua_State* L, const Device& d) {
    std::string s = d.name();
    lua_pushlstring(L, s.data(), s.size());
}

static int d_tostring(lua_State* L) {
    auto* ld = static_cast<LDevice*>(luaL_checkudata(L, 1, kDeviceType));
    std::string s = describe(*ld->dev);
    lua_pushlstring(L, s.data(), s.size());
    return 1;
}

static int d_name(lua_State* L) {
    check_method_nargs(L, 0);
    push_name(L, check_device(L, 1));
    return 1;
}

static int d_info(lua_State* L) {
    check_method_nargs(L, 0);
    Device& d = check_device(L, 1);
    const DeviceInfo* i = info_of(d);
    if (!i) {
        push_name(L, d);
        return luaL_error(L, "info: no description of device %s", lua_tostring(L, -1));
    }
    push_info(L, *i);
    return 1;
}

/* ---------------------------------------------------------------------- */
/* devices, device, sync, stats, mem, threads, seed                       */
/* ---------------------------------------------------------------------- */

static int l_devices(lua_State* L) {
    check_nargs(L, 0);
    // One guarded call: no C++ object may be alive when a later one raises.
    auto [list, current] = guarded(L, [] { return std::make_pair(list_devices(), current_device().name()); });
    std::vector<std::vector<std::string>> rows = {{"", "id", "name", "type", "driver", "memory", "subgroup", "status"}};
    for (const DeviceInfo& i : list) {
        char mem[32];
        // The version often repeats the driver's name ("OpenBLAS 0.3.21 ..."): show it once.
        std::string driver = i.driver_version.rfind(i.driver, 0) == 0
                                 ? i.driver_version
                                 : i.driver + (i.driver_version.empty() ? "" : " " + i.driver_version);
        rows.push_back({i.id == current ? "*" : "", i.id, clip(i.name, 40), i.type, clip(driver, 32),
                        i.memory ? format_bytes(mem, sizeof mem, i.memory) : "-",
                        i.subgroup ? std::to_string(i.subgroup) : "-", i.usable ? "usable" : "unusable: " + i.reason});
    }
    print_table(rows, {false, false, false, false, false, true, true, false});
    lua_createtable(L, int(list.size()), 0);
    std::string ids;
    for (size_t k = 0; k < list.size(); k++) {
        push_info(L, list[k]);
        lua_rawseti(L, -2, lua_Integer(k + 1));
        ids += (k ? ", " : "") + list[k].id;
    }
    set_summary(L, format("%zu device%s: %s", list.size(), list.size() == 1 ? "" : "s", ids.c_str()));
    return 1;
}

// device() -> the current device; device(spec) selects one and returns it.
static int l_device(lua_State* L) {
    check_nargs(L, 1);
    if (Device* d = test_device(L, 1)) {
        guarded(L, [&] { set_current_device(*d); });
        push_device(L, *d);
        return 1;
    }
    push_device(L, guarded(L, []() -> Device& { return current_device(); }));
    return 1;
}

static int l_sync(lua_State* L) {
    check_nargs(L, 1);
    if (Device* d = test_device(L, 1))
        guarded(L, [&] { d->sync(); });
    else
        sync_all(L);
    return 0;
}

static int l_stats(lua_State* L) {
    check_nargs(L, 1);
    Device& d = device_arg(L, 1);
    push_stats(L, guarded(L, [&] { return d.stats(); }));
    return 1;
}

// mem([dev]): prints memory use of dev (or of every open device); returns
// {used=, reserved=, total=} of dev (or of the current device).
static int l_mem(lua_State* L) {
    check_nargs(L, 1);
    Device* only = test_device(L, 1);
    Device& d = only ? *only : guarded(L, []() -> Device& { return current_device(); });
    MemoryInfo m = guarded(L, [&] {
        std::vector<std::vector<std::string>> rows = {{"device", "used", "reserved", "total"}};
        std::vector<Device*> devs = only ? std::vector<Device*>{only} : vela::open_devices();
        for (Device* dev : devs) {
            MemoryInfo i = dev->memory();
            char u[32], r[32], t[32];
            rows.push_back({dev->name(), format_bytes(u, sizeof u, i.used), format_bytes(r, sizeof r, i.reserved),
                            i.total ? format_bytes(t, sizeof t, i.total) : "?"});
        }
        print_table(rows, {false, true, true, true});
        return d.memory();
    });
    lua_createtable(L, 0, 3);
    lua_pushinteger(L, lua_Integer(m.used)), lua_setfield(L, -2, "used");
    lua_pushinteger(L, lua_Integer(m.reserved)), lua_setfield(L, -2, "reserved");
    lua_pushinteger(L, lua_Integer(m.total)), lua_setfield(L, -2, "total");
    char u[32];
    set_summary(L, d.name() + ": " + format_bytes(u, sizeof u, m.used) + " used");
    return 1;
}

// threads() -> n; threads(n) sets the CPU device's threads (OpenBLAS and own loops).
static int l_threads(lua_State* L) {
    check_nargs(L, 1);
    if (!lua_isnoneornil(L, 1)) {
        int64_t n = check_size(L, 1, "threads", "n");
        if (n < 1) luaL_error(L, "threads: n must be at least 1, got 0");
        guarded(L, [&] { cpu::set_threads(int(n)); });
    }
    lua_pushinteger(L, guarded(L, [] { return cpu::threads(); }));
    return 1;
}

static int l_seed(lua_State* L) {
    check_nargs(L, 1);
    uint64_t s = check_seed(L, 1, "seed");
    guarded(L, [&] { set_default_seed(s); });
    return 0;
}

/* ---------------------------------------------------------------------- */
/* who                                                                    */
/* ---------------------------------------------------------------------- */

// who(): every live matrix (after a full collection) with the global that
// names it, shape, dtype, device and bytes; returns them as a list.
static int l_who(lua_State* L) {
    check_nargs(L, 0);
    lua_gc(L, LUA_GCCOLLECT);
    // names: userdata pointer -> global name
    lua_newtable(L);
    int names = lua_gettop(L);
    lua_pushglobaltable(L);
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        if (lua_type(L, -2) == LUA_TSTRING && test_matrix(L, -1)) {
            // Prefer a real name to the shell's `_` (the last printed value).
            bool underscore = std::strcmp(lua_tostring(L, -2), "_") == 0;
            if (!underscore || lua_rawgetp(L, names, lua_touserdata(L, -1)) == LUA_TNIL) {
                if (underscore) lua_pop(L, 1);
                lua_pushvalue(L, -2);
                lua_rawsetp(L, names, lua_touserdata(L, -2));
            } else {
                lua_pop(L, 1);
            }
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    lua_newtable(L);
    int list = lua_gettop(L);
    std::vector<std::vector<std::string>> rows = {{"name", "shape", "dtype", "device", "bytes"}};
    uint64_t total = 0, count = 0;
    std::unordered_set<const Buffer*> seen;
    for (LMatrix* lm = live_matrices(); lm; lm = lm->next) {
        const Matrix& m = lm->m;
        if (!m.buf) continue;
        bool view = m.trans || m.offset != 0 || size_t(m.size()) != m.buf->count();
        bool released = m.buf->released();
        bool first = seen.insert(m.buf.get()).second;
        if (first && !released) total += m.buf->bytes();
        lua_rawgetp(L, names, lm);
        std::string name = lua_isstring(L, -1) ? lua_tostring(L, -1) : "-";
        lua_pop(L, 1);
        char b[32];
        std::string shape = m.shape_str() + (m.trans ? " (t)" : "");
        std::string bytes = released ? "released"
                            : view   ? std::string("view of ") + format_bytes(b, sizeof b, m.buf->bytes())
                                     : format_bytes(b, sizeof b, m.buf->bytes());
        rows.push_back({name, shape, dtype_name(m.dtype()), m.device().name(), bytes});
        count++;
        lua_createtable(L, 0, 8);
        lua_pushstring(L, name.c_str()), lua_setfield(L, -2, "name");
        lua_pushinteger(L, m.rows), lua_setfield(L, -2, "rows");
        lua_pushinteger(L, m.cols), lua_setfield(L, -2, "cols");
        lua_pushstring(L, dtype_name(m.dtype())), lua_setfield(L, -2, "dtype");
        lua_pushstring(L, m.device().name().c_str()), lua_setfield(L, -2, "device");
        lua_pushinteger(L, lua_Integer(m.buf->bytes())), lua_setfield(L, -2, "bytes");
        lua_pushboolean(L, view), lua_setfield(L, -2, "view");
        lua_pushboolean(L, released), lua_setfield(L, -2, "released");
        lua_rawseti(L, list, lua_Integer(count));
    }
    char b[32];
    print_table(rows);
    std::string line = format("%llu matri%s on %zu buffer%s, %s", (unsigned long long)count, count == 1 ? "x" : "ces",
                              seen.size(), seen.size() == 1 ? "" : "s", format_bytes(b, sizeof b, total));
    out(line + "\n");
    set_summary(L, line);
    return 1;
}

/* ---------------------------------------------------------------------- */
/* time, bench, profile, compare                                          */
/* ---------------------------------------------------------------------- */

// time(fn [, n]): calls fn n times (default 1) between two syncs of every
// open device; prints and returns the seconds per call.
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
    if (n == 1)
        out(format_seconds(dt) + "\n");
    else
        out(format_seconds(dt) + format(" per call (%lld calls)\n", (long long)n));
    lua_pushnumber(L, dt);
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
    print_table(table, {false, false, true, true, true});
    out("wall time " + format_seconds(wall) + "\n");
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
    set_summary(L, format("%zu kernel%s, %.3f ms device time", rows.size(), rows.size() == 1 ? "" : "s", total));
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
            push_name(L, *dev);
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
            push_name(L, *dev);
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
    print_table(table, {false, true, true, true});
    lua_pushnil(L);
    lua_setfield(L, results, "reference");
    std::string ids;
    for (size_t k = 1; k < table.size(); k++) ids += (k > 1 ? ", " : "") + table[k][0];
    set_summary(L, "compared " + ids);
    return 1;
}

/* ---------------------------------------------------------------------- */
/* registration                                                           */
/* ---------------------------------------------------------------------- */

static int d_sync(lua_State* L) {
    check_method_nargs(L, 0);
    Device& d = check_device(L, 1);
    guarded(L, [&] { d.sync(); });
    return 0;
}

static int d_stats(lua_State* L) {
    check_method_nargs(L, 0);
    Device& d = check_device(L, 1);
    push_stats(L, guarded(L, [&] { return d.stats(); }));
    return 1;
}

// clang-format off
static const luaL_Reg device_methods[] = {
    {"sync", d_sync},
    {"stats", d_stats},
    {"info", d_info},
    {"name", d_name},
    {nullptr, nullptr}};
// clang-format on

// clang-format off
static const luaL_Reg functions[] = {
    {"devices", l_devices},
    {"device", l_device},
    {"sync", l_sync},
    {"stats", l_stats},
    {"mem", l_mem},
    {"who", l_who},
    {"threads", l_threads},
    {"seed", l_seed},
    {"time", l_time},
    {"bench", l_bench},
    {"profile", l_profile},
    {"compare", l_compare},
    {nullptr, nullptr}};
// clang-format on

static void document() {
    doc("devices", "devices() -> {{id=, name=, type=, driver=, memory=, subgroup=, usable=, ...}, ...}",
        "Prints every device (cpu and each Vulkan physical device, software ones marked) with type, driver and "
        "version, memory, subgroup size and whether it is usable; * marks the current one. Returns the list.");
    doc("device", "device([spec]) -> device",
        "Without an argument, the current device. With a spec (\"cpu\", \"vulkan\", \"vulkan:0\", "
        "\"vulkan:llvmpipe\", a substring of a name or driver) or a device, makes it current (new matrices go "
        "there) and returns it. Methods: d:sync(), d:stats(), d:info(), d:name(). torch.device / cutorch.setDevice.");
    doc("sync", "sync([dev])",
        "Waits until the queued work of dev (or of every open device) has finished. "
        "Only timing needs it: reads wait by themselves. cutorch.synchronize / torch.cuda.synchronize.");
    doc("stats", "stats([dev]) -> {dispatches=, batched=, submissions=, host_waits=}",
        "Counters of the device (default: the current one): kernels recorded, those of them that ran as steps of a "
        "batch (small elementwise kernels on Vulkan share one dispatch), command buffers submitted, times the host "
        "waited. Also vela.stats.");
    doc("mem", "mem([dev]) -> {used=, reserved=, total=}",
        "Prints the device memory held by live matrices, reserved from the driver and the device's total, for dev "
        "or every open device; returns dev's (or the current device's) numbers in bytes.");
    doc("who", "who() -> {{name=, rows=, cols=, dtype=, device=, bytes=, view=, released=}, ...}",
        "Lists the live matrices (after a full garbage collection) with the global naming each, shape, dtype, "
        "device and bytes; views share their parent's buffer and are counted once. Torch7 trepl who().");
    doc("threads", "threads([n]) -> n",
        "Sets (with n) and returns the number of CPU threads used by the cpu "
        "device, for OpenBLAS and its own loops. torch.setnumthreads.");
    doc("seed", "seed(n)",
        "Sets the default seed: rand/randn without a seed then draw seeds from a sequence "
        "started at n, so a script is reproducible. torch.manualSeed.");
    doc("time", "time(fn [, n]) -> seconds",
        "Calls fn n times (default 1) with every open device synchronised before and after; prints and returns "
        "the seconds per call.");
    doc("bench", "bench(fn [, {n=, warmup=}]) -> {median=, min=, max=, n=}",
        "Times fn over n synchronised runs after warmup runs (default 1); without n, runs about 0.5 s (5 to 1000 "
        "runs). Seconds; the result prints as one line.");
    doc("profile", "profile(fn) -> {{kernel=, device=, ms=, calls=, share=}, ...}",
        "Runs fn with per-kernel device timing (timestamp queries on Vulkan) and prints total device ms, calls and "
        "share for each kernel, sorted by time. Devices are profiled when already open as fn starts (the current one "
        "always).");
    doc("compare", "compare(fn [, devs]) -> {{device=, seconds=, max_abs=, max_rel=}, ...}",
        "For each device of devs (default: every usable one) makes it current, calls fn(dev) once to warm up and "
        "once timed (synchronised); fn returns a matrix, downloaded and compared with the first device's: prints "
        "the times side by side and the largest absolute difference and that divided by max |reference|.");
    doc("Device:sync", "dev:sync()", "Waits for dev's queued work.");
    doc("Device:stats", "dev:stats() -> {dispatches=, batched=, submissions=, host_waits=}", "dev's counters.");
    doc("Device:info",
        "dev:info() -> {id=, name=, type=, driver=, driver_version=, api_version=, memory=, "
        "subgroup=, software=, usable=, reason=, limits={...}}",
        "Everything known about dev.");
    doc("Device:name", "dev:name() -> \"cpu\" | \"vulkan:N\"", "dev's id, as device() takes it.");
}

void open_devices(lua_State* L) {
    luaL_newmetatable(L, kDeviceType);
    lua_pushcfunction(L, d_tostring);
    lua_setfield(L, -2, "__tostring");
    luaL_newlib(L, device_methods);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 1);
    luaL_setfuncs(L, functions, 0);
    document();
}

}  // namespace vela::lua

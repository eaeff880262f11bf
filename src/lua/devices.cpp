// Devices: devices(), device(), the "vela.Device" userdata and its methods,
// sync, threads and seed. What the devices hold (stats, mem, who) is in
// memory.cpp; the timing tools (time, bench, profile, compare) in measure.cpp.
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/ops.hpp"
#include "core/registry.hpp"
#include "lua/check.hpp"
#include "lua/text.hpp"
#include "lua/vela.hpp"

namespace vela::lua {

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

Device* test_device(lua_State* L, int arg, const char* fn) {
    if (lua_isnoneornil(L, arg)) return nullptr;
    if (auto* ld = static_cast<LDevice*>(luaL_testudata(L, arg, kDeviceType))) return ld->dev;
    if (lua_type(L, arg) == LUA_TSTRING) {
        const char* spec = lua_tostring(L, arg);
        return &guarded(L, fn, [&]() -> Device& { return get_device(spec); });
    }
    luaL_typeerror(L, arg, "device or device name");
    return nullptr;
}

Device& check_device(lua_State* L, int arg, const char* fn) {
    Device* d = test_device(L, arg, fn);
    if (!d) luaL_typeerror(L, arg, "device or device name");
    return *d;
}

void sync_all(lua_State* L) {
    guarded(L, [] {
        for (Device* d : vela::open_devices()) d->sync();
    });
}

static std::string describe(const Device& dev) {
    std::string s = dev.name();
    if (std::optional<DeviceInfo> i = device_info(dev)) {
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

// A std::string never outlives this frame, so an error raised later in the
// caller skips no destructor.
void push_device_name(lua_State* L, const Device& d) {
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
    push_device_name(L, check_device(L, 1));
    return 1;
}

// Pushes what the registry says of d; false, with nothing pushed, when it
// has no description. The C++ copy dies here, before any error is raised.
static bool push_info_of(lua_State* L, const Device& d) {
    std::optional<DeviceInfo> i = guarded(L, [&] { return device_info(d); });
    if (!i) return false;
    push_info(L, *i);
    return true;
}

static int d_info(lua_State* L) {
    check_method_nargs(L, 0);
    Device& d = check_device(L, 1);
    if (!push_info_of(L, d)) {
        push_device_name(L, d);
        return luaL_error(L, "info: no description of device %s", lua_tostring(L, -1));
    }
    return 1;
}

/* ---------------------------------------------------------------------- */
/* devices, device, sync, threads, seed                                  */
/* ---------------------------------------------------------------------- */

static int l_devices(lua_State* L) {
    check_nargs(L, 0);
    // One guarded call: no C++ object may be alive when a later one raises.
    auto [list, current] = guarded(L, [] { return std::make_pair(list_devices(), current_device().name()); });
    // One row per device, within 80 columns; the driver (and why a device is
    // unusable) on an indented line under it, cut at 80.
    std::vector<std::vector<std::string>> rows = {{"", "id", "name", "type", "memory", "subgroup", "status"}};
    std::vector<std::string> details;
    for (const DeviceInfo& i : list) {
        char mem[32];
        // The version often repeats the driver's name ("OpenBLAS 0.3.21 ..."): show it once.
        std::string driver = i.driver_version.rfind(i.driver, 0) == 0
                                 ? i.driver_version
                                 : i.driver + (i.driver_version.empty() ? "" : " " + i.driver_version);
        rows.push_back({i.id == current ? "*" : "", i.id, clip(i.name, 26), i.type,
                        i.memory ? format_bytes(mem, sizeof mem, i.memory) : "-",
                        i.subgroup ? std::to_string(i.subgroup) : "-", i.usable ? "usable" : "unusable"});
        details.push_back(clip("   driver: " + driver + (i.usable ? "" : "; unusable: " + i.reason), 80));
    }
    std::string table = table_text(rows, {false, false, false, false, true, true, false}), report;
    size_t pos = 0;
    for (size_t r = 0; pos < table.size(); r++) {
        size_t nl = table.find('\n', pos);
        report += table.substr(pos, nl - pos + 1);
        if (r >= 1 && r - 1 < details.size()) report += details[r - 1] + "\n";
        pos = nl + 1;
    }
    lua_createtable(L, int(list.size()), 0);
    std::string ids;
    for (size_t k = 0; k < list.size(); k++) {
        push_info(L, list[k]);
        lua_rawseti(L, -2, lua_Integer(k + 1));
        ids += (k ? ", " : "") + list[k].id;
    }
    set_report(L, report + format("%zu device%s: %s", list.size(), list.size() == 1 ? "" : "s", ids.c_str()));
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

// The machine's cores, as the cpu device counts them for its default thread count.
static int64_t usable_cores() {
    unsigned n = std::thread::hardware_concurrency();
    return n ? int64_t(n) : 1;
}

// threads() -> n; threads(n) sets the cpu device's option "threads" (OpenBLAS
// and own loops). More threads than cores is refused, naming the count: the
// extra threads only wait on each other (threads(1000) ran 4.5x slower).
static int l_threads(lua_State* L) {
    check_nargs(L, 1);
    int64_t n = 0;
    if (!lua_isnoneornil(L, 1)) {
        n = check_size(L, 1, "threads", "n");
        if (n < 1) luaL_error(L, "threads: n must be at least 1, got 0");
        int64_t cores = usable_cores();
        if (n > cores)
            luaL_error(L, "threads: n is %I but this machine has %I core%s (threads(%I) uses them all)",
                       lua_Integer(n), lua_Integer(cores), cores == 1 ? "" : "s", lua_Integer(cores));
    }
    lua_pushinteger(L, guarded(L, [&] {
                        Device& cpu = get_device("cpu");
                        if (n) cpu.set_option("threads", n);
                        return cpu.option("threads");
                    }));
    return 1;
}

static int l_seed(lua_State* L) {
    check_nargs(L, 1);
    uint64_t s = check_seed(L, 1, "seed");
    guarded(L, [&] { set_default_seed(s); });
    return 0;
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
    {"threads", l_threads},
    {"seed", l_seed},
    {nullptr, nullptr}};
// clang-format on

static void document() {
    doc("devices", "devices() -> {{id=, name=, type=, driver=, memory=, subgroup=, usable=, ...}, ...}",
        "The devices (cpu and each Vulkan physical device, software ones marked) with type, driver and version, "
        "memory, subgroup size and whether each is usable; the list prints as a table, * marking the current "
        "device. In a script: print(devices()).");
    doc("device", "device([spec]) -> device",
        "Without an argument, the current device. With a spec (\"cpu\", \"vulkan\", \"vulkan:0\", "
        "\"vulkan:llvmpipe\", a substring of a name or driver) or a device, makes it current (new matrices go "
        "there) and returns it. Methods: d:sync(), d:stats(), d:info(), d:name(). torch.device / cutorch.setDevice.");
    doc("sync", "sync([dev])",
        "Waits until the queued work of dev (or of every open device) has finished. "
        "Only timing needs it: reads wait by themselves. cutorch.synchronize / torch.cuda.synchronize.");
    doc("threads", "threads([n]) -> n",
        "Sets (with n) and returns the number of CPU threads used by the cpu "
        "device, for OpenBLAS and its own loops. n above the cores this process may use is an error that "
        "names the count (more threads than cores only wait on each other). torch.setnumthreads.");
    doc("seed", "seed(n)",
        "Sets the default seed: rand/randn without a seed then draw seeds from a sequence "
        "started at n, so a script is reproducible. torch.manualSeed.");
    doc("Device:sync", "dev:sync()", "Waits for dev's queued work.");
    doc("Device:stats", "dev:stats() -> {dispatches=, batched=, submissions=, host_waits=}", "dev's counters.");
    doc("Device:info",
        "dev:info() -> {id=, name=, type=, driver=, driver_version=, api_version=, memory=, "
        "subgroup=, software=, usable=, reason=, limits={...}}",
        "Everything known about dev. On the cpu, limits.loops is the instruction-set path of the "
        "elementwise loops and who chose it (device(\"cpu\"):info().limits.loops → "
        "\"x86-64-v3 (AVX2 + FMA, 8 lanes): detected\"; VELA_CPU_ISA=base|v3|v4 forces one, docs/cpu.md), "
        "limits[\"blas core\"] the OpenBLAS kernels, limits.threads the pool.");
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

// What the devices hold and have done: stats (kernels, batches, submissions,
// host waits), mem (device memory) and who (the live matrices).
#include <cstring>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/ops.hpp"
#include "core/registry.hpp"
#include "lua/check.hpp"
#include "lua/text.hpp"
#include "lua/vela.hpp"

namespace vela::lua {

void push_stats(lua_State* L, const DeviceStats& s) {
    lua_createtable(L, 0, 4);
    lua_pushinteger(L, lua_Integer(s.dispatches)), lua_setfield(L, -2, "dispatches");
    lua_pushinteger(L, lua_Integer(s.batched)), lua_setfield(L, -2, "batched");
    lua_pushinteger(L, lua_Integer(s.submissions)), lua_setfield(L, -2, "submissions");
    lua_pushinteger(L, lua_Integer(s.host_waits)), lua_setfield(L, -2, "host_waits");
}

/* ---------------------------------------------------------------------- */
/* stats, mem                                                             */
/* ---------------------------------------------------------------------- */

// dev, or the current device when the argument is absent.
static Device& device_arg(lua_State* L, int arg) {
    Device* d = test_device(L, arg);
    return d ? *d : guarded(L, []() -> Device& { return current_device(); });
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

// clang-format off
static const luaL_Reg functions[] = {
    {"stats", l_stats},
    {"mem", l_mem},
    {"who", l_who},
    {nullptr, nullptr}};
// clang-format on

static void document() {
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
}

void open_memory(lua_State* L) {
    luaL_setfuncs(L, functions, 0);
    document();
}

}  // namespace vela::lua

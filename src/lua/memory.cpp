// What the devices hold and have done: stats (kernels, batches, submissions,
// host waits), mem (device memory) and who (the live matrices).
#include <algorithm>
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

// mem([dev]): {used=, reserved=, total=} of dev (or of the current device),
// printing as the memory use of dev (or of every open device).
static int l_mem(lua_State* L) {
    check_nargs(L, 1);
    Device* only = test_device(L, 1);
    Device& d = only ? *only : guarded(L, []() -> Device& { return current_device(); });
    std::string report;
    MemoryInfo m = guarded(L, [&] {
        std::vector<std::vector<std::string>> rows = {{"device", "used", "reserved", "total"}};
        std::vector<Device*> devs = only ? std::vector<Device*>{only} : vela::open_devices();
        for (Device* dev : devs) {
            MemoryInfo i = dev->memory();
            char u[32], r[32], t[32];
            rows.push_back({dev->name(), format_bytes(u, sizeof u, i.used), format_bytes(r, sizeof r, i.reserved),
                            i.total ? format_bytes(t, sizeof t, i.total) : "?"});
        }
        report = table_text(rows, {false, true, true, true});
        return d.memory();
    });
    lua_createtable(L, 0, 3);
    lua_pushinteger(L, lua_Integer(m.used)), lua_setfield(L, -2, "used");
    lua_pushinteger(L, lua_Integer(m.reserved)), lua_setfield(L, -2, "reserved");
    lua_pushinteger(L, lua_Integer(m.total)), lua_setfield(L, -2, "total");
    report.pop_back();
    set_report(L, report);
    return 1;
}

/* ---------------------------------------------------------------------- */
/* who                                                                    */
/* ---------------------------------------------------------------------- */

// who(): the user's globals that hold matrices, views, layers, networks,
// optimizers, loaders and data sets, one row each; every other live matrix
// (layer buffers, gradients, optimizer state, loader batches, the shell's
// temporaries) folded into one line. who{all = true}: every live matrix.
// The result is a list whose printed form is the report.

namespace {

struct WhoRow {
    std::string name, kind, what, device, bytes;  // the columns of the report
    uint64_t nbytes = 0;                           // the buffer's (or everything held's) bytes
    const Matrix* m = nullptr;                     // for a matrix or view: its shape, dtype, flags
};

// A row for one matrix or view (a view shows its parent's buffer).
WhoRow matrix_row(const std::string& name, const Matrix& m) {
    bool view = m.trans || m.offset != 0 || size_t(m.size()) != m.buf->count();
    bool released = m.buf->released();
    char b[32];
    std::string bytes = released ? "released"
                        : view   ? std::string("view of ") + format_bytes(b, sizeof b, m.buf->bytes())
                                 : format_bytes(b, sizeof b, m.buf->bytes());
    return {name, view ? "view" : "matrix", m.shape_str() + (m.trans ? " (t) " : " ") + dtype_name(m.dtype()),
            m.device().name(), bytes, m.buf->bytes(), &m};
}

// Adds the buffers of every matrix reachable from the table at idx (fields,
// nested tables to a few levels) to `seen`; `dev` gets the first device met.
void collect_buffers(lua_State* L, int idx, int depth, std::unordered_set<const Buffer*>& seen,
                     std::unordered_set<const void*>& tables, std::string& dev) {
    idx = lua_absindex(L, idx);
    if (depth > 6 || !tables.insert(lua_topointer(L, idx)).second || !lua_checkstack(L, 4)) return;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        if (Matrix* m = test_matrix(L, -1)) {
            if (m->buf && !m->buf->released()) {
                seen.insert(m->buf.get());
                if (dev.empty()) dev = m->device().name();
            }
        } else if (lua_type(L, -1) == LUA_TTABLE) {
            collect_buffers(L, -1, depth + 1, seen, tables, dev);
        }
        lua_pop(L, 1);
    }
}

// Field k of the table at idx without running any metamethod: the raw
// field, else the raw field of its metatable's __index table (a class).
// Pushes it.
int raw_field(lua_State* L, int idx, const char* k) {
    idx = lua_absindex(L, idx);
    if (!lua_istable(L, idx)) {
        lua_pushnil(L);
        return LUA_TNIL;
    }
    lua_pushstring(L, k);
    if (lua_rawget(L, idx) != LUA_TNIL) return lua_type(L, -1);
    lua_pop(L, 1);
    if (!lua_getmetatable(L, idx)) {
        lua_pushnil(L);
        return LUA_TNIL;
    }
    lua_pushliteral(L, "__index");
    if (lua_rawget(L, -2) != LUA_TTABLE) {
        lua_pop(L, 2);
        lua_pushnil(L);
        return LUA_TNIL;
    }
    lua_pushstring(L, k);
    lua_rawget(L, -2);
    lua_replace(L, -3);
    lua_pop(L, 1);
    return lua_type(L, -1);
}

bool has_field(lua_State* L, int idx, const char* k, int type) {
    bool ok = raw_field(L, idx, k) == type;
    lua_pop(L, 1);
    return ok;
}

bool field_is_matrix(lua_State* L, int idx, const char* k) {
    raw_field(L, idx, k);
    bool ok = test_matrix(L, -1) != nullptr;
    lua_pop(L, 1);
    return ok;
}


uint64_t bytes_of(const std::unordered_set<const Buffer*>& bufs) {
    uint64_t b = 0;
    for (const Buffer* x : bufs) b += x->bytes();
    return b;
}

// Classifies the table at idx: "" when it is none of the kinds who lists.
std::string kind_of(lua_State* L, int idx) {
    if (lua_getmetatable(L, idx)) {
        lua_pushliteral(L, "__tostring");
        bool tostr = lua_rawget(L, -2) != LUA_TNIL;
        lua_pop(L, 2);
        if (has_field(L, idx, "layers", LUA_TTABLE) && has_field(L, idx, "forward", LUA_TFUNCTION)) return "network";
        if (field_is_matrix(L, idx, "w") && has_field(L, idx, "forward", LUA_TFUNCTION)) return "layer";
        if (has_field(L, idx, "step", LUA_TFUNCTION) && has_field(L, idx, "lr", LUA_TNUMBER) && tostr)
            return "optimizer";
        if (has_field(L, idx, "epoch", LUA_TFUNCTION) && has_field(L, idx, "nbatches", LUA_TNUMBER)) return "loader";
        return "";
    }
    if (field_is_matrix(L, idx, "images") && field_is_matrix(L, idx, "labels")) return "data set";
    // A table of sets, as data.mnist() returns.
    bool any = false;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        bool set = lua_type(L, -2) == LUA_TSTRING && lua_istable(L, -1) && field_is_matrix(L, -1, "images") &&
                   field_is_matrix(L, -1, "labels");
        lua_pop(L, 1);
        if (!set) {
            lua_pop(L, 1);
            return "";
        }
        any = true;
    }
    return any ? "data sets" : "";
}

std::string describe(lua_State* L, int idx, const std::string& kind) {
    if (kind == "network" || kind == "layer" || kind == "optimizer") {
        std::string d = clip(safe_tostring(L, idx), 56);
        if (kind == "network" && raw_field(L, idx, "nparams") == LUA_TFUNCTION) {
            lua_pushvalue(L, idx);
            if (lua_pcall(L, 1, 1, 0) == LUA_OK && lua_isinteger(L, -1))
                d += format(", %lld parameters", (long long)lua_tointeger(L, -1));
            lua_pop(L, 1);
        } else if (kind == "network") {
            lua_pop(L, 1);
        }
        return d;
    }
    if (kind == "loader") {
        raw_field(L, idx, "nbatches");
        raw_field(L, idx, "batch");
        std::string d = format("%lld batches", (long long)lua_tointeger(L, -2));
        if (lua_isinteger(L, -1)) d += format(" of %lld", (long long)lua_tointeger(L, -1));
        lua_pop(L, 2);
        return d;
    }
    if (kind == "data set") {
        raw_field(L, idx, "images");
        std::string d = "images " + test_matrix(L, -1)->shape_str();
        lua_pop(L, 1);
        return d;
    }
    // data sets: name n, name n, ...
    std::vector<std::string> parts;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        raw_field(L, -1, "images");
        parts.push_back(std::string(lua_tostring(L, -3)) + " " + std::to_string(test_matrix(L, -1)->cols));
        lua_pop(L, 2);
    }
    std::sort(parts.begin(), parts.end());
    std::string d;
    for (const std::string& p : parts) d += (d.empty() ? "" : ", ") + p;
    return d;
}

// Every live matrix, each with the global naming it: the old who(), now who{all = true}.
void who_all(lua_State* L, int names, std::vector<WhoRow>& rows, std::unordered_set<const Buffer*>& seen,
             uint64_t& count) {
    for (LMatrix* lm = live_matrices(); lm; lm = lm->next) {
        const Matrix& m = lm->m;
        if (!m.buf) continue;
        if (!m.buf->released()) seen.insert(m.buf.get());
        lua_rawgetp(L, names, lm);
        std::string name = lua_isstring(L, -1) ? lua_tostring(L, -1) : "-";
        lua_pop(L, 1);
        rows.push_back(matrix_row(name, m));
        count++;
    }
}

}  // namespace

static int l_who(lua_State* L) {
    check_nargs(L, 1);
    bool all = false;
    if (!lua_isnoneornil(L, 1)) {
        luaL_checktype(L, 1, LUA_TTABLE);
        check_option_keys(L, 1, "who", {"all"});
        lua_getfield(L, 1, "all");
        all = lua_toboolean(L, -1);
        lua_pop(L, 1);
    }
    lua_settop(L, 0);
    lua_gc(L, LUA_GCCOLLECT);
    // The globals, sorted by name; `_` (the shell's last value) is not the user's name for anything.
    std::vector<std::string> globals;
    lua_pushglobaltable(L);
    lua_pushnil(L);
    while (lua_next(L, 1)) {
        if (lua_type(L, -2) == LUA_TSTRING && std::strcmp(lua_tostring(L, -2), "_") != 0 &&
            (test_matrix(L, -1) || lua_istable(L, -1)))
            globals.push_back(lua_tostring(L, -2));
        lua_pop(L, 1);
    }
    std::sort(globals.begin(), globals.end());
    std::vector<WhoRow> rows;
    std::unordered_set<const Buffer*> covered;
    uint64_t count = 0;
    if (all) {
        lua_newtable(L);  // 2: userdata pointer -> global name
        for (const std::string& g : globals) {
            lua_getfield(L, 1, g.c_str());
            if (test_matrix(L, -1)) {
                lua_pushstring(L, g.c_str());
                lua_rawsetp(L, 2, lua_touserdata(L, -2));
            }
            lua_pop(L, 1);
        }
        who_all(L, 2, rows, covered, count);
    } else {
        for (const std::string& g : globals) {
            lua_getfield(L, 1, g.c_str());
            int v = lua_gettop(L);
            char b[32];
            if (Matrix* m = test_matrix(L, v)) {
                if (m->buf) {
                    if (!m->buf->released()) covered.insert(m->buf.get());
                    rows.push_back(matrix_row(g, *m));
                }
            } else if (std::string kind = kind_of(L, v); !kind.empty()) {
                std::unordered_set<const Buffer*> mine;
                std::unordered_set<const void*> tables;
                std::string dev;
                collect_buffers(L, v, 0, mine, tables, dev);
                covered.insert(mine.begin(), mine.end());
                rows.push_back({g, kind, describe(L, v, kind), dev.empty() ? "-" : dev,
                                mine.empty() ? "-" : format_bytes(b, sizeof b, bytes_of(mine)), bytes_of(mine)});
            }
            lua_settop(L, 1);
        }
    }
    // The rest: live matrices no listed row reaches.
    std::unordered_set<const Buffer*> rest;
    uint64_t rest_count = 0;
    if (!all)
        for (LMatrix* lm = live_matrices(); lm; lm = lm->next)
            if (lm->m.buf && !lm->m.buf->released() && !covered.count(lm->m.buf.get())) {
                rest.insert(lm->m.buf.get());
                rest_count++;
            }
    lua_settop(L, 0);
    lua_createtable(L, int(rows.size()), 0);
    std::vector<std::vector<std::string>> table = {{"name", "kind", "what", "device", "bytes"}};
    for (size_t k = 0; k < rows.size(); k++) {
        const WhoRow& r = rows[k];
        table.push_back({r.name, r.kind, r.what, r.device, r.bytes});
        lua_createtable(L, 0, 5);
        lua_pushstring(L, r.name.c_str()), lua_setfield(L, -2, "name");
        lua_pushstring(L, r.kind.c_str()), lua_setfield(L, -2, "kind");
        lua_pushstring(L, r.what.c_str()), lua_setfield(L, -2, "what");
        lua_pushstring(L, r.device.c_str()), lua_setfield(L, -2, "device");
        lua_pushinteger(L, lua_Integer(r.nbytes)), lua_setfield(L, -2, "bytes");
        if (r.m) {
            lua_pushinteger(L, r.m->rows), lua_setfield(L, -2, "rows");
            lua_pushinteger(L, r.m->cols), lua_setfield(L, -2, "cols");
            lua_pushstring(L, dtype_name(r.m->dtype())), lua_setfield(L, -2, "dtype");
            lua_pushboolean(L, r.kind == "view"), lua_setfield(L, -2, "view");
            lua_pushboolean(L, r.m->buf->released()), lua_setfield(L, -2, "released");
        }
        lua_rawseti(L, -2, lua_Integer(k + 1));
    }
    char b[32], c[32];
    std::string report = rows.empty() ? std::string(all ? "no live matrices\n" : "no matrices, networks or data sets in globals\n")
                                      : table_text(table, {false, false, false, false, true});
    if (all) {
        report += format("%llu matri%s on %zu buffer%s, %s", (unsigned long long)count, count == 1 ? "x" : "ces",
                         covered.size(), covered.size() == 1 ? "" : "s", format_bytes(b, sizeof b, bytes_of(covered)));
    } else {
        report += format("%s in what is listed", format_bytes(b, sizeof b, bytes_of(covered)));
        if (rest_count)
            report += format("; + %llu internal matri%s, %s (who{all = true} lists them)",
                             (unsigned long long)rest_count, rest_count == 1 ? "x" : "ces",
                             format_bytes(c, sizeof c, bytes_of(rest)));
    }
    lua_pushinteger(L, lua_Integer(rest_count)), lua_setfield(L, -2, "internal");
    set_report(L, report);
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
        "The device memory held by live matrices, reserved from the driver and the device's total, in bytes, of dev "
        "(or the current device); it prints as a table of dev (or of every open device).");
    doc("who", "who([{all = true}]) -> {{name=, kind=, what=, device=, bytes=, rows=, cols=, dtype=, view=, released=}, ...}",
        "Your globals that hold matrices, views, layers, networks (with their parameter count and the bytes of "
        "everything they hold), optimizers, loaders and data sets, one row each; every other live matrix (layer "
        "buffers, gradients, the shell's temporaries) folded into one line. who{all = true} lists every live "
        "matrix (after a full garbage collection). The list prints as the table. Torch7 trepl who().");
}

void open_memory(lua_State* L) {
    luaL_setfuncs(L, functions, 0);
    document();
}

}  // namespace vela::lua

// trace: the host waits, transfers and submissions a function causes, by the
// Lua line that caused them (the hook is observe.cpp's).
#include <algorithm>
#include <vector>

#include "core/registry.hpp"
#include "lua/check.hpp"
#include "lua/observe_hook.hpp"
#include "lua/text.hpp"
#include "lua/vela.hpp"

namespace vela::lua::observe {

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

}  // namespace vela::lua::observe

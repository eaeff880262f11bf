// The module "vela.dist_native": what lua/vela/dist.lua needs from C++ to run
// collectives over MPI on matrices of any device, staged through host memory.
// It never links MPI: libvela_mpi.so (mpi_shim.cpp) is dlopened on the first
// init(), and only in a process that mpirun started, so a plain vela neither
// loads Open MPI nor runs MPI_Init. Argument checks (types, op names, roots)
// are lua/vela/dist.lua's, shared with the one-process path; this file checks
// that every rank passed the same thing, stages, and calls the shim.
#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/device.hpp"
#include "core/exe_dir.hpp"
#include "core/ops.hpp"
#include "dist/dist.hpp"
#include "dist/mpi_api.h"
#include "lua/check.hpp"
#include "lua/vela.hpp"

namespace {

const vela_mpi_api* g_api = nullptr;
int g_rank = 0, g_size = 1;
struct {
    double calls = 0, bytes = 0, seconds = 0;
} g_stats;

// Started by mpirun (Open MPI sets OMPI_COMM_WORLD_SIZE; PMIx launchers PMIX_RANK).
bool launched() {
    return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK");
}

// The shim: VELA_MPI_LIB, else beside the binary (a build), else ../lib (an install).
const vela_mpi_api* load_shim(lua_State* L) {
    std::vector<std::string> tried;
    if (const char* env = std::getenv("VELA_MPI_LIB")) tried.push_back(env);
    tried.push_back(vela::exe_dir() + "/libvela_mpi.so");
    tried.push_back(vela::exe_dir() + "/../lib/vela/libvela_mpi.so");
    std::string why;
    for (const std::string& path : tried) {
        if (::access(path.c_str(), F_OK) != 0) continue;
        // RTLD_GLOBAL: Open MPI's own plugins resolve libmpi's symbols through the global scope.
        void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
        if (!h) {
            why = ::dlerror();
            continue;
        }
        auto get = reinterpret_cast<vela_mpi_api_fn>(::dlsym(h, "vela_mpi_api_get"));
        const vela_mpi_api* api = get ? get() : nullptr;
        if (api && api->version == VELA_MPI_API_VERSION) return api;
        why = path + " is not vela's MPI shim of this version";
    }
    if (why.empty()) why = "no libvela_mpi.so beside the binary (build vela with Open MPI: libopenmpi-dev)";
    luaL_error(L, "dist: started by mpirun but MPI is unavailable: %s", why.c_str());
    return nullptr;
}

void check_rc(lua_State* L, int rc, const char* fn, const char* err) {
    if (rc != 0) luaL_error(L, "%s: %s", fn, err);
}

// What one rank passes to a collective; every rank compares all of them.
struct Desc {
    char fn[24];
    int32_t op, root;
    int64_t count, total;
    uint64_t shapes;  // FNV-1a over every matrix's rows and cols
    char what[112];   // "3×4 on cpu", or "5 matrices of 203530 elements on cpu (first 784×256)"
};

uint64_t fnv(uint64_t h, int64_t v) {
    for (int k = 0; k < 8; k++) h = (h ^ uint64_t((v >> (8 * k)) & 0xff)) * 1099511628211ull;
    return h;
}

// The matrices of the list at `arg` (dist.lua made it a list), checked live and float32.
std::vector<vela::Matrix*> matrices(lua_State* L, int arg, const char* fn) {
    luaL_checktype(L, arg, LUA_TTABLE);
    std::vector<vela::Matrix*> ms;
    lua_Integer n = luaL_len(L, arg);
    for (lua_Integer i = 1; i <= n; i++) {
        lua_geti(L, arg, i);
        vela::Matrix* m = vela::lua::test_matrix(L, -1);
        lua_pop(L, 1);
        if (!m) luaL_error(L, "%s: element %d of the list is not a matrix", fn, int(i));
        vela::lua::guarded(L, fn, [&] { vela::check_live(fn, "m", *m); });
        if (m->dtype() != vela::DType::f32)
            luaL_error(L, "%s: matrix %d is %s; collectives take float32 matrices", fn, int(i),
                       vela::dtype_name(m->dtype()));
        ms.push_back(m);
    }
    return ms;
}

// Every rank passes the same call, shapes and device, or every rank raises
// the same error naming the ranks that differ from rank 0 (one small
// allgather before the data move; a wrong shape never reaches MPI). On a
// disagreement it pushes the error message and returns false: the caller
// frees its own C++ objects before lua_error (a Lua error longjmps past
// destructors, and LeakSanitizer sees what they held).
bool agree(lua_State* L, const char* fn, int op, int root, const std::vector<vela::Matrix*>& ms) {
    Desc d{};
    std::snprintf(d.fn, sizeof d.fn, "%s", fn);
    d.op = op;
    d.root = root;
    d.count = int64_t(ms.size());
    d.shapes = 1469598103934665603ull;
    std::string dev = ms.empty() ? "nothing" : ms[0]->device().name();
    for (auto* m : ms) {
        d.total += m->size();
        d.shapes = fnv(fnv(d.shapes, m->rows), m->cols);
        if (m->device().name() != dev) dev = "several devices";
    }
    if (ms.size() == 1)
        std::snprintf(d.what, sizeof d.what, "%s on %s", ms[0]->shape_str().c_str(), dev.c_str());
    else
        std::snprintf(d.what, sizeof d.what, "%lld matrices of %lld elements on %s (first %s)", (long long)d.count,
                      (long long)d.total, dev.c_str(), ms.empty() ? "-" : ms[0]->shape_str().c_str());
    std::vector<Desc> all(static_cast<size_t>(g_size));
    char err[512] = "";
    check_rc(L, g_api->allgather(&d, all.data(), sizeof d, err, sizeof err), fn, err);
    std::string bad;
    for (int r = 1; r < g_size; r++) {
        const Desc& a = all[0];
        const Desc& b = all[size_t(r)];
        if (std::memcmp(&a, &b, sizeof a) == 0) continue;
        char line[400];
        std::snprintf(line, sizeof line,
                      "%srank %d called %s(%s, op %d, root %d) where rank 0 called %s(%s, op %d, root %d)",
                      bad.empty() ? "" : "; ", r, b.fn, b.what, b.op, b.root, a.fn, a.what, a.op, a.root);
        bad += line;
    }
    if (bad.empty()) return true;
    luaL_where(L, 1);
    lua_pushfstring(L, "%s: the ranks disagree: %s", fn, bad.c_str());
    lua_concat(L, 2);
    return false;
}

// The list's elements, dense column-major one after another, in host memory (waits for each device).
std::vector<float> stage_out(lua_State* L, const char* fn, const std::vector<vela::Matrix*>& ms) {
    size_t total = 0;
    for (auto* m : ms) total += size_t(m->size());
    std::vector<float> host;
    vela::lua::guarded(L, fn, [&] {
        host.resize(total);
        size_t at = 0;
        for (auto* m : ms) {
            if (!m->empty()) m->device().download(*m, host.data() + at);
            at += size_t(m->size());
        }
    });
    return host;
}

void stage_in(lua_State* L, const char* fn, const std::vector<vela::Matrix*>& ms, const std::vector<float>& host) {
    vela::lua::guarded(L, fn, [&] {
        size_t at = 0;
        for (auto* m : ms) {
            if (!m->empty()) m->device().upload(*m, host.data() + at);
            at += size_t(m->size());
        }
    });
}

void need_init(lua_State* L, const char* fn) {
    if (!g_api) luaL_error(L, "%s: vela.dist is not initialised (require 'vela.dist' first)", fn);
}

/* ---------------------------------------------------------------------- */

int d_launched(lua_State* L) {
    lua_pushboolean(L, launched());
    return 1;
}

int d_init(lua_State* L) {
    if (!g_api) {
        const vela_mpi_api* api = load_shim(L);
        char err[512] = "";
        check_rc(L, api->init(&g_rank, &g_size, err, sizeof err), "dist", err);
        g_api = api;
    }
    lua_pushinteger(L, g_rank);
    lua_pushinteger(L, g_size);
    return 2;
}

// allreduce(list, op): op 0 sum, 1 max, 2 mean; in place on every matrix.
int d_allreduce(lua_State* L) {
    const char* fn = "dist.allreduce";
    need_init(L, fn);
    auto ms = matrices(L, 1, fn);
    int op = int(luaL_checkinteger(L, 2));
    if (!agree(L, fn, op, 0, ms)) {
        std::vector<vela::Matrix*>().swap(ms);
        return lua_error(L);
    }
    double t0 = g_api->wtime();
    std::vector<float> host = stage_out(L, fn, ms);
    char err[512] = "";
    check_rc(L, g_api->allreduce(host.data(), host.size(), op == 1 ? VELA_MPI_MAX : VELA_MPI_SUM, err, sizeof err), fn,
             err);
    if (op == 2) {
        float inv = 1.0f / float(g_size);
        for (float& v : host) v *= inv;
    }
    stage_in(L, fn, ms, host);
    g_stats.calls += 1;
    g_stats.bytes += double(host.size() * sizeof(float));
    g_stats.seconds += g_api->wtime() - t0;
    return 0;
}

// broadcast(list, root): root's values into every rank's matrices.
int d_broadcast(lua_State* L) {
    const char* fn = "dist.broadcast";
    need_init(L, fn);
    auto ms = matrices(L, 1, fn);
    int root = int(luaL_checkinteger(L, 2));
    if (!agree(L, fn, 0, root, ms)) {
        std::vector<vela::Matrix*>().swap(ms);
        return lua_error(L);
    }
    std::vector<float> host = g_rank == root ? stage_out(L, fn, ms) : std::vector<float>();
    if (g_rank != root) {
        size_t total = 0;
        for (auto* m : ms) total += size_t(m->size());
        host.resize(total);
    }
    char err[512] = "";
    check_rc(L, g_api->broadcast(host.data(), host.size() * sizeof(float), root, err, sizeof err), fn, err);
    if (g_rank != root) stage_in(L, fn, ms, host);
    return 0;
}

int d_barrier(lua_State* L) {
    need_init(L, "dist.barrier");
    char err[512] = "";
    check_rc(L, g_api->barrier(err, sizeof err), "dist.barrier", err);
    return 0;
}

int d_stats(lua_State* L) {
    lua_createtable(L, 0, 3);
    lua_pushinteger(L, lua_Integer(g_stats.calls));
    lua_setfield(L, -2, "calls");
    lua_pushinteger(L, lua_Integer(g_stats.bytes));
    lua_setfield(L, -2, "bytes");
    lua_pushnumber(L, g_stats.seconds);
    lua_setfield(L, -2, "seconds");
    return 1;
}

// hash(list) -> 16 hex digits: FNV-1a over the float32 bits of every element, in list order
// (the bit-identity checks of replicas and ranks; waits for each device).
int d_hash(lua_State* L) {
    auto ms = matrices(L, 1, "dist.hash");
    std::vector<float> host = stage_out(L, "dist.hash", ms);
    uint64_t h = 1469598103934665603ull;
    for (float v : host) {
        uint32_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        h = fnv(h, int64_t(bits));
    }
    char out[17];
    std::snprintf(out, sizeof out, "%016llx", (unsigned long long)h);
    lua_pushstring(L, out);
    return 1;
}

// flush(m): starts the work queued on m's device without waiting (parallel.lua
// queues every replica's step, then starts each device, before it reads any).
int d_flush(lua_State* L) {
    vela::Matrix& m = vela::lua::check_matrix(L, 1);
    vela::lua::guarded(L, "flush", [&] { m.device().flush(); });
    return 0;
}

const luaL_Reg kFunctions[] = {
    {"hash", d_hash},       {"flush", d_flush},         {"launched", d_launched},
    {"init", d_init},       {"allreduce", d_allreduce}, {"broadcast", d_broadcast},
    {"barrier", d_barrier}, {"stats", d_stats},         {nullptr, nullptr},
};

}  // namespace

extern "C" int luaopen_vela_dist_native(lua_State* L) {
    luaL_newlib(L, kFunctions);
    return 1;
}

// The state behind the call hook of observe.cpp, shared with the tools that
// use it: diverge (observe_diverge.cpp) and trace (observe_trace.cpp). Only
// those three files include this.
#pragma once
#include <lua.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/matrix.hpp"
#include "lua/observe.hpp"

namespace vela::lua::observe {

// Device counters summed over every open device.
struct Totals {
    uint64_t dispatches = 0, submissions = 0, waits = 0, uploads = 0, upload_bytes = 0, downloads = 0,
             download_bytes = 0;
    double wait_s = 0;
};

struct TraceRow {
    std::string line;
    uint64_t waits = 0, submissions = 0, uploads = 0, upload_bytes = 0, downloads = 0, download_bytes = 0;
    double wait_s = 0;
    uint64_t order = 0;  // first seen
};

// One argument of the kernel being checked: its copy on the reference device.
struct Copy {
    int arg = 0;               // 1-based argument index
    const void* ud = nullptr;  // the userdata (the same one twice shares a copy)
    Matrix original, copy;
};

struct Divergence {
    bool found = false;
    std::string kernel, inner, user, shapes;
    double max_abs = 0, max_rel = 0, value = 0, ref_value = 0;
    int64_t row = 0, col = 0;  // 1-based, of the largest absolute difference
    std::string output;        // which argument ("argument 3", "result")
};

struct Frame {
    lua_CFunction f = nullptr;
    const char* kernel = nullptr;
    std::string line;  // trace: the user's line that called it
    int narg = 0;
    Where at;  // diverge: where the kernel was called
    std::vector<Copy> copies;
};

struct Observer {
    bool label = false, trace = false, diverge = false;
    std::vector<Frame> stack;
    // The kernel being checked by diverge: kept here, not in a local of the
    // hook, because a divergence (or an error on the reference device) leaves
    // the hook by longjmp, which runs no destructor.
    Frame done;
    uint64_t next_call = 1;
    std::string moddir;  // "@/…/lua/vela/": sources of vela's own modules
    // trace
    Totals last;
    std::map<std::string, TraceRow> rows;
    uint64_t seen = 0;
    // diverge
    Device* ref = nullptr;
    Device* cur = nullptr;
    double rtol = 1e-4, atol = 0;
    uint64_t checked = 0;
    Divergence first, worst;  // worst: the largest relative difference among kernels that agreed
    // VELA_PERTURB="kernel@device" (tests): while the hook is on (diverge,
    // trace, profile, compare's warm-up; the shell clears hooks after each
    // call), that kernel's result on that device gets its first element
    // changed, a planted divergence.
    std::string perturb_kernel, perturb_device;
    // compare's row check
    Device* guard = nullptr;
    std::string stray;
    bool any() const { return label || trace || diverge || guard || !perturb_kernel.empty(); }
};

Observer& obs();
// The directory of vela's Lua modules, as a chunk source prefix ("@/…/vela/").
std::string module_dir(lua_State* L);
// Sets or clears the hook as the observer's flags say.
void install(lua_State* L);

// trace (observe_trace.cpp)
Totals totals();
void account(Observer& o);  // what happened since the last call, on the line of the innermost frame
int l_trace(lua_State* L);

// diverge (observe_diverge.cpp)
void snapshot(lua_State* L, lua_Debug* ar, Observer& o, Frame& fr);     // at a kernel's call
void perturb(lua_State* L, lua_Debug* ar, Observer& o, const Frame& fr);  // VELA_PERTURB, at its return
void check_kernel(lua_State* L, lua_Debug* ar, Observer& o, Frame& fr);  // at its return
int l_diverge(lua_State* L);

}  // namespace vela::lua::observe

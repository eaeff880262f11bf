// Data-set helpers in C: reading IDX files and making the per-epoch shuffle.
// The rest of the data module (batches, show, the MNIST loaders) is Lua, in
// lua/vela/data.lua, on top of these.
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "core/idx.hpp"
#include "core/ops.hpp"
#include "core/registry.hpp"
#include "lua/check.hpp"
#include "lua/text.hpp"
#include "lua/vela.hpp"

namespace vela::lua {

namespace {

// The optional device argument: a device or a spec string; the current device when absent.
Device& target_device(lua_State* L, int arg, const char* fn) {
    Device* d = test_device(L, arg, fn);
    return d ? *d : guarded(L, fn, []() -> Device& { return current_device(); });
}

// read_idx(path [, dev]) -> uint8 (sample size)×n matrix
int l_read_idx(lua_State* L) {
    // C++ objects live only inside guarded(): a Lua error longjmps past this frame.
    check_nargs(L, 2);
    const char* path = luaL_checkstring(L, 1);
    Device& dev = target_device(L, 2, "read_idx");
    Matrix m = guarded(L, "read_idx", [&] { return idx_to_matrix(read_idx(path), dev); });
    push_matrix(L, std::move(m));
    return 1;
}

// read_labels(path, classes [, dev]) -> float 1×n of 1-based class indices
int l_read_labels(lua_State* L) {
    const char* path = luaL_checkstring(L, 1);
    lua_Integer classes = luaL_checkinteger(L, 2);
    luaL_argcheck(L, classes >= 1 && classes <= 256, 2, "classes must be in 1..256");
    check_nargs(L, 3);
    Device& dev = target_device(L, 3, "read_labels");
    Matrix m = guarded(L, "read_labels", [&] { return read_idx_labels(path, int(classes), dev); });
    push_matrix(L, std::move(m));
    return 1;
}

// splitmix64: a small, well-mixed generator; the permutation is made on the
// host, so it is the same for every device by construction.
uint64_t splitmix64(uint64_t& s) {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// permutation(n, seed [, dev]) -> float 1×n holding 1..n shuffled (Fisher–Yates)
int l_permutation(lua_State* L) {
    lua_Integer n = luaL_checkinteger(L, 1);
    luaL_argcheck(L, n >= 0 && n <= (lua_Integer(1) << 24), 1, "n must be in 0..2^24 (exact in float32)");
    uint64_t state = uint64_t(luaL_checkinteger(L, 2));
    check_nargs(L, 3);
    Device& dev = target_device(L, 3, "permutation");
    Matrix m = guarded(L, "permutation", [&] {
        std::vector<float> idx(static_cast<size_t>(n));
        std::iota(idx.begin(), idx.end(), 1.0f);
        for (size_t i = idx.size(); i > 1; i--) {
            // Multiply-shift for an unbiased-enough index in [0, i): i < 2^24.
            size_t j = size_t((splitmix64(state) >> 40) * i >> 24);
            std::swap(idx[i - 1], idx[j]);
        }
        return from_host(dev, 1, n, idx.data());
    });
    push_matrix(L, std::move(m));
    return 1;
}

// clock() -> seconds on a monotonic wall clock: what progress bars and
// examples/s need (os.clock is processor time, which counts every thread).
int l_clock(lua_State* L) {
    lua_pushnumber(L, now());
    return 1;
}

const luaL_Reg funcs[] = {
    {"clock", l_clock},
    {"read_idx", l_read_idx},
    {"read_labels", l_read_labels},
    {"permutation", l_permutation},
    {nullptr, nullptr},
};

}  // namespace

void open_data(lua_State* L) {
    luaL_setfuncs(L, funcs, 0);
    // Where scripts/get-data put the data sets, for scripts run from elsewhere.
    lua_pushliteral(L, VELA_SOURCE_DIR "/data");
    lua_setfield(L, -2, "data_dir");
    doc("read_idx", "read_idx(path [, dev]) -> uint8 matrix",
        "Reads an IDX file (raw or .gz): n images of r×c become an (r·c)×n uint8 matrix, one image per "
        "column; a labels file becomes 1×n. Magic, dimensions and length are checked.");
    doc("read_labels", "read_labels(path, classes [, dev]) -> float 1×n",
        "Reads an IDX labels file as 1-based class indices (label v becomes v + 1), each checked < classes.");
    doc("clock", "clock() -> seconds", "A monotonic wall clock, for timing loops by hand (time(fn) syncs the device).");
    doc("permutation", "permutation(n, seed [, dev]) -> float 1×n",
        "1..n shuffled by seed (made on the host, identical for every device): the order of an epoch, "
        "for gather_cols.");
}

}  // namespace vela::lua

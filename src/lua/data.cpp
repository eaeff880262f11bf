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
#include "lua/vela.hpp"

namespace vela::lua {

namespace {

// The optional device argument: a spec string is resolved here; anything else
// (a device object) is handed to Matrix:to after the data is read on the cpu,
// so this file needs no knowledge of how devices are represented in Lua.
Device& target_device(lua_State* L, int arg) {
    if (lua_isnoneornil(L, arg)) return current_device();
    if (lua_type(L, arg) == LUA_TSTRING) {
        std::string spec = lua_tostring(L, arg);
        return guarded(L, [&]() -> Device& { return get_device(spec); });
    }
    return cpu_device();
}

// Leaves the matrix on top of the stack, moved to the device at `arg` when
// that argument is a device object rather than a spec string.
void push_on(lua_State* L, Matrix m, int arg) {
    push_matrix(L, std::move(m));
    if (lua_isnoneornil(L, arg) || lua_type(L, arg) == LUA_TSTRING) return;
    lua_getfield(L, -1, "to");
    lua_insert(L, -2);
    lua_pushvalue(L, arg);
    lua_call(L, 2, 1);
}

// read_idx(path [, dev]) -> uint8 (sample size)×n matrix
int l_read_idx(lua_State* L) {
    std::string path = luaL_checkstring(L, 1);
    Device& dev = target_device(L, 2);
    Matrix m = guarded(L, [&] { return idx_to_matrix(read_idx(path), dev); });
    push_on(L, std::move(m), 2);
    return 1;
}

// read_labels(path, classes [, dev]) -> float 1×n of 1-based class indices
int l_read_labels(lua_State* L) {
    std::string path = luaL_checkstring(L, 1);
    lua_Integer classes = luaL_checkinteger(L, 2);
    luaL_argcheck(L, classes >= 1 && classes <= 256, 2, "classes must be in 1..256");
    Device& dev = target_device(L, 3);
    Matrix m = guarded(L, [&] { return read_idx_labels(path, int(classes), dev); });
    push_on(L, std::move(m), 3);
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
    Device& dev = target_device(L, 3);
    std::vector<float> idx(static_cast<size_t>(n));
    std::iota(idx.begin(), idx.end(), 1.0f);
    for (size_t i = idx.size(); i > 1; i--) {
        // Multiply-shift for an unbiased-enough index in [0, i): i < 2^24.
        size_t j = size_t((splitmix64(state) >> 40) * i >> 24);
        std::swap(idx[i - 1], idx[j]);
    }
    Matrix m = guarded(L, [&] { return from_host(dev, 1, n, idx.data()); });
    push_on(L, std::move(m), 3);
    return 1;
}

const luaL_Reg funcs[] = {
    {"read_idx", l_read_idx},
    {"read_labels", l_read_labels},
    {"permutation", l_permutation},
    {nullptr, nullptr},
};

}  // namespace

void open_data(lua_State* L) {
    luaL_setfuncs(L, funcs, 0);
    doc("read_idx", "read_idx(path [, dev]) -> uint8 matrix",
        "Reads an IDX file (raw or .gz): n images of r×c become an (r·c)×n uint8 matrix, one image per "
        "column; a labels file becomes 1×n. Magic, dimensions and length are checked.");
    doc("read_labels", "read_labels(path, classes [, dev]) -> float 1×n",
        "Reads an IDX labels file as 1-based class indices (label v becomes v + 1), each checked < classes.");
    doc("permutation", "permutation(n, seed [, dev]) -> float 1×n",
        "1..n shuffled by seed (made on the host, identical for every device): the order of an epoch, "
        "for gather_cols.");
}

}  // namespace vela::lua

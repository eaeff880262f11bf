// luaopen_vela: the module table, assembled from the area files.
#include "lua/vela.hpp"

// The devices are registered before (src/backends.cpp's register_backends(), called by main() and
// the test binary): the bindings see them through the registry only.
extern "C" int luaopen_vela(lua_State* L) {
    lua_newtable(L);
    vela::lua::open_matrix(L);
    vela::lua::open_constructors(L);
    vela::lua::open_kernels(L);
    vela::lua::open_devices(L);
    vela::lua::open_memory(L);
    vela::lua::open_measure(L);
    vela::lua::open_observe(L);
    vela::lua::open_data(L);
    vela::lua::open_help(L);
    vela::lua::open_io(L);
    vela::lua::open_print(L);
    vela::lua::open_surface(L);  // after the kernels: sum(x [, dim]) takes over sum(x)
    vela::lua::open_relations(L);
    vela::lua::open_shape(L);
    vela::lua::open_ranges(L);
    vela::lua::open_user_kernels(L);
    vela::lua::open_regularize(L);
    vela::lua::open_optim_kernels(L);
    vela::lua::open_conv(L);
    vela::lua::open_sequence(L);
    lua_pushliteral(L, VELA_VERSION);
    lua_setfield(L, -2, "version");
    return 1;
}

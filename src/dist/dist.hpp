// The module "vela.dist_native" (binding.cpp): MPI collectives on matrices for
// lua/vela/dist.lua. The shell preloads it; it loads MPI only under mpirun.
#pragma once
#include <lua.hpp>

extern "C" int luaopen_vela_dist_native(lua_State* L);

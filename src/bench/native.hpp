// The module "vela.bench_native" (native.cpp): direct OpenBLAS baselines for
// scripts/bench, kept out of require "vela". The shell preloads it.
#pragma once
#include <lua.hpp>

extern "C" int luaopen_vela_bench_native(lua_State* L);

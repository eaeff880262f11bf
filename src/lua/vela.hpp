// The Lua module "vela": every kernel, constructor and device function.
// luaopen_vela builds one table from the area files (one file per area, each
// in the style of Lua's own libraries: small static functions and a luaL_Reg
// table); the shell copies its fields into the globals.
#pragma once
#include <initializer_list>
#include <lua.hpp>

#include "core/device.hpp"
#include "core/matrix.hpp"

extern "C" int luaopen_vela(lua_State* L);

namespace vela::lua {

// Each adds its functions to the table on top of the stack.
void open_matrix(lua_State* L);   // matrix.cpp: the userdata, its methods and operators (printing: matrix_print.cpp)
void open_constructors(lua_State* L);  // constructors.cpp: matrix, zeros, ones, rand, randn, from
void open_kernels(lua_State* L);  // kernels.cpp: every kernel of the table
void open_devices(lua_State* L);  // devices.cpp: devices, device, sync, threads, seed, the Device userdata
void open_memory(lua_State* L);   // memory.cpp: stats, mem, who
void open_measure(lua_State* L);  // measure.cpp: time, bench, profile, compare
void open_compare(lua_State* L);  // compare.cpp: compare (opened by open_measure)
void open_observe(lua_State* L);  // observe.cpp: diverge, trace
void open_data(lua_State* L);     // data.cpp: read_idx and the data-set helpers in C
void open_help(lua_State* L);     // help.cpp: help, doc
void open_io(lua_State* L);       // io.cpp: save, load (.npy, .npz)
void open_print(lua_State* L);    // matrix_print.cpp: printopts
void open_relations(lua_State* L);  // relations.cpp: gt, lt, ge, le, eq, ne, pow, ^
void open_shape(lua_State* L);  // shape.cpp: clone, item, reshape, view(r, c), transpose, narrow, select, sub, cat
void open_ranges(lua_State* L);  // ranges.cpp: eye, linspace, arange, randperm
void open_surface(lua_State* L);  // surface.cpp: size, numel, scalar operators, sum/mean/max/min by dim, Torch7 in-place methods
void open_user_kernels(lua_State* L);  // user_kernels.cpp: map, kernel, kernel_info (GLSL written at the prompt)
void open_regularize(lua_State* L);  // regularize.cpp: dropout, batchnorm_stats, batchnorm, batchnorm_backward, random_shift
void open_optim_kernels(lua_State* L);  // optim_kernels.cpp: sgd_step, adam_step, adamw_step, rmsprop_step, adagrad_step
void open_conv(lua_State* L);     // conv.cpp: im2col, col2im, maxpool, avgpool and their backward steps
Act check_act(lua_State* L, int arg);  // kernels.cpp: an activation name (identity when absent), for dense and conv
void open_sequence(lua_State* L);  // sequence.cpp: layernorm, embedding_backward, softmax_causal and backward steps

// Matrix userdata ("vela.Matrix").
Matrix& check_matrix(lua_State* L, int arg);   // raises "bad argument #arg to 'fn' (matrix expected, got T)"
Matrix* test_matrix(lua_State* L, int arg);    // nullptr when not a matrix
void push_matrix(lua_State* L, Matrix m);
// Pushes the registry table at key whose keys are weak (function -> name
// caches and the like), made on first use (text.cpp).
void push_weak_table(lua_State* L, const char* key);
int matrix_tostring(lua_State* L);            // __tostring (matrix_print.cpp)

// Runs f, turning vela::Error (and std::bad_alloc) into a Lua error. Every
// binding that calls the core wraps the call in this.
template <class F>
auto guarded(lua_State* L, F&& f) -> decltype(f());

// Doc strings, registered beside each binding: help(f) and ?name print them.
// `name` is what the user types ("mm", "nn.linear", "Matrix:view").
void doc(const char* name, const char* signature, const char* text);
// A table of them: doc(name, signature, text) for each entry, in order.
struct DocEntry {
    const char* name;
    const char* signature;
    const char* text;
};
void doc(std::initializer_list<DocEntry> entries);

}  // namespace vela::lua

#include "lua/guarded.hpp"

// Shared declarations for every vela compute shader.
//
// Operands arrive as buffer device addresses in push constants, never as
// descriptors, so no maxStorageBufferRange limit applies. A matrix operand is
// a View: the address of its element (0, 0) (the buffer address plus the
// view's offset) and the steps between logical rows and columns, which
// express both the leading dimension and the transposed flag. Element
// addresses are computed in 64 bits: a 784×60000 matrix is 188 MB.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_EXT_shader_8bit_storage : require

layout(buffer_reference, buffer_reference_align = 4) buffer F32 { float v; };
layout(buffer_reference, buffer_reference_align = 4) buffer U32 { uint v; };
layout(buffer_reference, buffer_reference_align = 1) buffer U8 { uint8_t v; };

// Mirrors struct View in src/vulkan/device.hpp (std430: 24 bytes, 8-aligned).
struct View {
    uint64_t addr;  // address of logical element (0, 0)
    uint rows;      // logical rows, or 0 when the view is one dense column-major run
    uint rstep;     // elements between logical rows i and i+1
    uint cstep;     // elements between logical columns j and j+1
    uint pad;
};

// The workgroup's index in a grid of up to three dimensions, and the global
// invocation index. Hosts split large launches over y and z (see grid() in
// src/vulkan/device.cpp) because one dimension holds at most 65,535 groups.
uint group_index() {
    return (gl_WorkGroupID.z * gl_NumWorkGroups.y + gl_WorkGroupID.y) * gl_NumWorkGroups.x + gl_WorkGroupID.x;
}
// wg: the shader's workgroup-size specialization constant. (Not gl_WorkGroupSize:
// glslc -O folds it to the default local size of 1 when local_size_x_id is used.)
uint global_index(uint wg) { return group_index() * wg + gl_LocalInvocationID.x; }

// Buffer element index (relative to addr) of logical element k in column-major order.
uint view_index(View v, uint k) {
    if (v.rows == 0u) return k;
    uint j = k / v.rows;
    uint i = k - j * v.rows;
    return i * v.rstep + j * v.cstep;
}
uint view_index2(View v, uint i, uint j) { return i * v.rstep + j * v.cstep; }

float load_f32(uint64_t addr, uint idx) { return F32(addr + uint64_t(idx) * 4ul).v; }
void store_f32(uint64_t addr, uint idx, float x) { F32(addr + uint64_t(idx) * 4ul).v = x; }
float load_u8(uint64_t addr, uint idx) { return float(uint(U8(addr + uint64_t(idx)).v)); }
void store_u8(uint64_t addr, uint idx, float x) { U8(addr + uint64_t(idx)).v = uint8_t(uint(clamp(x, 0.0, 255.0))); }

// Element k (column-major logical order) of a float view.
float ld(View v, uint k) { return load_f32(v.addr, view_index(v, k)); }
void st(View v, uint k, float x) { store_f32(v.addr, view_index(v, k), x); }

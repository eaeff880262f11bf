// Shared declarations for every vela compute shader.
//
// Operands arrive as buffer device addresses in push constants, never as
// descriptors, so no maxStorageBufferRange limit applies. A matrix operand is
// a View: the address of its element (0, 0) (the buffer address plus the
// view's offset) and the steps between logical rows and columns, which
// express both the leading dimension and the transposed flag.
//
// Portable by construction: no 64-bit integers (shaderInt64 is optional, and
// SwiftShader and some mobile GPUs lack it) and no 8-bit storage. An address
// (type Addr) is a uvec2 (low word, high word; the layout of a little-endian
// uint64_t in a push constant) turned into a buffer reference by
// GL_EXT_buffer_reference_uvec2, and offsets are added with the carry into the
// high word. Element indices are 32-bit: a buffer holds fewer than 2^32
// elements (VulkanDevice::alloc). uint8 matrices are read as 32-bit words and
// written with word atomics.
//
// VELA_INT64 (defined by the build for the <name>_i64 variants of the shaders
// in VELA_INT64_SHADERS, CMakeLists.txt; the host runs them on devices with
// shaderInt64, Pipelines::get): Addr is a uint64_t and offsets are 64-bit adds,
// the same bytes in push constants. On lavapipe the uvec2 arithmetic costs the
// elementwise kernels 7-12% of their time (docs/vulkan.md, "The MLP on
// lavapipe against 6a25d9f").
// The functions below are all a shader needs either way: addr_add, addr_f32,
// addr_null, addr_make (from two words), load/store_f32, load/store_u8.
#extension GL_EXT_buffer_reference : require
#ifdef VELA_INT64
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#define Addr uint64_t
#else
#extension GL_EXT_buffer_reference_uvec2 : require
#define Addr uvec2
#endif

layout(buffer_reference, buffer_reference_align = 4) buffer F32 { float v; };
layout(buffer_reference, buffer_reference_align = 4) buffer U32 { uint v; };

// Mirrors struct View in src/vulkan/kernel.hpp (std430: 24 bytes, 8-aligned).
struct View {
    Addr addr;      // address of logical element (0, 0)
    uint rows;      // logical rows, or 0 when the view is one dense column-major run
    uint rstep;     // elements between logical rows i and i+1
    uint cstep;     // elements between logical columns j and j+1
    uint pad;
};

#ifdef VELA_INT64
Addr addr_add(Addr a, uint bytes) { return a + uint64_t(bytes); }
Addr addr_f32(Addr a, uint idx) { return a + uint64_t(idx) * 4ul; }
bool addr_null(Addr a) { return a == 0ul; }
Addr addr_make(uint lo, uint hi) { return packUint2x32(uvec2(lo, hi)); }
#else
// a + bytes, the carry going into the high word.
Addr addr_add(Addr a, uint bytes) {
    uint c;
    uint lo = uaddCarry(a.x, bytes, c);
    return uvec2(lo, a.y + c);
}
// The address of 32-bit element idx of the array at a: a + 4·idx (up to 16 GiB past a).
Addr addr_f32(Addr a, uint idx) {
    uint c;
    uint lo = uaddCarry(a.x, idx << 2, c);
    return uvec2(lo, a.y + (idx >> 30) + c);
}
bool addr_null(Addr a) { return (a.x | a.y) == 0u; }
Addr addr_make(uint lo, uint hi) { return uvec2(lo, hi); }
#endif

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

float load_f32(Addr addr, uint idx) { return F32(addr_f32(addr, idx)).v; }
void store_f32(Addr addr, uint idx, float x) { F32(addr_f32(addr, idx)).v = x; }
// Byte idx of a uint8 array through the 32-bit word holding it (buffers are
// 64-byte aligned and sized in whole 64-byte blocks, so the word is inside).
Addr u8_word(Addr addr, uint idx, out uint shift) {
    Addr b = addr_add(addr, idx);
#ifdef VELA_INT64
    shift = uint(b & 3ul) * 8u;
    return b & ~3ul;
#else
    shift = (b.x & 3u) * 8u;
    return uvec2(b.x & ~3u, b.y);
#endif
}
float load_u8(Addr addr, uint idx) {
    uint shift;
    Addr w = u8_word(addr, idx, shift);
    return float((U32(w).v >> shift) & 255u);
}
// Other invocations may write the other bytes of the same word at the same
// time: the byte is cleared and set by two atomics, which touch only its bits.
void store_u8(Addr addr, uint idx, float x) {
    uint shift;
    Addr w = u8_word(addr, idx, shift);
    uint v = uint(clamp(x, 0.0, 255.0));
    atomicAnd(U32(w).v, ~(255u << shift));
    atomicOr(U32(w).v, v << shift);
}

// Element k (column-major logical order) of a float view.
// NaN, and a NaN or +Inf (what poisons a softmax column), from the bits: a
// driver may not keep NaN through float compares and arithmetic (SwiftShader).
bool nan_bits(float x) { return (floatBitsToUint(x) & 0x7fffffffu) > 0x7f800000u; }
bool nan_or_pinf_bits(float x) { return nan_bits(x) || floatBitsToUint(x) == 0x7f800000u; }

float ld(View v, uint k) { return load_f32(v.addr, view_index(v, k)); }
void st(View v, uint k, float x) { store_f32(v.addr, view_index(v, k), x); }

// The index contract (src/core/index_check.hpp): v an integer in 1..limit
// (NaN, ±Inf, fractions, 0 and negatives are not).
bool index_ok(float v, uint limit) {
    return v >= 1.0 && v <= 4294967040.0 && v == floor(v) && uint(v) <= limit;
}
// Position j (0-based) of a bad index into the call's status word, which
// keeps the smallest (~0u: none); a null address (no check wanted) skips it.
void report_bad_index(Addr status, uint j) {
    if (!addr_null(status)) atomicMin(U32(status).v, j);
}

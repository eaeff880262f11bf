// The push block of the elementwise shaders (level1, unary, binary, backward,
// add_bias, gather_cols), declared once: struct ElementPush of
// src/vulkan/kernel.hpp (96 bytes). shaders/batch.comp reads the same 96
// bytes from memory as one step of its list (element_step below).
// Requires common.glsl.

layout(push_constant) uniform Push {
    View x;
    View y;
    View z;
    uint n;
    float a, b, c, d;  // the scalars: α, β (level1), p0..p3 (unary parameters), scale (gather_cols)
    uint code;         // batch.comp's step code; unused by the kernels' own shaders
} p;

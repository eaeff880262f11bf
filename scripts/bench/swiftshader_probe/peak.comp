#version 450
// SwiftShader's own multiply-add peak (probe.sh): 12 independent chains per
// lane, 96 multiply-adds per loop iteration; WG lanes per workgroup. The
// factor and addend are values computed at run time (as a GEMM's are), not
// constants: SwiftShader's JIT reloads a constant from memory at each use
// (movabs + movups). OP 0: fma() (SPIR-V Fma), 1: a * b + c (OpFMul + OpFAdd).
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x = WG) in;
layout(buffer_reference, std430) buffer F { float v[]; };
layout(push_constant) uniform P { uvec2 a; uint n; } p;
void main() {
  float x = float(gl_GlobalInvocationID.x) * 1e-9;
  float y = 0.999999 - x * 1e-3, z = 1e-7 + x * 1e-3;
  float acc[12];
  [[unroll]] for (int i = 0; i < 12; i++) acc[i] = x + float(i);
  for (uint it = 0; it < p.n; it++) {
    [[unroll]] for (int u = 0; u < 8; u++)
    [[unroll]] for (int i = 0; i < 12; i++)
#if OP == 0
      acc[i] = fma(acc[i], y, z);
#else
      acc[i] = acc[i] * y + z;
#endif
  }
  float s = 0; [[unroll]] for (int i = 0; i < 12; i++) s += acc[i];
  if (s == 12345.0) F(p.a).v[gl_GlobalInvocationID.x] = s;
}

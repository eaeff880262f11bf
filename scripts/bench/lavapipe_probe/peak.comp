#version 450
// lavapipe's own multiply-add peak (probe.sh): 12 independent chains per lane,
// 96 fma per loop iteration; WG lanes per workgroup.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(local_size_x = WG) in;
layout(buffer_reference, std430) buffer F { float v[]; };
layout(push_constant) uniform P { uint64_t a; uint n; } p;
void main() {
  float x = float(gl_GlobalInvocationID.x) * 1e-9;
  float acc[12];
  for (int i = 0; i < 12; i++) acc[i] = x + float(i);
  for (uint it = 0; it < p.n; it++) {
    [[unroll]] for (int u = 0; u < 8; u++)
    [[unroll]] for (int i = 0; i < 12; i++) acc[i] = fma(acc[i], 0.999999, 1e-7);
  }
  float s = 0; for (int i = 0; i < 12; i++) s += acc[i];
  if (s == 12345.0) F(p.a).v[gl_GlobalInvocationID.x] = s;
}

#version 450
// What one operation costs SwiftShader, per subgroup (probe.sh): every
// iteration does 8 of the operation MODE names, each feeding a multiply-add.
// Buffer references are formed once (as the portable mm_regblock does) and
// indexed with a 32-bit element index in the loop. WG lanes a workgroup.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_shuffle : require
layout(local_size_x = WG) in;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer F { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) buffer F4 { vec4 v[]; };
layout(push_constant) uniform P { uvec2 a; uint n; uint umask; uint tmask; } p;
layout(set = 0, binding = 0, std430) buffer SB { float f[]; } sb;
layout(set = 0, binding = 2) uniform samplerBuffer t1;
shared float sh[2048];
void main() {
    uint l = gl_LocalInvocationID.x;
    uint ebase = (gl_WorkGroupID.x % 64) * 16384u;  // this workgroup's floats
    F r = F(p.a);
    F4 r4 = F4(p.a);
    F rl = F(p.a + uvec2(4u * (ebase + l), 0u));  // lane l's own reference (no carry: the probe's buffer is small)
    float acc[8];
    [[unroll]] for (int i = 0; i < 8; i++) acc[i] = float(l + i);
    for (uint i = l; i < 2048; i += WG) sh[i] = float(i);
    barrier();
    for (uint it = 0; it < p.n; it++) {
        [[unroll]] for (int i = 0; i < 8; i++) {
#if MODE == 0  // a 4-byte load through a reference, each lane its own index
            float v = r.v[ebase + ((it * 64u + l * 8u + i) & 16383u)];
#elif MODE == 1  // a 4-byte load through a reference, one index for all lanes
            float v = r.v[ebase + ((it * 64u + i) & 16383u)];
#elif MODE == 2  // a 16-byte load (vec4) through a reference, each lane its own index
            vec4 w = r4.v[(ebase >> 2) + ((it * 64u + l * 8u + i) & 4095u)];
            float v = (w.x + w.y) + (w.z + w.w);
#elif MODE == 3  // subgroupBroadcast from a constant lane
            float v = subgroupBroadcast(acc[(i + 1) & 7], i & 3);
#elif MODE == 4  // subgroupShuffle from a constant lane
            float v = subgroupShuffle(acc[(i + 1) & 7], i & 3);
#elif MODE == 5  // a load of shared memory, each lane its own index
            float v = sh[(it * 64u + l * 8u + i) & 2047u];
#elif MODE == 6  // nothing (the loop and the multiply-add)
            float v = acc[(i + 1) & 7];
#elif MODE == 7  // a barrier (workgroup)
            barrier();
            float v = acc[(i + 1) & 7];
#elif MODE == 8  // a store of shared memory, each lane its own index
            sh[(it * 64u + l * 8u + i) & 2047u] = acc[(i + 2) & 7];
            float v = acc[(i + 1) & 7];
#elif MODE == 9  // a 4-byte store through a reference, each lane its own index
            r.v[ebase + ((it * 64u + l * 8u + i) & 16383u)] = acc[(i + 2) & 7];
            float v = acc[(i + 1) & 7];
#elif MODE == 10  // storage-buffer descriptor, 4 bytes, each lane its own index
            float v = sb.f[ebase + ((it * 64u + l * 8u + i) & 16383u)];
#elif MODE == 11  // texelFetch of a R32_SFLOAT uniform texel buffer, each lane its own index
            float v = texelFetch(t1, int((ebase + it * 64u + l * 8u + i) & p.tmask)).x;
#elif MODE == 12  // the four adds of a vec4's components alone (baseline of mode 2)
            vec4 w = vec4(acc[(i + 1) & 7], acc[(i + 2) & 7], acc[(i + 3) & 7], acc[(i + 4) & 7]);
            float v = (w.x + w.y) + (w.z + w.w);
#elif MODE == 13  // a 4-byte load through a reference, consecutive lanes consecutive elements
            float v = r.v[ebase + ((it * 64u + i * WG + l) & 16383u)];
#elif MODE == 14  // a load of shared memory, consecutive lanes consecutive elements
            float v = sh[(it * 64u + i * WG + l) & 2047u];
#elif MODE == 15  // storage-buffer descriptor, 4 bytes, consecutive lanes consecutive elements
            float v = sb.f[ebase + ((it * 64u + i * WG + l) & 16383u)];
#elif MODE == 16  // a 4-byte load through a reference formed per lane (as mm_regblock's rows), one index
            float v = rl.v[(it * 64u + i) & 16383u];
#endif
            acc[i] = fma(v, 0.999, acc[i]);
        }
    }
    float s = 0;
    [[unroll]] for (int i = 0; i < 8; i++) s += acc[i];
    if (s == 12345.0) r.v[0] = s;
}

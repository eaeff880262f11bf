#version 450
// What one operation costs lavapipe, per subgroup of 8 lanes (probe.sh):
// every iteration does 8 of the operation MODE names, each feeding an add.
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
#extension GL_KHR_shader_subgroup_shuffle : require
layout(local_size_x = 8) in;
layout(buffer_reference, std430) buffer F { float v; };
layout(buffer_reference, std430) buffer U2 { uint64_t v; };
layout(buffer_reference, std430) buffer V2 { vec2 v; };
layout(buffer_reference, std430) buffer V4 { vec4 v; };
layout(push_constant) uniform P { uint64_t a; uint n; uint umask; uint tmask; } p;
// The same buffer through descriptors (probe.cpp): the index masks in p keep
// every access inside the range the device's limits allowed.
layout(set = 0, binding = 0, std430) readonly buffer SB { float f[]; } sb;
layout(set = 0, binding = 0, std430) readonly buffer SB4 { vec4 f[]; } sb4;
layout(set = 0, binding = 1, std140) uniform UB { vec4 u[4096]; } ub;  // 64 KiB; p.umask <= 4095
layout(set = 0, binding = 2) uniform samplerBuffer t1;
layout(set = 0, binding = 3) uniform samplerBuffer t4;
#if MODE == 18 || MODE == 19
layout(set = 0, binding = 4, r32f) uniform writeonly imageBuffer i1;
#else
layout(set = 0, binding = 4, r32f) uniform readonly imageBuffer i1;
#endif
shared float sh[2048];
void main() {
    uint l = gl_LocalInvocationID.x;
    uint64_t base = p.a + uint64_t(gl_WorkGroupID.x % 64) * 65536ul;
    uint ebase = (gl_WorkGroupID.x % 64) * 16384u;  // the same offset in floats
    float acc[8];
    for (int i = 0; i < 8; i++) acc[i] = float(l + i);
    for (uint i = l; i < 2048; i += 8) sh[i] = float(i);
    barrier();
    for (uint it = 0; it < p.n; it++) {
        [[unroll]] for (int i = 0; i < 8; i++) {
#if MODE == 0  // a 4-byte load, each lane its own address
            float v = F(base + uint64_t(it * 64u + l * 8u + i) * 4ul).v;
#elif MODE == 1  // a 4-byte load, one address for all lanes
            float v = F(base + uint64_t(it * 64u + i) * 4ul).v;
#elif MODE == 2  // an 8-byte load as one uint64 (two floats)
            vec2 w = uintBitsToFloat(unpackUint2x32(U2(base + uint64_t(it * 64u + l * 8u + i) * 4ul).v));
            float v = w.x + w.y;
#elif MODE == 3  // an 8-byte load as a vec2
            vec2 w = V2(base + uint64_t(it * 64u + l * 8u + i) * 4ul).v;
            float v = w.x + w.y;
#elif MODE == 4  // subgroupBroadcast from a constant lane
            float v = subgroupBroadcast(acc[(i + 1) & 7], i);
#elif MODE == 5  // subgroupShuffle from a constant lane
            float v = subgroupShuffle(acc[(i + 1) & 7], i);
#elif MODE == 6  // a load of shared memory, each lane its own address
            float v = sh[(it * 64u + l * 8u + i) & 2047u];
#elif MODE == 7  // fma alone (no load): the cost of the loop around the others
            float v = acc[(i + 1) & 7];
#elif MODE == 8  // storage-buffer descriptor, 4 bytes, each lane its own index
            float v = sb.f[ebase + it * 64u + l * 8u + i];
#elif MODE == 9  // storage-buffer descriptor, a vec4, each lane its own index
            vec4 w = sb4.f[(ebase + it * 64u + l * 8u + i) >> 2];
            float v = (w.x + w.y) + (w.z + w.w);
#elif MODE == 10  // uniform buffer, a vec4, each lane its own index
            vec4 w = ub.u[(it * 16u + l * 2u + i) & p.umask];
            float v = (w.x + w.y) + (w.z + w.w);
#elif MODE == 11  // uniform buffer, a vec4, one index for all lanes
            vec4 w = ub.u[(it * 16u + i) & p.umask];
            float v = (w.x + w.y) + (w.z + w.w);
#elif MODE == 12  // texelFetch of a R32_SFLOAT uniform texel buffer, each lane its own index
            float v = texelFetch(t1, int((ebase + it * 64u + l * 8u + i) & p.tmask)).x;
#elif MODE == 13  // texelFetch of a R32G32B32A32_SFLOAT uniform texel buffer, each lane its own index
            vec4 w = texelFetch(t4, int(((ebase + it * 64u + l * 8u + i) & p.tmask) >> 2));
            float v = (w.x + w.y) + (w.z + w.w);
#elif MODE == 14  // imageLoad of a R32_SFLOAT storage texel buffer, each lane its own index
            float v = imageLoad(i1, int((ebase + it * 64u + l * 8u + i) & p.tmask)).x;
#elif MODE == 15  // texelFetch of R32_SFLOAT, one index for all lanes
            float v = texelFetch(t1, int((ebase + it * 64u + i) & p.tmask)).x;
#elif MODE == 16  // buffer reference, a vec4, each lane its own address
            vec4 w = V4(base + uint64_t((it * 64u + l * 8u + i) >> 2) * 16ul).v;
            float v = (w.x + w.y) + (w.z + w.w);
#elif MODE == 17  // the four adds of a vec4's components alone (baseline of 9, 10, 11, 13, 16)
            vec4 w = vec4(acc[(i + 1) & 7], acc[(i + 2) & 7], acc[(i + 3) & 7], acc[(i + 4) & 7]);
            float v = (w.x + w.y) + (w.z + w.w);
#elif MODE == 18  // imageStore to a R32_SFLOAT storage texel buffer, each lane its own index
            imageStore(i1, int((ebase + it * 64u + l * 8u + i) & p.tmask), vec4(acc[(i + 2) & 7]));
            float v = acc[(i + 1) & 7];
#elif MODE == 19  // a 4-byte store through a buffer reference, each lane its own address
            F(base + uint64_t(it * 64u + l * 8u + i) * 4ul).v = acc[(i + 2) & 7];
            float v = acc[(i + 1) & 7];
#endif
            acc[i] = fma(v, 0.999, acc[i]);
        }
    }
    float s = 0;
    for (int i = 0; i < 8; i++) s += acc[i];
    if (s == 12345.0) F(p.a).v = s;
}

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
layout(push_constant) uniform P { uint64_t a; uint n; } p;
shared float sh[2048];
void main() {
    uint l = gl_LocalInvocationID.x;
    uint64_t base = p.a + uint64_t(gl_WorkGroupID.x % 64) * 65536ul;
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
#endif
            acc[i] = fma(v, 0.999, acc[i]);
        }
    }
    float s = 0;
    for (int i = 0; i < 8; i++) s += acc[i];
    if (s == 12345.0) F(p.a).v = s;
}

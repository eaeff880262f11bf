// Philox 4x32-10 and the values of rand/randn: the GLSL twin of
// src/core/philox.hpp/.cpp, which documents the algorithm. A shader includes
// this file and calls philox_uniform(seed, k) or philox_normal(seed, k) with
// seed = (lo, hi) 32-bit halves and k = (lo, hi) halves of the element's
// column-major logical index. The normal is bit-identical to the CPU's: only
// integer operations, exact int→float conversions and single float +, −, ×
// appear, every float temporary is `precise` (no fused multiply-add), and
// every constant is given by its bit pattern. Keep each expression in step
// with philox.cpp.
#ifndef VELA_PHILOX_GLSL
#define VELA_PHILOX_GLSL

uvec4 philox4x32_10(uvec4 c, uvec2 k) {
    const uint M0 = 0xD2511F53u, M1 = 0xCD9E8D57u, W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
    for (int round = 0; round < 10; round++) {
        if (round > 0) k += uvec2(W0, W1);
        uint hi0, lo0, hi1, lo1;
        umulExtended(M0, c.x, hi0, lo0);
        umulExtended(M1, c.z, hi1, lo1);
        c = uvec4(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
    }
    return c;
}

uvec4 philox_draw(uvec2 seed, uvec2 k) { return philox4x32_10(uvec4(k.x, k.y, 0u, 0u), seed); }

// ln((a + 1)·2^-24) for a < 2^24.
float philox_log_unit(uint a) {
    precise float f = float(a + 1u);
    uint u = floatBitsToUint(f);
    int e = int(u >> 23) - 127;
    precise float m = uintBitsToFloat((u & 0x007fffffu) | 0x3f800000u);
    if (m > uintBitsToFloat(0x3fb504f3u)) {  // √2
        m = m * 0.5;
        e = e + 1;
    }
    precise float h = (m + 1.0) * 0.5;
    precise float y = 2.0 - h;
    y = y * (2.0 - h * y);
    y = y * (2.0 - h * y);
    y = y * (2.0 - h * y);
    y = y * (2.0 - h * y);
    precise float s = (m - 1.0) * y * 0.5;
    precise float z = s * s;
    precise float p = uintBitsToFloat(0x3dba2e8cu);       // 1/11
    p = p * z + uintBitsToFloat(0x3de38e39u);             // 1/9
    p = p * z + uintBitsToFloat(0x3e124925u);             // 1/7
    p = p * z + uintBitsToFloat(0x3e4ccccdu);             // 1/5
    p = p * z + uintBitsToFloat(0x3eaaaaabu);             // 1/3
    precise float lnm = (s + s * (z * p)) * 2.0;
    precise float ef = float(e - 24);
    precise float lo = ef * uintBitsToFloat(0x35bfbe8eu) + lnm;  // ln2 lo
    precise float v = ef * uintBitsToFloat(0x3f317200u) + lo;    // ln2 hi
    return v;
}

// √r for 0 ≤ r < 64.
float philox_sqrt_small(float r) {
    precise float y = uintBitsToFloat(0x5f3759dfu - (floatBitsToUint(r) >> 1));
    precise float hr = 0.5 * r;
    y = y * (1.5 - hr * y * y);
    y = y * (1.5 - hr * y * y);
    y = y * (1.5 - hr * y * y);
    y = y * (1.5 - hr * y * y);
    precise float out_ = r * y;
    return out_;
}

// cos(2π·b·2^-24) for b < 2^24.
float philox_cos_turn(uint b) {
    uint q = (b + (1u << 21)) >> 22;
    int rem = int(b) - int(q << 22);
    precise float x = float(rem) * uintBitsToFloat(0x34c90fdbu);  // 2π·2^-24
    precise float z = x * x;
    precise float c = uintBitsToFloat(0xb493f27eu);
    c = c * z + uintBitsToFloat(0x37d00d01u);
    c = c * z + uintBitsToFloat(0xbab60b61u);
    c = c * z + uintBitsToFloat(0x3d2aaaabu);
    c = c * z + uintBitsToFloat(0xbf000000u);
    c = c * z + 1.0;
    precise float s = uintBitsToFloat(0x3638ef1du);
    s = s * z + uintBitsToFloat(0xb9500d01u);
    s = s * z + uintBitsToFloat(0x3c088889u);
    s = s * z + uintBitsToFloat(0xbe2aaaabu);
    s = x + x * (z * s);
    q = q & 3u;
    return q == 0u ? c : q == 1u ? -s : q == 2u ? -c : s;
}

float philox_normal_from_bits(uint w0, uint w1) {
    precise float r = -2.0 * philox_log_unit(w0 >> 8);
    precise float v = philox_sqrt_small(r) * philox_cos_turn(w1 >> 8);
    return v;
}

float philox_uniform(uvec2 seed, uvec2 k) { return float(philox_draw(seed, k).x >> 8) * uintBitsToFloat(0x33800000u); }

float philox_normal(uvec2 seed, uvec2 k) {
    uvec4 w = philox_draw(seed, k);
    return philox_normal_from_bits(w.x, w.y);
}

#endif

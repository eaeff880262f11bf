// Exact unsigned division a / d (d ≥ 1, d < 2^30) without an integer divide.
// CPU drivers (llvmpipe, SwiftShader) have no vector integer division: a `/`
// or `%` on a non-constant divisor runs lane by lane, a hardware divide each,
// and in the index arithmetic of the convolution shaders that cost more than
// their loads and stores. Here the quotient is estimated in float (1/d once,
// one multiply), refined once by the remainder in float, then corrected by
// ±1 with integer arithmetic, so the result is exact for every 32-bit a (the
// first estimate is within a·2^-21 of a/d, so the remainder fits an int; the
// second within 1). tests/test_conv.cpp replays these steps in float32 against
// integer division, the reciprocal off by up to 3 ulp (2.66 billion pairs were
// checked once so, none off).
// udiv_rcp(d) is 1/d; a shader dividing by one d many times computes it once.
float udiv_rcp(uint d) { return 1.0 / float(d); }

uint udiv(uint a, uint d, float rd) {
    uint q = uint(min(float(a) * rd, 4294967040.0));  // within a·2^-21 of a/d
    int r = int(a - q * d);                             // a − q·d, small: exact in int
    q += uint(int(floor(float(r) * rd)));               // within 1 of a/d
    r = int(a - q * d);
    if (r < 0) q -= 1u;
    else if (uint(r) >= d) q += 1u;
    return q;
}
uint udiv(uint a, uint d) { return udiv(a, d, udiv_rcp(d)); }

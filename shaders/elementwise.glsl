// The per-element work of the elementwise kernels, shared by their own shaders
// (level1.comp, unary.comp, binary.comp, backward.comp, add_bias.comp), where the operation is
// a specialization constant and folds away, and by batch.comp, which runs many
// small kernels in one dispatch with the operation read from memory. One
// definition, so a kernel computes the same values batched or not.
//
// Each function does the work of one invocation: element k (column-major
// logical order) of the views, or, in the _vec4 forms, elements k..k+3 of
// dense 16-byte aligned runs (with a scalar tail when fewer than four remain).
// Requires common.glsl.

layout(buffer_reference, buffer_reference_align = 16) buffer V4 { vec4 v; };

// The op table's constants, unary_f, act_f and act_prime_f: ops.glsl, generated
// from src/core/ops.def (cmake/opgen.cpp).
#include "ops.glsl"

// The four-lane form, for the arithmetic rows only (mul, div, add, sub: the host
// takes the vec4 path for no other op); an other number gives NaN. Every row
// of core/binary.def is binary_s of ops.glsl, one element at a time.
vec4 binary_f(uint op, vec4 x, vec4 y) {
    return op == BINARY_mul ? x * y
         : op == BINARY_div ? x / y
         : op == BINARY_add ? x + y
         : op == BINARY_sub ? x - y
                            : vec4(uintBitsToFloat(0x7fc00000u));
}

// y ← f(x)
void unary_element(uint op, View x, View y, uint k, vec4 q) { st(y, k, unary_f(op, ld(x, k), q)); }
void unary_vec4(uint op, View x, View y, uint k, uint n, vec4 q) {
    if (n - k >= 4u) {  // on CPU devices each buffer access is a per-lane loop: a vec4 costs one
        vec4 v = V4(addr_f32(x.addr, k)).v;
        V4(addr_f32(y.addr, k)).v = vec4(unary_f(op, v.x, q), unary_f(op, v.y, q), unary_f(op, v.z, q),
                                                unary_f(op, v.w, q));
        return;
    }
    for (; k < n; ++k) store_f32(y.addr, k, unary_f(op, load_f32(x.addr, k), q));
}

// c ← a ∘ b
void binary_element(uint op, View a, View b, View c, uint k) {
    st(c, k, binary_s(op, ld(a, k), ld(b, k)));
}
void binary_vec4(uint op, View a, View b, View c, uint k, uint n) {
    if (n - k >= 4u) {
        V4(addr_f32(c.addr, k)).v =
            binary_f(op, V4(addr_f32(a.addr, k)).v, V4(addr_f32(b.addr, k)).v);
        return;
    }
    for (; k < n; ++k) store_f32(c.addr, k, binary_f(op, vec4(load_f32(a.addr, k)), vec4(load_f32(b.addr, k))).x);
}

// delta ← da ∘ act′(x): the backward step of activation `act` (vela::Act).
void backward_element(uint act, View da, View x, View delta, uint k) {
    st(delta, k, ld(da, k) * act_prime_f(act, ld(x, k)));
}
void backward_vec4(uint act, View da, View x, View delta, uint k, uint n) {
    if (n - k >= 4u) {
        vec4 g = V4(addr_f32(da.addr, k)).v, v = V4(addr_f32(x.addr, k)).v;
        V4(addr_f32(delta.addr, k)).v = g * vec4(act_prime_f(act, v.x), act_prime_f(act, v.y),
                                                        act_prime_f(act, v.z), act_prime_f(act, v.w));
        return;
    }
    for (; k < n; ++k) store_f32(delta.addr, k, load_f32(da.addr, k) * act_prime_f(act, load_f32(x.addr, k)));
}

// Level 1 on float views: fill (y ← α), scal (y ← α·y), copy (y ← x), swap,
// axpby (y ← α·x + β·y; β = 0 never reads y, as in BLAS: NaN there does not propagate).
void level1_element(uint op, View x, View y, uint k, float alpha, float beta) {
    uint iy = view_index(y, k);
    if (op == L1_FILL) {
        store_f32(y.addr, iy, alpha);
    } else if (op == L1_SCAL) {  // α·y as IEEE says: 0·NaN and 0·Inf are NaN (reference BLAS, cpu)
        store_f32(y.addr, iy, alpha * load_f32(y.addr, iy));
    } else if (op == L1_COPY) {
        store_f32(y.addr, iy, load_f32(x.addr, view_index(x, k)));
    } else if (op == L1_SWAP) {
        uint ix = view_index(x, k);
        float a = load_f32(x.addr, ix);
        store_f32(x.addr, ix, load_f32(y.addr, iy));
        store_f32(y.addr, iy, a);
    } else if (op == L1_AXPBY) {
        float ax = alpha * load_f32(x.addr, view_index(x, k));
        store_f32(y.addr, iy, beta == 0.0 ? ax : ax + beta * load_f32(y.addr, iy));
    }
}
// fill, scal and axpby only.
void level1_vec4(uint op, View x, View y, uint k, uint n, float alpha, float beta) {
    if (n - k >= 4u) {
        V4 yv = V4(addr_f32(y.addr, k));
        if (op == L1_FILL) {
            yv.v = vec4(alpha);
        } else if (op == L1_SCAL) {
            yv.v = alpha * yv.v;
        } else if (op == L1_AXPBY) {
            vec4 ax = alpha * V4(addr_f32(x.addr, k)).v;
            yv.v = beta == 0.0 ? ax : ax + beta * yv.v;
        }
        return;
    }
    if (op != L1_FILL && op != L1_SCAL && op != L1_AXPBY) return;
    for (; k < n; ++k) {
        float v = op == L1_FILL   ? alpha
                  : op == L1_SCAL ? alpha * load_f32(y.addr, k)
                                  : alpha * load_f32(x.addr, k);
        if (op == L1_AXPBY && beta != 0.0) v += beta * load_f32(y.addr, k);
        store_f32(y.addr, k, v);
    }
}

// y(i, j) += b(i): b an m-vector (element i at b.addr + i·b.rstep), y m×n with y.rows = m.
void add_bias_element(View b, View y, uint k) {
    uint j = k / y.rows;
    uint i = k - j * y.rows;
    uint iy = view_index2(y, i, j);
    store_f32(y.addr, iy, load_f32(y.addr, iy) + load_f32(b.addr, i * b.rstep));
}

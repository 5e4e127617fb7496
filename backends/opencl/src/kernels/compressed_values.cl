// compressed_values.cl: what a compressed weight's stored bytes mean (spec/compressed.md), shared
// by the GEMM kernels that dequantise: the type codes (after common.cl's f32, f16, bf16), a code's
// value, a scale's or zero point's value, and one weight's W_f = (q - z) s in f32 (exact q - z,
// one rounding of the product), as OpenVINO's moe_gemm dequantises.

#define MOE_U8 10
#define MOE_I8 11
#define MOE_U4 12
#define MOE_I4 13
#define MOE_F4E2M1 14
#define MOE_F8E4M3 15
#define MOE_F8E5M2 16
#define MOE_F8E8M0 17

// The stored code of element i: a byte, or a nibble (low first) of the 4-bit types.
inline uint moe_code(__global const uchar* p, ulong i, int type) {
    if (type == MOE_U4 || type == MOE_I4 || type == MOE_F4E2M1) {
        const uint b = p[i >> 1];
        return (i & 1) ? b >> 4 : b & 15u;
    }
    return p[i];
}

// The value of an E2M1 code (0 .. 15) as f32 bits, without a branch or a conversion: for a
// magnitude code a = 2 .. 7 (values 1 .. 6) the bits are a + 252 from bit 22 on (exponent and
// mantissa bit, bias 127), a = 1 is 0.5 (0x3F000000) and 0 is 0; the sign or-ed in (code 8 is
// -0). A float select of the subnormal and the normal value was a branch a code in clang's PTX of
// the GPU bodies (MXFP4 moe_gemm_compressed_rows1: 149 branches, 13 as u4 with this and
// moe_param's E8M0), and the CPU body's nibble table takes an integer-to-float conversion, slow on
// NVIDIA (65 more PTX instructions in rows1).
inline float moe_e2m1_f32(uint c) {
    const uint a = c & 7u;
    return as_float((a > 1u ? (a + 252u) << 22 : a * 0x3F000000u) | ((c & 8u) << 28));
}

// The magnitude of an FP8 code's low 7 bits a (mbits mantissa bits, exponent bias `bias`) as
// f32, without a branch or an integer-to-float conversion: a normal a's bits are a from bit
// 23 - mbits on, the bias rebased in the exponent; a subnormal a = m is assembled one exponent up,
// as the normal 2^(1 - bias) (1 + m 2^-mbits), and 2^(1 - bias) subtracted (exact, and no f32
// subnormal on the way, so the same with flushing). All integer bits were longer in clang's PTX
// (a clz to normalise m and its zero select: E4M3 rows1 2,107 instructions against 1,595).
inline float moe_f8_magnitude_f32(uint a, const uint mbits, const uint bias) {
    const uint sub = a < (1u << mbits);
    const float v = as_float((a << (23u - mbits)) + ((127u - bias + sub) << 23));
    return v - (sub ? as_float((128u - bias) << 23) : 0.0f);
}

// The value of an E4M3 code: S.1111.111 is NaN, NAN unsigned (0xFF too); the sign or-ed in.
// Everything computed first, the NaN selected last: a conditional with the decode in an arm
// stays a branch a code in clang's PTX of the GPU bodies (E4M3 rows1: 80 branches against 13).
inline float moe_e4m3_f32(uint c) {
    const uint a = c & 0x7Fu;
    const float v = as_float(as_uint(moe_f8_magnitude_f32(a, 3u, 7u)) | ((c & 0x80u) << 24));
    return a == 0x7Fu ? NAN : v;
}

// The value of an E5M2 code: exponent field 31 is infinity (m = 0) or NaN; the sign flipped by a
// xor, as a negation flips it (a negative NaN code is -NAN).
inline float moe_e5m2_f32(uint c) {
    const uint a = c & 0x7Fu;
    const float f = moe_f8_magnitude_f32(a, 2u, 15u), special = a == 0x7Cu ? INFINITY : NAN;
    return as_float(as_uint(a < 0x7Cu ? f : special) ^ ((c & 0x80u) << 24));
}

// The value of a code (spec/compressed.md, section 3).
inline float moe_code_value(uint c, int type) {
    if (type == MOE_U8 || type == MOE_U4) return (float)c;
    if (type == MOE_I8) return (float)(char)c;
    if (type == MOE_I4) return (float)((int)(c << 28) >> 28);  // sign-extended, no select
    if (type == MOE_F4E2M1) return moe_e2m1_f32(c);
    return type == MOE_F8E4M3 ? moe_e4m3_f32(c) : moe_e5m2_f32(c);
}

// A scale or zero point: f32, f16 or bf16 (common.cl's moe_load), E8M0, or the weight's own type.
inline float moe_param(__global const uchar* p, ulong i, int type) {
    if (type == MOE_F8E8M0) {
        // 2^(c - 127) as the f32 of exponent field c, 2^-127 (c = 0) subnormal, without ldexp:
        // selects of constants, where ldexp and its NaN test were a branch a scale in clang's PTX.
        // NAN, not a quiet NaN's bits, as NAN's bits are the implementation's (PoCL's 0x7fffffff).
        const uint c = p[i];
        return c == 255u ? NAN : as_float(c == 0u ? 0x400000u : c << 23);
    }
    if (type == MOE_F32 || type == MOE_F16 || type == MOE_BF16) return moe_load(p, i, type);
    return moe_code_value(moe_code(p, i, type), type);
}

// W_f(n, k) of expert e's [N, K] weight (NK, the only compressed layout), its scales and zero
// points [E, N or 1 (scale_rows), groups]. Any group size: the group is k / (K / groups).
inline float moe_dequant(__global const uchar* restrict W, int w_type, __global const uchar* restrict S, int s_type,
                         __global const uchar* restrict Z, int z_type, int has_zero, uint groups, uint scale_rows,
                         uint e, uint N, uint K, uint n, uint k) {
    const ulong p = ((ulong)e * scale_rows + (scale_rows == 1 ? 0 : n)) * groups + k / (K / groups);
    const float s = moe_param(S, p, s_type), z = has_zero ? moe_param(Z, p, z_type) : 0.0f;
    return (moe_code_value(moe_code(W, ((ulong)e * N + n) * K + k, w_type), w_type) - z) * s;
}

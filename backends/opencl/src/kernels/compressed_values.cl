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

// The value of a code (spec/compressed.md, section 3).
inline float moe_code_value(uint c, int type) {
    if (type == MOE_U8 || type == MOE_U4) return (float)c;
    if (type == MOE_I8) return (float)(char)c;
    if (type == MOE_I4) return c >= 8u ? (float)c - 16.0f : (float)c;
    float v;
    if (type == MOE_F4E2M1) {
        const int e = (c >> 1) & 3, m = c & 1;
        v = e == 0 ? 0.5f * (float)m : ldexp(1.0f + 0.5f * (float)m, e - 1);
        return (c & 8u) ? -v : v;
    }
    if (type == MOE_F8E4M3) {
        const int e = (c >> 3) & 15, m = c & 7;
        if (e == 15 && m == 7) return NAN;
        v = e == 0 ? ldexp((float)m, -9) : ldexp(1.0f + (float)m / 8.0f, e - 7);
    } else {  // E5M2
        const int e = (c >> 2) & 31, m = c & 3;
        if (e == 31) v = m ? NAN : INFINITY;
        else v = e == 0 ? ldexp((float)m, -16) : ldexp(1.0f + (float)m / 4.0f, e - 15);
    }
    return (c & 0x80u) ? -v : v;
}

// A scale or zero point: f32, f16 or bf16 (common.cl's moe_load), E8M0, or the weight's own type.
inline float moe_param(__global const uchar* p, ulong i, int type) {
    if (type == MOE_F8E8M0) {
        const int c = p[i];
        return c == 255 ? NAN : ldexp(1.0f, c - 127);
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

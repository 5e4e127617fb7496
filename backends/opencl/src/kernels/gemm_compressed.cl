// moe_gemm_compressed: the GEMM of every used expert's rows on compressed weights
// (spec/compressed.md), dequantised inside the kernel as OpenVINO's moe_gemm does: each weight is
// read in its stored type (u8, i8, u4, i4 two per byte with element 2i in the low nibble, E2M1,
// E4M3, E5M2) with its group's scale (f32, f16, bf16, E8M0) and zero point, and W_f = (q - z) s
// is formed in f32 (exact q - z, one rounding of the product) right before it is multiplied.
//   C[c_row0 + m, n] = sum_k A[a_row0 + m, k] * W_f[expert](n, k)  (+ bias[expert, n])
// One work-item per output column n of a row tile (the same tile table as moe_gemm); it walks
// the tile's rows eight at a time, so a weight is decoded once for eight rows. Weights are NK
// ([E, N, K], the only compressed layout), scales and zero points [E, N or 1, G].
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

__kernel void moe_gemm_compressed(__global const float* restrict A, __global const uint* restrict tiles, uint first,
                                  uint N, uint K, __global const uchar* restrict W, int w_type,
                                  __global const uchar* restrict S, int s_type, __global const uchar* restrict Z,
                                  int z_type, int has_zero, uint groups, uint scale_rows,
                                  __global const uchar* restrict bias, int b_type, int has_bias,
                                  __global float* restrict C) {
    const uint n = get_global_id(0);
    if (n >= N) return;
    __global const uint* t = tiles + 4 * (first + get_global_id(1));
    const uint expert = t[0], a_row0 = t[1], c_row0 = t[2], rows = t[3];
    const uint gs = K / groups;
    const ulong w_row = ((ulong)expert * N + n) * K;
    const ulong p_row = ((ulong)expert * scale_rows + (scale_rows == 1 ? 0 : n)) * groups;
    const float bv = has_bias ? moe_load(bias, (ulong)expert * N + n, b_type) : 0.0f;
    for (uint r0 = 0; r0 < rows; r0 += 8) {
        const uint nr = min(8u, rows - r0);
        float acc[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
        for (uint g = 0; g < groups; ++g) {
            const float s = moe_param(S, p_row + g, s_type);
            const float z = has_zero ? moe_param(Z, p_row + g, z_type) : 0.0f;
            for (uint k = g * gs; k < (g + 1) * gs; ++k) {
                const float w = (moe_code_value(moe_code(W, w_row + k, w_type), w_type) - z) * s;
                for (uint r = 0; r < nr; ++r) acc[r] += w * A[(ulong)(a_row0 + r0 + r) * K + k];
            }
        }
        for (uint r = 0; r < nr; ++r) C[(ulong)(c_row0 + r0 + r) * N + n] = acc[r] + bv;
    }
}

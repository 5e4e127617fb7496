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

// moe_gemm_compressed_rows{1,2,4,8}: the few-row tiles (decode: at most 1, 2, 4 or 8 rows of one
// expert) when every lane's slice lies in one group (K and K / groups multiples of 16, checked on
// the host). Lane groups of MOE_CR_LG work-items share an output column n (a work-group of
// MOE_CR_WG work-items covers MOE_CR_WG / MOE_CR_LG columns): lane j reads stored elements
// k = 16j .. 16j + 15 of the weight row, then 16 * MOE_CR_LG further on, ..., one 8-byte load of
// 4-bit codes or one 16-byte load of 8-bit codes, so the lanes of a GPU warp read consecutive
// bytes of the row (moe_gemm_compressed's work-items read addresses a row apart). Each weight is
// decoded once, W_f = (q - z) s in f32 as in moe_gemm_compressed (the slice's scale and zero
// point loaded once), and used by every row of the tile. The lanes' partial sums meet in local
// memory, as in moe_gemm_rows_nk_wide. The weight type is a constant in each branch of the
// kernel's switch, so every decode is specialised.
#ifndef MOE_CR_LG
#if MOE_GEMM_WIDE
#define MOE_CR_LG 32
#define MOE_CR_WG 128
#define MOE_CR_CPW 4
#else
#define MOE_CR_LG 1
#define MOE_CR_WG 16
#define MOE_CR_CPW 1
#endif
#endif
#if MOE_CR_WG % MOE_CR_LG || MOE_CR_CPW > 4
#error "moe_gemm_compressed_rows: whole lane groups per work-group"
#endif

// The value of a code of a constant type: exact, by assembling the f32 bits (no ldexp).
inline float moe_code_f32(uint c, const int type) {
    if (type == MOE_U8 || type == MOE_U4) return (float)c;
    if (type == MOE_I8) return (float)(char)c;
    if (type == MOE_I4) return (float)((int)(c << 28) >> 28);
    if (type == MOE_F4E2M1) {
        const uint e = (c >> 1) & 3u, m = c & 1u;
        const float v = e == 0 ? 0.5f * (float)m : as_float(((e + 126u) << 23) | (m << 22));
        return (c & 8u) ? -v : v;
    }
    float v;
    if (type == MOE_F8E4M3) {
        const uint e = (c >> 3) & 15u, m = c & 7u;
        if (e == 15u && m == 7u) return NAN;
        v = e == 0 ? (float)m * 0x1p-9f : as_float(((e + 120u) << 23) | (m << 20));
    } else {  // E5M2
        const uint e = (c >> 2) & 31u, m = c & 3u;
        if (e == 31u) v = m ? NAN : INFINITY;
        else v = e == 0 ? (float)m * 0x1p-16f : as_float(((e + 112u) << 23) | (m << 21));
    }
    return (c & 0x80u) ? -v : v;
}

// Codes of elements i .. i + 15 (i a multiple of 16): 8 bytes of 4-bit codes, element 2b in the
// low nibble of byte b, or 16 bytes.
inline void moe_codes16(__global const uchar* restrict W, ulong i, const int type, uint* q) {
    if (type == MOE_U4 || type == MOE_I4 || type == MOE_F4E2M1) {
        uchar b[8];
        vstore8(*(__global const uchar8*)(W + (i >> 1)), 0, b);
#pragma unroll
        for (uint j = 0; j < 8; ++j) {
            q[2 * j] = b[j] & 15u;
            q[2 * j + 1] = b[j] >> 4;
        }
    } else {
        uchar b[16];
        vstore16(*(__global const uchar16*)(W + i), 0, b);
#pragma unroll
        for (uint j = 0; j < 16; ++j) q[j] = b[j];
    }
}

inline void moe_gemm_compressed_rows_body(__global const float* restrict A, __global const uint* restrict t, uint N,
                                          uint K, __global const uchar* restrict W, const int w_type,
                                          __global const uchar* restrict S, int s_type,
                                          __global const uchar* restrict Z, int z_type, int has_zero, uint groups,
                                          uint scale_rows, __global const uchar* restrict bias, int b_type,
                                          int has_bias, __global float* restrict C, const uint MR,
                                          __local float* red) {
    const uint LG = MOE_CR_LG, G = MOE_CR_WG / MOE_CR_LG, GP = LG + (LG > 1);  // a group's slot in `red`, padded
    const uint CPW = MOE_CR_CPW, GC = G * CPW;  // columns per lane group and per work-group
    const uint l = get_local_id(0), lane = l % LG, g = l / LG;
    const uint expert = t[0], a_row0 = t[1], c_row0 = t[2], rows = t[3];
    const uint n0 = get_group_id(0) * GC + g * CPW;  // this lane group's columns n0 .. n0 + CPW - 1
    const uint gs = K / groups;
    ulong w_row[4], p_row[4];
#pragma unroll
    for (uint c = 0; c < CPW; ++c) {
        const uint nc = min(n0 + c, N - 1);
        w_row[c] = ((ulong)expert * N + nc) * K;
        p_row[c] = ((ulong)expert * scale_rows + (scale_rows == 1 ? 0 : nc)) * groups;
    }
    __global const float* a_rows[8];
#pragma unroll
    for (uint i = 0; i < MR; ++i) a_rows[i] = A + (ulong)(a_row0 + min(i, rows - 1)) * K;
    float acc[8][4];
#pragma unroll
    for (uint i = 0; i < MR; ++i)
#pragma unroll
        for (uint c = 0; c < CPW; ++c) acc[i][c] = 0.0f;
    for (uint k = lane * 16; k < K; k += LG * 16) {
        const uint grp = k / gs;
        float w[4][16];
#pragma unroll
        for (uint c = 0; c < CPW; ++c) {
            const float s = moe_param(S, p_row[c] + grp, s_type);
            const float z = has_zero ? moe_param(Z, p_row[c] + grp, z_type) : 0.0f;
            uint q[16];
            moe_codes16(W, w_row[c] + k, w_type, q);
#pragma unroll
            for (uint j = 0; j < 16; ++j) w[c][j] = (moe_code_f32(q[j], w_type) - z) * s;
        }
#pragma unroll
        for (uint i = 0; i < MR; ++i) {
#pragma unroll
            for (uint j4 = 0; j4 < 4; ++j4) {
                const float4 a = vload4(j4, a_rows[i] + k);
#pragma unroll
                for (uint c = 0; c < CPW; ++c)
                    acc[i][c] += a.s0 * w[c][4 * j4] + a.s1 * w[c][4 * j4 + 1] + a.s2 * w[c][4 * j4 + 2] +
                                 a.s3 * w[c][4 * j4 + 3];
            }
        }
    }
    if (LG == 1) {
#pragma unroll
        for (uint c = 0; c < CPW; ++c) {
            const uint n = n0 + c;
            if (n >= N) continue;
            const float bv = has_bias ? moe_load(bias, (ulong)expert * N + n, b_type) : 0.0f;
#pragma unroll
            for (uint i = 0; i < MR; ++i)
                if (i < rows) C[(ulong)(c_row0 + i) * N + n] = acc[i][c] + bv;
        }
        return;
    }
#pragma unroll
    for (uint i = 0; i < MR; ++i)
#pragma unroll
        for (uint c = 0; c < CPW; ++c) red[((i * CPW + c) * G + g) * GP + lane] = acc[i][c];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint o = l; o < MR * GC; o += MOE_CR_WG) {
        const uint i = o / GC, gc = o % GC, n = get_group_id(0) * GC + gc;
        __local const float* p = red + ((i * CPW + gc % CPW) * G + gc / CPW) * GP;
        float sum = 0.0f;
        for (uint j = 0; j < LG; ++j) sum += p[j];
        if (i >= rows || n >= N) continue;
        C[(ulong)(c_row0 + i) * N + n] = sum + (has_bias ? moe_load(bias, (ulong)expert * N + n, b_type) : 0.0f);
    }
}

#define MOE_CR_CASE(T)                                                                                          \
    case T:                                                                                                     \
        moe_gemm_compressed_rows_body(A, t, N, K, W, T, S, s_type, Z, z_type, has_zero, groups, scale_rows,     \
                                      bias, b_type, has_bias, C, MR, red);                                      \
        break;
#define MOE_GEMM_COMPRESSED_ROWS_KERNEL(NAME, MR_)                                                              \
    __kernel __attribute__((reqd_work_group_size(MOE_CR_WG, 1, 1))) void NAME(                                  \
        __global const float* restrict A, __global const uint* restrict tiles, uint first, uint N, uint K,      \
        __global const uchar* restrict W, int w_type, __global const uchar* restrict S, int s_type,             \
        __global const uchar* restrict Z, int z_type, int has_zero, uint groups, uint scale_rows,               \
        __global const uchar* restrict bias, int b_type, int has_bias, __global float* restrict C) {            \
        const uint MR = MR_;                                                                                    \
        __local float red[MR_ * MOE_CR_CPW * (MOE_CR_WG + MOE_CR_WG / MOE_CR_LG)];                                       \
        __global const uint* t = tiles + 4 * (first + get_group_id(1));                                         \
        switch (w_type) {                                                                                       \
            MOE_CR_CASE(MOE_U8)                                                                                 \
            MOE_CR_CASE(MOE_I8)                                                                                 \
            MOE_CR_CASE(MOE_U4)                                                                                 \
            MOE_CR_CASE(MOE_I4)                                                                                 \
            MOE_CR_CASE(MOE_F4E2M1)                                                                             \
            MOE_CR_CASE(MOE_F8E4M3)                                                                             \
            default: MOE_CR_CASE(MOE_F8E5M2)                                                                    \
        }                                                                                                       \
    }
MOE_GEMM_COMPRESSED_ROWS_KERNEL(moe_gemm_compressed_rows1, 1)
MOE_GEMM_COMPRESSED_ROWS_KERNEL(moe_gemm_compressed_rows2, 2)
MOE_GEMM_COMPRESSED_ROWS_KERNEL(moe_gemm_compressed_rows4, 4)
MOE_GEMM_COMPRESSED_ROWS_KERNEL(moe_gemm_compressed_rows8, 8)

// The program is built once per kind of compressed weight (Runtime::build_compressed): its types
// are compile-time constants, so no kernel switches on them at run time (as arguments, switched on
// inside the k-loop, they gave moe_gemm_compressed_rows1 4,822 branches in NVIDIA's PTX; clang's
// PTX of it: 2,800 before, 13 for u4 with f16 scales and u4 zero points, docs/opencl-backend.md):
//   MOE_CW  the weight's code type (MOE_U8 .. MOE_F8E5M2)
//   MOE_CS  the scale's type (MOE_F32, MOE_F16, MOE_BF16, MOE_F8E8M0)
//   MOE_CZ  the zero point's type, or -1 without zero points
//   MOE_CV  the suffix of every kernel name (_u4_f16_u4: weight, scale, zero point), so that the
//           kernels of several such programs have names of their own
#if !defined(MOE_CW) || !defined(MOE_CS) || !defined(MOE_CZ) || !defined(MOE_CV)
#error "gemm_compressed.cl: build with -DMOE_CW, -DMOE_CS, -DMOE_CZ and -DMOE_CV (cl_runtime.cpp)"
#endif
#define MOE_CHAS_ZERO (MOE_CZ >= 0)
#define MOE_CK_CAT(a, b) a##b
#define MOE_CK_NAME(a, b) MOE_CK_CAT(a, b)
#define MOE_CK(name) MOE_CK_NAME(name, MOE_CV)  // moe_gemm_compressed_rows1 -> moe_gemm_compressed_rows1_u4_f16_u4

// moe_gemm_compressed: the GEMM of every used expert's rows on compressed weights
// (spec/compressed.md), dequantised inside the kernel as OpenVINO's moe_gemm does: each weight is
// read in its stored type (u8, i8, u4, i4 two per byte with element 2i in the low nibble, E2M1,
// E4M3, E5M2) with its group's scale (f32, f16, bf16, E8M0) and zero point, and W_f = (q - z) s
// is formed in f32 (exact q - z, one rounding of the product) right before it is multiplied.
//   C[c_row0 + m, n] = sum_k A[a_row0 + m, k] * W_f[expert](n, k)  (+ bias[expert, n])
// One work-item per output column n of a row tile (the same tile table as moe_gemm); it walks
// the tile's rows eight at a time, so a weight is decoded once for eight rows. Weights are NK
// ([E, N, K], the only compressed layout), scales and zero points [E, N or 1, G].
__kernel void MOE_CK(moe_gemm_compressed)(__global const float* restrict A, __global const uint* restrict tiles,
                                          uint first, uint N, uint K, __global const uchar* restrict W,
                                          __global const uchar* restrict S, __global const uchar* restrict Z,
                                          uint groups, uint scale_rows, __global const uchar* restrict bias,
                                          int b_type, int has_bias, __global float* restrict C) {
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
            const float s = moe_param(S, p_row + g, MOE_CS);
            const float z = MOE_CHAS_ZERO ? moe_param(Z, p_row + g, MOE_CZ) : 0.0f;
            for (uint k = g * gs; k < (g + 1) * gs; ++k) {
                const float w = (moe_code_value(moe_code(W, w_row + k, MOE_CW), MOE_CW) - z) * s;
                for (uint r = 0; r < nr; ++r) acc[r] += w * A[(ulong)(a_row0 + r0 + r) * K + k];
            }
        }
        for (uint r = 0; r < nr; ++r) C[(ulong)(c_row0 + r0 + r) * N + n] = acc[r] + bv;
    }
}

// moe_gemm_compressed_tiled (GPU bodies only): blocks of rows, in the tile shape of
// moe_gemm_*_kn (MOE_GT: work-group, register block and k-step; gemm_gpu.cl's FMA step and
// store), each weight dequantised as in moe_gemm_compressed (moe_dequant, any group size) once
// per block of TM rows, on its way into the local W tile. On the CPU bodies blocks go to
// moe_gemm_compressed_rows* in pieces instead (enqueue_gemm).
// Unlike moe_gemm_tile_wide, no register staging: step s's tiles are written straight into
// buffer s & 1 while the FMAs of step s - 1 read the other one, so the dequantisation sits in
// one rolled loop. Unrolled into the register staging (8 dequantisations per step at two call
// sites, each a switch over the code, scale and zero-point types) it slowed NVIDIA's compiler:
// on an H100 the suite's first case, programs built and autotune run, took 55 s, and 32 s with
// this loop and the compressed kernels in a program of their own (docs/opencl-backend.md).
#if MOE_GEMM_WIDE
inline void moe_gemm_tile_dequant(__global const float* restrict A, __global const uint* restrict tiles, uint N,
                                  uint K, __global const uchar* restrict W, int w_type,
                                  __global const uchar* restrict S, int s_type, __global const uchar* restrict Z,
                                  int z_type, int has_zero, uint groups, uint scale_rows,
                                  __global const uchar* restrict bias, int b_type, int has_bias,
                                  __global float* restrict C, __local float* a_buf, __local float* w_buf,
                                  const uint LX, const uint LY, const uint MWI, const uint NV, const uint TK) {
    const uint TM = LY * MWI, TN = LX * NV * 4, WG = LX * LY, NVT = TN / 4, KV = TK / 4;
    const uint TMP = TM + 4;  // padded as in moe_gemm_tile_wide
    const uint A_SIZE = TK * TMP, W_SIZE = TK * TN;  // in floats
    __global const uint* t = tiles + 4 * get_group_id(1);
    const uint expert = t[0], a_row0 = t[1], c_row0 = t[2], rows = t[3];
    const uint n0 = get_group_id(0) * TN;
    const uint l = get_local_id(1) * LX + get_local_id(0);
    uint x, y;
    moe_wide_xy(LX, LY, &x, &y);

    VT acc[8][4];  // MWI x NV used
    moe_wide_zero(acc, MWI, NV);

    const uint steps = (K + TK - 1) / TK;
    // Iteration s stores step s's tiles into buffer s & 1 and multiplies step s - 1's: buffer
    // s & 1 was last read in iteration s - 1, before its barrier.
    for (uint s = 0; s <= steps; ++s) {
        if (s < steps) {
            const uint k0 = s * TK;
            __local float* at = a_buf + (s & 1) * A_SIZE;
            __local float* wt = w_buf + (s & 1) * W_SIZE;
            for (uint q = l; q < TM * KV; q += WG) {  // A k-major, zero past K
                const uint r = q / KV, c = (q % KV) * 4;
                const float4 a = moe_keep4(vload4(0, A + (ulong)(a_row0 + min(r, rows - 1)) * K + k0 + c), k0 + c, K);
                at[(c + 0) * TMP + r] = a.s0;
                at[(c + 1) * TMP + r] = a.s1;
                at[(c + 2) * TMP + r] = a.s2;
                at[(c + 3) * TMP + r] = a.s3;
            }
            // W columns fastest (the local stores of a warp are consecutive); columns past N read
            // the last one (their results are not stored), elements past K are zero.
#pragma unroll 1
            for (uint q = l; q < TK * TN; q += WG) {
                const uint kk = q / TN, k = k0 + kk;
#ifdef MOE_MUT_TILE_ROW_SKIP
                if (kk == TK - 1) continue;  // the w_tile row kk = TK - 1 is never stored
#endif
                wt[q] = k < K ? moe_dequant(W, w_type, S, s_type, Z, z_type, has_zero, groups, scale_rows, expert, N,
                                            K, min(n0 + q % TN, N - 1), k)
                              : 0.0f;
            }
        }
        if (s > 0) {
            const uint prev = (s - 1) & 1;
            moe_wide_fmas((__local const float4*)(a_buf + prev * A_SIZE) + y * MWI / 4,
                          (__local const VT*)(w_buf + prev * W_SIZE) + x, acc, MWI, NV, TK, TMP, NVT, LX);
        }
#ifndef MOE_MUT_NO_BARRIER
        barrier(CLK_LOCAL_MEM_FENCE);
#endif
    }
    moe_wide_store(acc, C, bias, has_bias, b_type, N, expert, c_row0, rows, n0, x, y, LX, MWI, NV, TN);
}

__kernel __attribute__((reqd_work_group_size(MOE_GT_LX, MOE_GT_LY, 1))) void MOE_CK(moe_gemm_compressed_tiled)(
    __global const float* restrict A, __global const uint* restrict tiles, uint first, uint N, uint K,
    __global const uchar* restrict W, __global const uchar* restrict S, __global const uchar* restrict Z,
    uint groups, uint scale_rows, __global const uchar* restrict bias, int b_type, int has_bias,
    __global float* restrict C) {
    // float4 arrays: the FMA step reads both tiles as vectors
    __local float4 a_tile[2 * MOE_GT_TK * (MOE_GT_LY * MOE_GT_MWI + 4) / 4];
    __local float4 w_tile[2 * MOE_GT_TK * MOE_GT_LX * MOE_GT_NV];
    moe_gemm_tile_dequant(A, tiles + 4 * first, N, K, W, MOE_CW, S, MOE_CS, Z, MOE_CZ, MOE_CHAS_ZERO, groups, scale_rows,
                          bias, b_type, has_bias, C, (__local float*)a_tile, (__local float*)w_tile, MOE_GT_LX, MOE_GT_LY, MOE_GT_MWI, MOE_GT_NV,
                          MOE_GT_TK);
}
#endif

// moe_gemm_compressed_rows{1,2,4,8}: the few-row tiles (decode: at most 1, 2, 4 or 8 rows of one
// expert) when every 16-element slice of a row lies in one group (K and K / groups multiples of 16,
// checked on the host). Each weight is decoded once, W_f = (q - z) s in f32 as in
// moe_gemm_compressed (exact q - z, one rounding of the product; the slice's scale and zero point
// loaded once), and used by every row of the tile. Two bodies, for the two kinds of device
// (gemm_config.cpp); a work-group covers 16 output columns in both:
// - GPUs (MOE_GEMM_WIDE): lane groups of MOE_CR_LG work-items share MOE_CR_CPW output columns
//   (a work-group of MOE_CR_WG work-items covers MOE_CR_WG / MOE_CR_LG * MOE_CR_CPW): lane j reads
//   stored elements k = 16j .. 16j + 15 of each weight row, then 16 * MOE_CR_LG further on, one
//   8-byte load of 4-bit codes or one 16-byte load of 8-bit codes, so the lanes of a warp read
//   consecutive bytes of a row. The lanes' partial sums meet in local memory, as in
//   moe_gemm_rows_nk_wide.
// - CPUs: a work-item takes MOE_CR_CPW columns (MOE_CR_CPW8 = 2 in the 8-row kernel, whose 8 x 4
//   float16 accumulators would fill every vector register: gpt-oss-20b u4 at T = 512, 8-row
//   pieces, 573 ms against 803 with 4) and walks their rows in 16-element slices held in float16 vectors (decoded with vector operations: nibbles interleaved by one byte shuffle, E2M1
//   by a 16-entry table shuffle, FP8 by assembling the f32 bits), 16 partial sums a row and column
//   summed at the end. A work-item per column whose scalar decode PoCL spread across work-items
//   (gathers of bytes a row apart) read 0.6 GB/s of codes.
// The weight, scale and zero-point types are the program's constants (MOE_CW, MOE_CS, MOE_CZ), so
// every decode is specialised and the k-loop has no type switch.
#if MOE_GEMM_WIDE
#define MOE_CR_LG 32
#ifndef MOE_CR_WG
#define MOE_CR_WG 128  // the host passes 64 or 32 where the device or the compiled kernel takes fewer
#endif
#define MOE_CR_CPW 4
#if MOE_CR_WG % MOE_CR_LG || MOE_CR_WG < MOE_CR_LG || MOE_CR_CPW > 4 || MOE_CR_LG < 2
#error "moe_gemm_compressed_rows: whole lane groups per work-group"
#endif
#else
#define MOE_CR_LG 1
#define MOE_CR_WG 4
#define MOE_CR_CPW 4
#define MOE_CR_CPW8 2
#endif

// The stored bytes of elements i .. i + 15 (i a multiple of 16): 8 bytes of 4-bit codes (the
// first half), element 2b in the low nibble of byte b, or 16 bytes; one load either way.
inline uchar16 moe_code_bytes16(__global const uchar* restrict W, ulong i, const int type) {
    if (type == MOE_U4 || type == MOE_I4 || type == MOE_F4E2M1)
        return (uchar16)(*(__global const uchar8*)(W + (i >> 1)), (uchar8)0);
    return *(__global const uchar16*)(W + i);
}

// The 16 codes of those bytes, in element order.
inline void moe_codes16(uchar16 bytes, const int type, uint* q) {
    uchar b[16];
    if (type == MOE_U4 || type == MOE_I4 || type == MOE_F4E2M1) {
        vstore8(bytes.lo, 0, b);
#pragma unroll
        for (uint j = 0; j < 8; ++j) {
            q[2 * j] = b[j] & 15u;
            q[2 * j + 1] = b[j] >> 4;
        }
    } else {
        vstore16(bytes, 0, b);
#pragma unroll
        for (uint j = 0; j < 16; ++j) q[j] = b[j];
    }
}

// Where a tile's columns n0 .. n0 + cpw - 1 start in W and in the scales and zero points (a column
// past N reads the last one; its result is not stored), and its mr rows of A (a row past `rows`
// reads the last one).
__attribute__((always_inline)) inline void moe_cr_tile_rows(__global const float* restrict A, uint expert,
                                                            uint a_row0, uint rows, uint N, uint K, uint groups,
                                                            uint scale_rows, uint n0, uint cpw, uint mr,
                                                            ulong* w_row, ulong* p_row,
                                                            __global const float** a_rows) {
#pragma unroll
    for (uint c = 0; c < cpw; ++c) {
        const uint nc = min(n0 + c, N - 1);
        w_row[c] = ((ulong)expert * N + nc) * K;
        p_row[c] = ((ulong)expert * scale_rows + (scale_rows == 1 ? 0 : nc)) * groups;
    }
#pragma unroll
    for (uint i = 0; i < mr; ++i) a_rows[i] = A + (ulong)(a_row0 + min(i, rows - 1)) * K;
}

#if MOE_GEMM_WIDE
// U steps of the rows body from k on (`stride` elements apart): every step's scales, zero points
// and codes of the CPW rows loaded first, then step by step W_f = (q - z) s and the products with
// the MR rows of A into acc, in the order one step at a time takes them.
inline void moe_cr_steps(__global const float** a_rows,
                         __global const uchar* restrict W, const int w_type, __global const uchar* restrict S,
                         int s_type, __global const uchar* restrict Z, int z_type, int has_zero, uint gs,
                         const ulong* w_row, const ulong* p_row, uint k, uint stride, const uint MR, const uint CPW,
                         float acc[8][4], const uint U) {
    float s[MOE_GR_STEPS][4], z[MOE_GR_STEPS][4];
    uchar16 bytes[MOE_GR_STEPS][4];
#pragma unroll
    for (uint u = 0; u < U; ++u) {
        const uint ku = k + u * stride, grp = ku / gs;
#pragma unroll
        for (uint c = 0; c < CPW; ++c) {
            s[u][c] = moe_param(S, p_row[c] + grp, s_type);
            z[u][c] = has_zero ? moe_param(Z, p_row[c] + grp, z_type) : 0.0f;
            bytes[u][c] = moe_code_bytes16(W, w_row[c] + ku, w_type);
        }
    }
#pragma unroll
    for (uint u = 0; u < U; ++u) {
        const uint ku = k + u * stride;
        float w[4][16];
#pragma unroll
        for (uint c = 0; c < CPW; ++c) {
            uint q[16];
            moe_codes16(bytes[u][c], w_type, q);
#pragma unroll
            for (uint j = 0; j < 16; ++j) w[c][j] = (moe_code_value(q[j], w_type) - z[u][c]) * s[u][c];
        }
#pragma unroll
        for (uint i = 0; i < MR; ++i) {
#pragma unroll
            for (uint j4 = 0; j4 < 4; ++j4) {
                const float4 a = vload4(j4, a_rows[i] + ku);
#pragma unroll
                for (uint c = 0; c < CPW; ++c)
                    acc[i][c] += a.s0 * w[c][4 * j4] + a.s1 * w[c][4 * j4 + 1] + a.s2 * w[c][4 * j4 + 2] +
                                 a.s3 * w[c][4 * j4 + 3];
            }
        }
    }
}

inline void moe_gemm_compressed_rows_body(__global const float* restrict A, __global const uint* restrict t, uint N,
                                          uint K, __global const uchar* restrict W, const int w_type,
                                          __global const uchar* restrict S, int s_type,
                                          __global const uchar* restrict Z, int z_type, int has_zero, uint groups,
                                          uint scale_rows, __global const uchar* restrict bias, int b_type,
                                          int has_bias, __global float* restrict C, const uint MR,
                                          __local float* red) {
    const uint LG = MOE_CR_LG, G = MOE_CR_WG / MOE_CR_LG, GP = LG + 1;  // a group's slot in `red`, padded
    const uint CPW = MOE_CR_CPW, GC = G * CPW;  // columns per lane group and per work-group
    const uint l = get_local_id(0), lane = l % LG, g = l / LG;
    const uint expert = t[0], a_row0 = t[1], c_row0 = t[2], rows = t[3];
    const uint n0 = get_group_id(0) * GC + g * CPW;  // this lane group's columns n0 .. n0 + CPW - 1
    const uint gs = K / groups;
    ulong w_row[4], p_row[4];
    __global const float* a_rows[8];
    moe_cr_tile_rows(A, expert, a_row0, rows, N, K, groups, scale_rows, n0, CPW, MR, w_row, p_row, a_rows);
    float acc[8][4];
#pragma unroll
    for (uint i = 0; i < MR; ++i)
#pragma unroll
        for (uint c = 0; c < CPW; ++c) acc[i][c] = 0.0f;
    // MOE_GR_STEPS steps a pass (gemm_gpu.cl; no such loop when it is 1), then the steps left one
    // at a time.
    const uint U = MOE_GR_STEPS, stride = LG * 16, passes_end = K / (U * stride) * (U * stride);
    uint k = lane * 16;
    if (U > 1)
        for (; k < passes_end; k += U * stride)
            moe_cr_steps(a_rows, W, w_type, S, s_type, Z, z_type, has_zero, gs, w_row, p_row, k, stride, MR, CPW, acc,
                         U);
    for (; k < K; k += stride)
        moe_cr_steps(a_rows, W, w_type, S, s_type, Z, z_type, has_zero, gs, w_row, p_row, k, stride, MR, CPW, acc, 1);
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

#else  // CPU body

// Elements k .. k + 15 of a weight row (k a multiple of 16) as W_f = (q - z) s, in element order.
// Inlined by force: PoCL otherwise keeps it a call, whose type switch then runs per slice.
__attribute__((always_inline)) inline float16 moe_values16(__global const uchar* restrict W, ulong i, const int type, float z, float s) {
    float16 v;
    if (type == MOE_U4 || type == MOE_I4 || type == MOE_F4E2M1) {
        // 8 bytes, element 2b in the low nibble of byte b: the low and the high nibbles interleaved
        // (a swizzle, not shuffle2: PoCL's shuffle is a library call)
        const uchar8 b = vload8(0, W + (i >> 1)), lo = b & (uchar8)15, hi = b >> (uchar8)4;
        const uchar16 q = (uchar16)(lo.s0, hi.s0, lo.s1, hi.s1, lo.s2, hi.s2, lo.s3, hi.s3, lo.s4, hi.s4, lo.s5,
                                    hi.s5, lo.s6, hi.s6, lo.s7, hi.s7);
        if (type == MOE_U4) {
            v = convert_float16(q);
        } else if (type == MOE_I4) {
            v = convert_float16(as_char16(q << (uchar16)4) >> (char16)4);
        } else {  // E2M1: twice the magnitude (0, 1, 2, 3, 4, 6, 8, 12) from a nibble table in one
                  // word, halved (exact), the sign or-ed in
            const uint16 c = convert_uint16(q), twice = ((uint16)(0xC8643210u) >> ((c & 7u) << 2)) & 15u;
            v = as_float16(as_uint16(convert_float16(twice) * 0.5f) | ((c & 8u) << 28));
        }
    } else {
        const uchar16 q = vload16(0, W + i);
        if (type == MOE_U8) {
            v = convert_float16(q);
        } else if (type == MOE_I8) {
            v = convert_float16(as_char16(q));
        } else {
            // FP8: the f32 bits assembled (normal values), subnormals as m * 2^-9 or 2^-16, the
            // specials selected, the sign or-ed in last.
            const uint16 c = convert_uint16(q);
            const uint16 sign = (c & 0x80u) << 24;
            if (type == MOE_F8E4M3) {
                const uint16 e = (c >> 3) & 15u, m = c & 7u;
                const float16 normal = as_float16(((e + 120u) << 23) | (m << 20));
                v = select(normal, convert_float16(m) * 0x1p-9f, as_int16(e == 0u));
                v = select(v, (float16)(NAN), as_int16((e == 15u) & (m == 7u)));
            } else {  // E5M2
                const uint16 e = (c >> 2) & 31u, m = c & 3u;
                const float16 normal = as_float16(((e + 112u) << 23) | (m << 21));
                v = select(normal, convert_float16(m) * 0x1p-16f, as_int16(e == 0u));
                v = select(v, select((float16)(INFINITY), (float16)(NAN), as_int16(m != 0u)), as_int16(e == 31u));
            }
            v = as_float16(as_uint16(v) | sign);
        }
    }
    return (v - z) * s;
}

// count (at most 16) scales or zero points from index i into out, as moe_param reads them. Sixteen
// at a time with vector operations for the types scales and zero points come in (f32, f16, bf16,
// E8M0; the integer weight types), else one at a time: the scalar reads, with their type switch,
// took four fifths of the kernel's time on gpt-oss-20b's groups of 32.
__attribute__((always_inline)) inline void moe_params16(__global const uchar* restrict p, ulong i, uint count,
                                                        int type, float* out) {
    const bool nibbles = type == MOE_U4 || type == MOE_I4;
    if (count == 16 && (!nibbles || i % 2 == 0)) {
        float16 v;
        if (type == MOE_F32) {
            v = vload16(0, (__global const float*)p + i);
        } else if (type == MOE_F16) {  // the f32 bits assembled: exact
            const uint16 h = convert_uint16(vload16(0, (__global const ushort*)p + i));
            const uint16 e = (h >> 10) & 31u, m = h & 0x3ffu, sign = (h & 0x8000u) << 16;
            v = as_float16(((e + 112u) << 23) | (m << 13));
            v = select(v, convert_float16(m) * 0x1p-24f, as_int16(e == 0u));
            v = select(v, as_float16((uint16)(0x7f800000u) | (m << 13)), as_int16(e == 31u));
            v = as_float16(as_uint16(v) | sign);
        } else if (type == MOE_BF16) {
            v = as_float16(convert_uint16(vload16(0, (__global const ushort*)p + i)) << 16);
        } else if (type == MOE_F8E8M0) {  // 2^(c - 127); c = 0 is 2^-127 (subnormal), 255 NaN
            const uint16 c = convert_uint16(vload16(0, p + i));
            v = select(as_float16(c << 23), (float16)(0x1p-127f), as_int16(c == 0u));
            v = select(v, (float16)(NAN), as_int16(c == 255u));
        } else if (type == MOE_U8) {
            v = convert_float16(vload16(0, p + i));
        } else if (type == MOE_I8) {
            v = convert_float16(as_char16(vload16(0, p + i)));
        } else if (nibbles) {
            const uchar8 b = vload8(0, p + i / 2), lo = b & (uchar8)15, hi = b >> (uchar8)4;
            const uchar16 q = (uchar16)(lo.s0, hi.s0, lo.s1, hi.s1, lo.s2, hi.s2, lo.s3, hi.s3, lo.s4, hi.s4, lo.s5,
                                        hi.s5, lo.s6, hi.s6, lo.s7, hi.s7);
            v = type == MOE_U4 ? convert_float16(q) : convert_float16(as_char16(q << (uchar16)4) >> (char16)4);
        } else {
            for (uint j = 0; j < 16; ++j) out[j] = moe_param(p, i + j, type);
            return;
        }
        vstore16(v, 0, out);
        return;
    }
    for (uint j = 0; j < count; ++j) out[j] = moe_param(p, i + j, type);
}

// Inlined by force, so MR and CPW are constants in every kernel and weight type: as a call, PoCL
// kept the accumulators in memory (gpt-oss-20b u4 at T = 1: 8-10 ms against 4.7-5.7).
__attribute__((always_inline)) inline void moe_gemm_compressed_rows_body(__global const float* restrict A, __global const uint* restrict t, uint N,
                                          uint K, __global const uchar* restrict W, const int w_type,
                                          __global const uchar* restrict S, int s_type,
                                          __global const uchar* restrict Z, int z_type, int has_zero, uint groups,
                                          uint scale_rows, __global const uchar* restrict bias, int b_type,
                                          int has_bias, __global float* restrict C, const uint MR,
                                          __local float* red) {
    const uint CPW = MR == 8 ? MOE_CR_CPW8 : MOE_CR_CPW;
    const uint expert = t[0], a_row0 = t[1], c_row0 = t[2], rows = t[3];
    const uint n0 = get_global_id(0) * CPW;  // this work-item's columns n0 .. n0 + CPW - 1
    const uint gs = K / groups;
    ulong w_row[4], p_row[4];
    __global const float* a_rows[8];
    moe_cr_tile_rows(A, expert, a_row0, rows, N, K, groups, scale_rows, n0, CPW, MR, w_row, p_row, a_rows);
    float16 acc[8][4];
#pragma unroll
    for (uint i = 0; i < MR; ++i)
#pragma unroll
        for (uint c = 0; c < CPW; ++c) acc[i][c] = (float16)(0.0f);
    for (uint g0 = 0; g0 < groups; g0 += 16) {
        // The next 16 groups' scales and zero points of the CPW columns
        const uint ng = min(16u, groups - g0);
        float sg[4][16], zg[4][16];
#pragma unroll
        for (uint c = 0; c < CPW; ++c) {
            moe_params16(S, p_row[c] + g0, ng, s_type, sg[c]);
            if (has_zero) moe_params16(Z, p_row[c] + g0, ng, z_type, zg[c]);
        }
        for (uint g = g0; g < g0 + ng; ++g) {
            float16 w[4];
            for (uint k = g * gs; k < (g + 1) * gs; k += 16) {
#pragma unroll
                for (uint c = 0; c < CPW; ++c)
                    w[c] = moe_values16(W, w_row[c] + k, w_type, has_zero ? zg[c][g - g0] : 0.0f, sg[c][g - g0]);
#pragma unroll
                for (uint i = 0; i < MR; ++i) {
                    const float16 a = vload16(0, a_rows[i] + k);
#pragma unroll
                    for (uint c = 0; c < CPW; ++c) acc[i][c] = fma(a, w[c], acc[i][c]);
                }
            }
        }
    }
#pragma unroll
    for (uint c = 0; c < CPW; ++c) {
        const uint n = n0 + c;
        if (n >= N) continue;
        const float bv = has_bias ? moe_load(bias, (ulong)expert * N + n, b_type) : 0.0f;
#pragma unroll
        for (uint i = 0; i < MR; ++i) {
            if (i >= rows) continue;
            const float16 v = acc[i][c];
            const float8 h8 = v.lo + v.hi;
            const float4 h4 = h8.lo + h8.hi;
            const float2 h2 = h4.lo + h4.hi;
            C[(ulong)(c_row0 + i) * N + n] = h2.lo + h2.hi + bv;
        }
    }
}
#endif

#define MOE_GEMM_COMPRESSED_ROWS_KERNEL(NAME, MR_)                                                              \
    __kernel __attribute__((reqd_work_group_size(MOE_CR_WG, 1, 1))) void MOE_CK(NAME)(                          \
        __global const float* restrict A, __global const uint* restrict tiles, uint first, uint N, uint K,      \
        __global const uchar* restrict W, __global const uchar* restrict S, __global const uchar* restrict Z,   \
        uint groups, uint scale_rows, __global const uchar* restrict bias, int b_type, int has_bias,            \
        __global float* restrict C) {                                                                           \
        __local float red[MR_ * MOE_CR_CPW * (MOE_CR_WG + MOE_CR_WG / MOE_CR_LG)];                              \
        __global const uint* t = tiles + 4 * (first + get_group_id(1));                                         \
        moe_gemm_compressed_rows_body(A, t, N, K, W, MOE_CW, S, MOE_CS, Z, MOE_CZ, MOE_CHAS_ZERO, groups,       \
                                      scale_rows, bias, b_type, has_bias, C, MR_, red);                         \
    }
MOE_GEMM_COMPRESSED_ROWS_KERNEL(moe_gemm_compressed_rows1, 1)
MOE_GEMM_COMPRESSED_ROWS_KERNEL(moe_gemm_compressed_rows2, 2)
MOE_GEMM_COMPRESSED_ROWS_KERNEL(moe_gemm_compressed_rows4, 4)
MOE_GEMM_COMPRESSED_ROWS_KERNEL(moe_gemm_compressed_rows8, 8)

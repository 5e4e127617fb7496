// gemm_kernels.cl: the GEMM kernels of gemm.cl (and, for GPUs, gemm_gpu.cl's bodies), after both
// files' functions.

// The kernels: one per weight type (the loads specialise), for each tile shape; KN weights.
// Arguments: A, the tile table and the launch's first tile in it (tile0: the host packs every
// launch's tiles into one table), N, K, W, bias and its type, has_bias, C.
// MOE_GEMM_KERNEL is gemm.cl's body; MOE_GEMM_TILED_KERNEL (moe_gemm_*, moe_gemm_small_*) and
// MOE_GEMM_ROWS_NK_KERNEL take gemm_gpu.cl's bodies when the host builds for a GPU.
// Every GEMM kernel's signature, work-group size LX x LY.
#define MOE_GEMM_SIGNATURE(NAME, LX, LY)                                                                        \
    __kernel __attribute__((reqd_work_group_size(LX, LY, 1))) void NAME(                                        \
        __global const float* restrict A, __global const uint* restrict tiles, uint tile0, uint N, uint K,      \
        __global const uchar* restrict W, __global const uchar* restrict bias, int b_type, int has_bias,        \
        __global float* restrict C)
// The NK rows kernels (decode) take six more: the activation to apply to the block of C they store
// (act_mode, activation.cl), the gate GEMM's result for GEMM3, the activation's output, swish beta,
// clamp limit, gate lane. With act_mode MOE_ACT_NONE they only compute C.
#define MOE_GEMM_ROWS_NK_SIGNATURE(NAME, WG)                                                                    \
    __kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void NAME(                                         \
        __global const float* restrict A, __global const uint* restrict tiles, uint tile0, uint N, uint K,      \
        __global const uchar* restrict W, __global const uchar* restrict bias, int b_type, int has_bias,        \
        __global float* restrict C, int act_mode, __global const float* gate, __global float* act, float beta,  \
        float limit, int gate_lane)
// The activation of the block of C a rows work-group stored (columns from group 0's index times TN).
#define MOE_GEMM_ROWS_ACT(TN)                                                                                   \
    {                                                                                                           \
        __global const uint* t = tiles + 4 * (tile0 + get_group_id(1));                                         \
        moe_act_epilogue(C, N, t[2], t[3], get_group_id(0) * (TN), TN, act_mode, gate, act, beta, limit, gate_lane); \
    }
#define MOE_GEMM_KERNEL(NAME, WT, P)                                                                            \
    MOE_GEMM_SIGNATURE(NAME, P##_LX, P##_LY) {                                                      \
        __local VT a_tile[2 * P##_LY * P##_MWI * P##_TK / MOE_VW];                                              \
        __local VT w_tile[2 * P##_TK * P##_LX * P##_NV];                                                        \
        moe_gemm_tile(A, tiles + 4 * tile0, N, K, W, bias, has_bias, C, a_tile, w_tile, WT, b_type, P##_LX, P##_LY, \
                      P##_MWI, P##_NV, P##_TK);                                                                 \
    }

#if MOE_GEMM_WIDE
#define MOE_GEMM_TILED_KERNEL(NAME, WT, P)                                                                      \
    MOE_GEMM_SIGNATURE(NAME, P##_LX, P##_LY) {                                                      \
        __local float4 a_tile[2 * P##_TK * (P##_LY * P##_MWI + 4) / 4];                                         \
        __local VT w_tile[2 * P##_TK * P##_LX * P##_NV];                                                        \
        moe_gemm_tile_wide(A, tiles + 4 * tile0, N, K, W, bias, has_bias, C, a_tile, w_tile, WT, b_type, P##_LX, P##_LY, \
                           P##_MWI, P##_NV, P##_TK);                                                            \
    }
// moe_gemm_small_* with tiny tiles (MOE_GS_TINY, 8 rows per work-item): a tile of at most half
// the rows runs the body with 4 rows per work-item (the same work-group, columns and local
// buffers), so an expert's last few rows do not fill a block of twice as many. The row count is
// the same for every work-item of a work-group: the branch does not diverge.
#define MOE_GEMM_SMALL_KERNEL(NAME, WT, P)                                                                      \
    MOE_GEMM_SIGNATURE(NAME, P##_LX, P##_LY) {                                                      \
        __local float4 a_tile[2 * P##_TK * (P##_LY * P##_MWI + 4) / 4];                                         \
        __local VT w_tile[2 * P##_TK * P##_LX * P##_NV];                                                        \
        if (!MOE_GS_TINY || tiles[4 * (tile0 + get_group_id(1)) + 3] > P##_LY * P##_MWI / 2)                    \
            moe_gemm_tile_wide(A, tiles + 4 * tile0, N, K, W, bias, has_bias, C, a_tile, w_tile, WT, b_type,    \
                               P##_LX, P##_LY, P##_MWI, P##_NV, P##_TK);                                        \
        else                                                                                                    \
            moe_gemm_tile_wide(A, tiles + 4 * tile0, N, K, W, bias, has_bias, C, a_tile, w_tile, WT, b_type,    \
                               P##_LX, P##_LY, MOE_GS_TINY_MWI, P##_NV, P##_TK);                                \
    }
#define MOE_GEMM_ROWS_NK_KERNEL(NAME, WT, MR)                                                                   \
    MOE_GEMM_ROWS_NK_SIGNATURE(NAME, MOE_GR_WG) {                                                               \
        __local float red[MR * MOE_GR_NC * (MOE_GR_WG / 32) * 33];                                              \
        moe_gemm_rows_nk_wide(A, tiles + 4 * tile0, N, K, W, bias, has_bias, C, WT, b_type, MOE_GR_WG, MR, MOE_GR_NC, red); \
        MOE_GEMM_ROWS_ACT(MOE_GR_WG / 32 * MOE_GR_NC)                                                           \
    }
#else
#define MOE_GEMM_TILED_KERNEL MOE_GEMM_KERNEL
#define MOE_GEMM_SMALL_KERNEL MOE_GEMM_KERNEL
#define MOE_GEMM_ROWS_NK_KERNEL(NAME, WT, MR)                                                                   \
    MOE_GEMM_ROWS_NK_SIGNATURE(NAME, MOE_GR_LX) {                                                               \
        moe_gemm_rows_nk(A, tiles + 4 * tile0, N, K, W, bias, has_bias, C, WT, b_type, MOE_GR_LX, MR, MOE_GR_NC); \
        MOE_GEMM_ROWS_ACT(MOE_GR_LX * MOE_GR_NC)                                                                \
    }
#endif

// Defaults only for compiling the file on its own; the host always passes every size.
#ifndef MOE_VW
#define MOE_VW 4
#endif
#ifndef MOE_GT_LX
#define MOE_GT_LX 4
#define MOE_GT_LY 16
#define MOE_GT_MWI 4
#define MOE_GT_NV 1
#define MOE_GT_TK 16
#endif
#ifndef MOE_GS_LX
#define MOE_GS_LX 8
#define MOE_GS_LY 8
#define MOE_GS_MWI 4
#define MOE_GS_NV 1
#define MOE_GS_TK 16
#endif
#ifndef MOE_GR_LX
#define MOE_GR_LX 16
#define MOE_GR_LY 1
#define MOE_GR_MWI 4
#define MOE_GR_NV 1
#define MOE_GR_TK 16
#define MOE_GR_NC 4
#define MOE_GR_MR 8
#endif
#ifndef MOE_GR_WG
#define MOE_GR_WG 128
#endif
#ifndef MOE_GS_TINY
#define MOE_GS_TINY 0
#endif
#if MOE_GS_TINY
#define MOE_GS_TINY_MWI (MOE_GS_MWI / 2)
#else
#define MOE_GS_TINY_MWI MOE_GS_MWI  // never used: the branch on MOE_GS_TINY is constant
#endif

// moe_gemm_*_kn, moe_gemm_small_*_kn: blocks of rows, tiled (KN weights only); moe_gemm_rows_*: a
// few rows (KN tiled with one row of work-items, NK streamed).
MOE_GEMM_TILED_KERNEL(moe_gemm_f32_kn, MOE_F32, MOE_GT)
#ifndef MOE_GEMM_TUNE_ONLY  // the autotune's trial programs need moe_gemm_f32_kn only
MOE_GEMM_TILED_KERNEL(moe_gemm_f16_kn, MOE_F16, MOE_GT)
MOE_GEMM_TILED_KERNEL(moe_gemm_bf16_kn, MOE_BF16, MOE_GT)
MOE_GEMM_SMALL_KERNEL(moe_gemm_small_f32_kn, MOE_F32, MOE_GS)
MOE_GEMM_SMALL_KERNEL(moe_gemm_small_f16_kn, MOE_F16, MOE_GS)
MOE_GEMM_SMALL_KERNEL(moe_gemm_small_bf16_kn, MOE_BF16, MOE_GS)
MOE_GEMM_ROWS_NK_KERNEL(moe_gemm_rows_f32_nk, MOE_F32, MOE_GR_MR)
MOE_GEMM_ROWS_NK_KERNEL(moe_gemm_rows_f32_nk1, MOE_F32, 1)
MOE_GEMM_ROWS_NK_KERNEL(moe_gemm_rows_f32_nk2, MOE_F32, 2)
MOE_GEMM_ROWS_NK_KERNEL(moe_gemm_rows_f32_nk4, MOE_F32, 4)
MOE_GEMM_KERNEL(moe_gemm_rows_f32_kn, MOE_F32, MOE_GR)
MOE_GEMM_ROWS_NK_KERNEL(moe_gemm_rows_f16_nk, MOE_F16, MOE_GR_MR)
MOE_GEMM_ROWS_NK_KERNEL(moe_gemm_rows_f16_nk1, MOE_F16, 1)
MOE_GEMM_ROWS_NK_KERNEL(moe_gemm_rows_f16_nk2, MOE_F16, 2)
MOE_GEMM_ROWS_NK_KERNEL(moe_gemm_rows_f16_nk4, MOE_F16, 4)
MOE_GEMM_KERNEL(moe_gemm_rows_f16_kn, MOE_F16, MOE_GR)
MOE_GEMM_ROWS_NK_KERNEL(moe_gemm_rows_bf16_nk, MOE_BF16, MOE_GR_MR)
MOE_GEMM_ROWS_NK_KERNEL(moe_gemm_rows_bf16_nk1, MOE_BF16, 1)
MOE_GEMM_ROWS_NK_KERNEL(moe_gemm_rows_bf16_nk2, MOE_BF16, 2)
MOE_GEMM_ROWS_NK_KERNEL(moe_gemm_rows_bf16_nk4, MOE_BF16, 4)
MOE_GEMM_KERNEL(moe_gemm_rows_bf16_kn, MOE_BF16, MOE_GR)
#endif

#if MOE_GT_MWI > 8 || MOE_GS_MWI > 8 || MOE_GR_MWI > 8 || MOE_GT_NV > 4 || MOE_GS_NV > 4 || MOE_GR_NV > 4 ||    \
    MOE_GR_MR > 8 || MOE_GR_MR < 4 || MOE_GR_NC > 8
#error "moe_gemm: at most 8 rows and 4 vectors (NK rows: 4 to 8 rows, 8 columns) per work-item"
#endif
#if MOE_GT_TK % MOE_VW || MOE_GS_TK % MOE_VW || MOE_GR_TK % MOE_VW
#error "moe_gemm: the k-step must be a multiple of the vector width"
#endif
#if MOE_GEMM_WIDE && (MOE_GS_TINY && MOE_GS_MWI != 8)
#error "moe_gemm wide: tiny tiles need 8 rows per work-item in the small shape"
#endif
#if MOE_GEMM_WIDE && (MOE_GT_MWI % 4 || MOE_GS_MWI % 4 || MOE_GR_NC > 4 || MOE_GR_WG % 32)
#error "moe_gemm wide: rows per work-item a multiple of 4, at most 4 columns per lane group, lane groups of 32"
#endif

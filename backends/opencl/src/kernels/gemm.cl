// gemm: the gathered rows of every used expert times that expert's weight matrix, in one launch.
//   C[c_row0 + m, n] = sum_k A[a_row0 + m, k] * W[expert](n, k)  (+ bias[expert, n]),  m < rows, n < N
// W is read in its own type; NK layout: (e, n, k) at (e*N + n)*K + k; KN: (e*K + k)*N + n.
// Accumulation in f32; the k order is fixed by the tile sizes (deterministic from run to run).
//
// A launch covers a list of row tiles (`tiles`, 4 uints per tile: expert, first row of A, first
// row of C, rows), built on the host from mask_gen's counts and offsets; group id 1 picks the row
// tile, group id 0 the column tile. Work-groups are LX x LY work-items; each computes MWI rows by
// NV vectors of VW columns (rows y + i*LY, column vectors x + v*LX, so that neighbouring
// work-items touch neighbouring vectors): a TM x TN tile per work-group, TM = LY*MWI,
// TN = LX*NV*VW. Each k-step stages a TM x TK slice of A and a TK x TN slice of W (widened to
// f32) in local memory, double-buffered, so every weight element fetched from global memory is
// used TM times and every A element TN times; the step's multiply-adds are fully unrolled.
//
// The sizes are compile-time constants, -D flags at program build chosen on the host from the
// device's preferred vector width, work-group and local-memory limits (choose_gemm_config in
// gemm_config.cpp). Kernels, one per weight type (and for moe_gemm_rows_* per layout):
//   moe_gemm_*_kn       blocks of rows (MOE_GT_* sizes, 64 x 64 on PoCL);
//   moe_gemm_small_*_kn blocks of about half as many rows, twice as wide (MOE_GS_*, 32 x 128),
//                       for experts with few rows (the host picks the shape per row block);
//   moe_gemm_rows_*     a few rows (an expert's remainder, decode): KN tiled with one row of
//                       work-items (MOE_GR_*); NK streamed from global memory without local
//                       memory, MOE_GR_MR rows and MOE_GR_NC columns per work-item (and the
//                       variants _nk1, _nk2, _nk4 for tiles of at most 1, 2, 4 rows, so that
//                       decode does not multiply copies of its one row).
// The tiled kernels read KN weights only: the host keeps a KN (transposed) copy of NK weights on
// the device for them, and the NK original for moe_gemm_rows_*_nk (device_weights.cpp).
// This file holds the bodies a CPU device runs; gemm_gpu.cl the GPU bodies of moe_gemm_*,
// moe_gemm_small_* and moe_gemm_rows_*_nk* (-DMOE_GEMM_WIDE=1); gemm_kernels.cl the kernels.
//
// Edges without partial-tile branches: rows past `rows` read the tile's last row (never stored);
// vectors past N or K read past the end of a row, which stays inside the buffer (the host pads
// every A, weight and bias buffer by GemmConfig::pad_elems() elements); what lies past K is
// zeroed in both operands so it adds nothing, and columns past N are never stored.
//
// Selftest mutations, compiled in only when the host passes the -D flag (moe-conform selftest):
//   MOE_MUT_TILE_EDGE     the last partial tile of output columns is not computed (not stored)
//   MOE_MUT_NO_BARRIER    the k-loop has no barrier: a work-item multiplies tiles the others
//                         have not loaded yet, and overwrites the buffer they still read
//   MOE_MUT_TILE_ROW_SKIP the last row of the weight tile is never loaded: the tile is used
//                         before it is complete (stale or uninitialised local memory)

#define MOE_CAT_(a, b) a##b
#define MOE_CAT(a, b) MOE_CAT_(a, b)
#define VT MOE_CAT(float, MOE_VW)             // a work-item's vector of MOE_VW consecutive columns
#define VLOAD MOE_CAT(vload, MOE_VW)
#define VSTORE MOE_CAT(vstore, MOE_VW)
#define VLOAD_HALF MOE_CAT(vload_half, MOE_VW)
#define VCONVERT_UINT MOE_CAT(convert_uint, MOE_VW)
#define VAS_FLOAT MOE_CAT(as_float, MOE_VW)

// MOE_VW consecutive weights from element i on, widened to f32.
inline VT moe_load_vec(__global const uchar* p, ulong i, const int type) {
    if (type == MOE_F16) return VLOAD_HALF(0, (__global const half*)p + i);
    if (type == MOE_BF16) return VAS_FLOAT(VCONVERT_UINT(VLOAD(0, (__global const ushort*)p + i)) << 16);
    return VLOAD(0, (__global const float*)p + i);
}

// The tiles of step k0 into a_tile (TM x TK floats as TM x KV vectors) and w_tile (TK x TN as
// TK x NVT vectors), spread over the work-group by a linear work-item index l.
inline void moe_gemm_load(__global const float* restrict A, __global const uchar* restrict W, uint N, uint K,
                          uint k0, uint a_row0, uint rows, uint n0, ulong w_base, __local VT* a_tile,
                          __local VT* w_tile, const int w_type, const uint TM, const uint TN,
                          const uint TK, const uint WG) {
    const uint VW = MOE_VW, KV = TK / VW, NVT = TN / VW;
    const uint l = get_local_id(1) * get_local_size(0) + get_local_id(0);
#pragma unroll
    for (uint p = 0; p < (TM * KV + WG - 1) / WG; ++p) {
        const uint q = l + p * WG;
        if (q < TM * KV) {
            const uint r = q / KV, c = (q % KV) * VW;
            VT a = VLOAD(0, A + (ulong)(a_row0 + min(r, rows - 1)) * K + k0 + c);
            if (k0 + c + VW > K) {  // past K (last step only): zero those lanes
                float z[MOE_VW];
                VSTORE(a, 0, z);
                for (uint j = 0; j < VW; ++j)
                    if (k0 + c + j >= K) z[j] = 0.0f;
                a = VLOAD(0, z);
            }
            a_tile[q] = a;
        }
    }
    // KN: VW consecutive columns of one k, as they lie in memory.
#pragma unroll
    for (uint p = 0; p < (TK * NVT + WG - 1) / WG; ++p) {
        const uint q = l + p * WG;
        const uint kk = q / NVT;
#ifdef MOE_MUT_TILE_ROW_SKIP
        if (kk == TK - 1) continue;  // the w_tile row kk = TK - 1 is never loaded
#endif
        if (q < TK * NVT) {
            const VT w = moe_load_vec(W, w_base + (ulong)min(k0 + kk, K - 1) * N + n0 + (q % NVT) * VW, w_type);
            w_tile[q] = k0 + kk < K ? w : (VT)0.0f;
        }
    }
}

// One work-group's tile. Every size argument is a literal at the call site, so after inlining
// the loops have constant trip counts and unroll.
//
// Double-buffered: step s computes from buffer s % 2 while the work-group loads step s + 1 into
// the other one, so one barrier per step separates the loads from their use (and the buffer
// from its next overwrite). On PoCL's CPU device a work-group runs as loops over its work-items
// between barriers, and a value computed before a barrier and used after it is saved per
// work-item in memory; the buffer alternation keeps the compute addresses inside the loop, so
// only the accumulators cross the barriers.
inline void moe_gemm_tile(__global const float* restrict A, __global const uint* restrict tiles, uint N, uint K,
                          __global const uchar* restrict W, __global const uchar* restrict bias, int has_bias,
                          __global float* restrict C, __local VT* a_buf, __local VT* w_buf,
                          const int w_type, const int b_type, const uint LX, const uint LY,
                          const uint MWI, const uint NV, const uint TK) {
    const uint VW = MOE_VW, TM = LY * MWI, TN = LX * NV * VW, WG = LX * LY;
    const uint A_SIZE = TM * TK / VW, W_SIZE = TK * TN / VW, NVT = TN / VW;
    // Four scalars rather than a uint4: a vector-typed value inside the work-item loops keeps
    // PoCL's loop vectoriser from vectorising them.
    __global const uint* t = tiles + 4 * get_group_id(1);
    const uint expert = t[0], a_row0 = t[1], c_row0 = t[2], rows = t[3];
    const uint n0 = get_group_id(0) * TN;
    const ulong w_base = (ulong)expert * N * K;

    VT acc[8][4];  // MWI x NV used (at most 8 x 4, checked at the end of this file)
#pragma unroll
    for (uint i = 0; i < MWI; ++i)
#pragma unroll
        for (uint v = 0; v < NV; ++v) acc[i][v] = 0.0f;

    moe_gemm_load(A, W, N, K, 0, a_row0, rows, n0, w_base, a_buf, w_buf, w_type, TM, TN, TK, WG);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint k0 = 0, s = 0; k0 < K; k0 += TK, ++s) {
        const uint cur = s & 1;
        if (k0 + TK < K)
            moe_gemm_load(A, W, N, K, k0 + TK, a_row0, rows, n0, w_base, a_buf + (cur ^ 1) * A_SIZE,
                          w_buf + (cur ^ 1) * W_SIZE, w_type, TM, TN, TK, WG);
        // This work-item's MWI x NV*VW block: rows y + i*LY, column vectors x + v*LX.
        __local const float* ap = (__local const float*)(a_buf + cur * A_SIZE) + get_local_id(1) * TK;
        __local const VT* bp = w_buf + cur * W_SIZE + get_local_id(0);
#pragma unroll
        for (uint kk = 0; kk < TK; ++kk) {
            VT b[4];
#pragma unroll
            for (uint v = 0; v < NV; ++v) b[v] = bp[kk * NVT + v * LX];
#pragma unroll
            for (uint i = 0; i < MWI; ++i) {
                const VT a = (VT)ap[i * LY * TK + kk];
#pragma unroll
                for (uint v = 0; v < NV; ++v) acc[i][v] = fma(a, b[v], acc[i][v]);
            }
        }
#ifndef MOE_MUT_NO_BARRIER
        barrier(CLK_LOCAL_MEM_FENCE);  // step s + 1's tiles are loaded; buffer s % 2 is free again
#endif
    }

    const uint x = get_local_id(0), y = get_local_id(1);
#pragma unroll
    for (uint i = 0; i < MWI; ++i) {
        const uint m = y + i * LY;
        if (m >= rows) continue;
        __global float* c_row = C + (ulong)(c_row0 + m) * N;
#pragma unroll
        for (uint v = 0; v < NV; ++v) {
            const uint n = n0 + (x + v * LX) * VW;
            VT out = acc[i][v];
            if (has_bias) out += moe_load_vec(bias, (ulong)expert * N + n, b_type);
#ifdef MOE_MUT_TILE_EDGE
            if (n0 + TN > N) continue;  // the last, partial tile of columns is never stored
#endif
            if (n + VW <= N) {
                VSTORE(out, 0, c_row + n);
            } else {
                float o[MOE_VW];
                VSTORE(out, 0, o);
                for (uint j = 0; j < VW; ++j)
                    if (n + j < N) c_row[n + j] = o[j];
            }
        }
    }
}

// Few rows, NK layout (decode): no local memory. Work-item x computes columns n0 + x + j*LX
// (j < NC) for the tile's rows (at most MR): it streams those NC weight rows along k in vectors
// of VW, multiplies them with the same k-slice of each A row, and sums the vector lanes at the
// end. Each weight element is read once per row tile and used by every row of it. It reads the
// NK original the host keeps next to the KN copy (the KN tiled rows kernel, with its local
// memory staging, is slower for a few rows).
inline void moe_gemm_rows_nk(__global const float* restrict A, __global const uint* restrict tiles, uint N,
                             uint K, __global const uchar* restrict W, __global const uchar* restrict bias,
                             int has_bias, __global float* restrict C, const int w_type, const int b_type,
                             const uint LX, const uint MR, const uint NC) {
    const uint VW = MOE_VW, TN = LX * NC;
    __global const uint* t = tiles + 4 * get_group_id(1);
    const uint expert = t[0], a_row0 = t[1], c_row0 = t[2], rows = t[3];
    const uint x = get_local_id(0), n0 = get_group_id(0) * TN;
    __global const float* a_rows[8];
    ulong w_rows[8];
#pragma unroll
    for (uint i = 0; i < MR; ++i) a_rows[i] = A + (ulong)(a_row0 + min(i, rows - 1)) * K;
#pragma unroll
    for (uint j = 0; j < NC; ++j) w_rows[j] = ((ulong)expert * N + min(n0 + x + j * LX, N - 1)) * K;
    VT acc[8][8];  // MR x NC used (at most 8 x 8, checked at the end of this file)
#pragma unroll
    for (uint i = 0; i < MR; ++i)
#pragma unroll
        for (uint j = 0; j < NC; ++j) acc[i][j] = 0.0f;
    for (uint k = 0; k < K; k += VW) {
        VT a[8], w[8];
#pragma unroll
        for (uint i = 0; i < MR; ++i) a[i] = VLOAD(0, a_rows[i] + k);
#pragma unroll
        for (uint j = 0; j < NC; ++j) w[j] = moe_load_vec(W, w_rows[j] + k, w_type);
        if (k + VW > K) {  // past K (last step only): zero those lanes of both operands
            for (uint i = 0; i < MR + NC; ++i) {
                float z[MOE_VW];
                VSTORE(i < MR ? a[i] : w[i - MR], 0, z);
                for (uint l = 0; l < VW; ++l)
                    if (k + l >= K) z[l] = 0.0f;
                if (i < MR) a[i] = VLOAD(0, z);
                else w[i - MR] = VLOAD(0, z);
            }
        }
#pragma unroll
        for (uint i = 0; i < MR; ++i)
#pragma unroll
            for (uint j = 0; j < NC; ++j) acc[i][j] = fma(a[i], w[j], acc[i][j]);
    }
#pragma unroll
    for (uint j = 0; j < NC; ++j) {
        const uint n = n0 + x + j * LX;
#ifdef MOE_MUT_TILE_EDGE
        if (n0 + TN > N) continue;  // the last, partial tile of columns is never stored
#endif
        if (n >= N) continue;
        const float bv = has_bias ? moe_load(bias, (ulong)expert * N + n, b_type) : 0.0f;
#pragma unroll
        for (uint i = 0; i < MR; ++i) {
            if (i >= rows) continue;
            float lanes[MOE_VW];
            VSTORE(acc[i][j], 0, lanes);
            float sum = 0.0f;
            for (uint l = 0; l < VW; ++l) sum += lanes[l];
            C[(ulong)(c_row0 + i) * N + n] = sum + bv;
        }
    }
}

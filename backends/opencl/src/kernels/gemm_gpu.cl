// gemm_gpu.cl: the GEMM bodies for GPUs, compiled in when the host passes -DMOE_GEMM_WIDE=1
// (choose_gemm_config: every device that is not a CPU). The kernels, their arguments and the
// tile tables are gemm.cl's; its kernel macros pick these bodies for moe_gemm_*, moe_gemm_small_*
// and moe_gemm_rows_*_nk*. On a CPU device (PoCL) gemm.cl's own bodies run: there a work-group is
// a loop over its work-items, and wide register blocks and lane groups do not pay.
//
// moe_gemm_tile_wide, blocks of rows: the tile of gemm.cl (TM = LY*MWI rows by TN = LX*NV*VW
// columns, k-steps of TK, double-buffered local tiles, one barrier per step) with what a GPU
// needs to keep its FMA units busy rather than its local memory:
//   - each work-item's MWI rows are consecutive (y*MWI + i) and the A tile is stored k-major,
//     so a k-step reads them as MWI/4 float4 loads (gemm.cl broadcasts one float per row);
//   - 32 consecutive work-items (a warp) cover 8 column vectors by 4 rows, so a warp's loads of
//     the W tile touch 128 contiguous bytes and of the A tile 4 float4: one local-memory
//     transaction each, against 16 FMAs per loaded vector with MWI = 8, NV = 2;
//   - the next step's tiles are loaded from global memory into registers before the current
//     step's FMAs and stored to the other local buffer after them, so global latency hides
//     behind arithmetic.
// moe_gemm_rows_nk_wide, a few rows of NK weights (decode): lane groups of 32 work-items stream
// CPW weight rows each, lane j reading k = 8j .. 8j + 7, then 256 further on, ...: a warp reads
// 1 KiB (f32) or 512 bytes (f16, bf16) of one weight row per step (gemm.cl's rows kernel gives each work-item whole rows, which on a
// GPU scatters a warp's loads over 32 rows). The 32 partial sums of an output meet in local
// memory (neither PoCL nor NVIDIA's OpenCL offers sub-groups to reduce them in registers).

#ifndef MOE_GEMM_WIDE
#define MOE_GEMM_WIDE 0
#endif

#if MOE_GEMM_WIDE

#if MOE_VW != 4
#error "moe_gemm wide: float4 vectors only"
#endif

// k-steps per pass of the NK rows kernels' loops (moe_gemm_rows_nk_wide and the compressed rows
// kernels): all their weight loads are issued before the first product, so a warp has that many
// times the bytes in flight (a 2-byte weight row gives half an f32 row's bytes a step). Each
// lane's sums keep their order: every choice gives the same bits (GemmConfig::rows_steps).
#ifndef MOE_GR_STEPS
#define MOE_GR_STEPS 1
#endif
#if MOE_GR_STEPS != 1 && MOE_GR_STEPS != 2 && MOE_GR_STEPS != 4
#error "MOE_GR_STEPS: 1, 2 or 4"
#endif

// Work-item (x, y) of the tile from its linear index: warps of 8 x 4 when the work-group allows.
inline void moe_wide_xy(const uint LX, const uint LY, uint* x, uint* y) {
    const uint l = get_local_id(1) * LX + get_local_id(0);
    if (LX % 8 == 0 && LY % 4 == 0) {
        const uint lane = l % 32, warp = l / 32, wx = LX / 8;
        *x = (warp % wx) * 8 + lane % 8;
        *y = (warp / wx) * 4 + lane / 8;
    } else {
        *x = get_local_id(0);
        *y = get_local_id(1);
    }
}

// v = elements k..k+3 of a row, its lanes past K zeroed (selected, not multiplied: what lies
// there may be an inf of the next row).
inline float4 moe_keep4(float4 v, uint k, uint K) {
    if (k + 4 <= K) return v;
    return (float4)(k < K ? v.s0 : 0.0f, k + 1 < K ? v.s1 : 0.0f, k + 2 < K ? v.s2 : 0.0f, 0.0f);
}

// Two bf16 in one word (element 2j in the low half, as stored) widened: bf16 = top half of an f32.
inline float2 moe_bf16x2(uint u) { return (float2)(as_float(u << 16), as_float(u & 0xffff0000u)); }

// 8 consecutive elements from element i on, widened to f32, from a 16-byte aligned address: one
// uint4 load (two for f32). vloadn promises only its element's alignment, so NVIDIA's compiler
// makes a vload8 eight element loads; a pointer to uint4 is aligned to 16 and loads it whole.
// f16 is widened by vload_half from the loaded bits in private memory (no cl_khr_fp16 needed).
inline float8 moe_whole8(__global const uchar* p, ulong i, const int type) {
    if (type == MOE_F32) {
        __global const uint4* q = (__global const uint4*)(p + 4 * i);
        return (float8)(as_float4(q[0]), as_float4(q[1]));
    }
    const uint4 u = *(__global const uint4*)(p + 2 * i);
    if (type == MOE_BF16) return (float8)(moe_bf16x2(u.s0), moe_bf16x2(u.s1), moe_bf16x2(u.s2), moe_bf16x2(u.s3));
    return vload_half8(0, (const half*)&u);
}

// The same from any address.
inline float8 moe_load8(__global const uchar* p, ulong i, const int type) {
    if (type == MOE_F16) return vload_half8(0, (__global const half*)p + i);
    if (type == MOE_BF16) return as_float8(convert_uint8(vload8(0, (__global const ushort*)p + i)) << 16);
    return vload8(0, (__global const float*)p + i);
}

inline float8 moe_keep8(float8 v, uint k, uint K) {
    if (k + 8 <= K) return v;
    return (float8)(moe_keep4(v.lo, k, K), moe_keep4(v.hi, k + 4, K));
}

// Step k0's tiles from global memory into this work-item's registers (a_st: A vectors along k,
// w_st: W vectors along n), zero past K. A_LOADS / W_LOADS are at most 8 (checked on the host).
inline void moe_wide_fetch(__global const float* restrict A, __global const uchar* restrict W, uint N, uint K,
                           uint k0, uint a_row0, uint rows, uint n0, ulong w_base, const int w_type, VT* a_st,
                           VT* w_st, const uint TM, const uint TK, const uint NVT, const uint WG, const uint l) {
    const uint KV = TK / 4;
#pragma unroll
    for (uint p = 0; p < (TM * KV + WG - 1) / WG; ++p) {
        const uint q = l + p * WG;
        if (q < TM * KV) {
            const uint r = q / KV, c = k0 + (q % KV) * 4;
            a_st[p] = moe_keep4(vload4(0, A + (ulong)(a_row0 + min(r, rows - 1)) * K + c), c, K);
        }
    }
#pragma unroll
    for (uint p = 0; p < (TK * NVT + WG - 1) / WG; ++p) {
        const uint q = l + p * WG, kk = q / NVT;
        if (q < TK * NVT) {
            const VT w = moe_load_vec(W, w_base + (ulong)min(k0 + kk, K - 1) * N + n0 + (q % NVT) * 4, w_type);
            w_st[p] = k0 + kk < K ? w : (VT)0.0f;
        }
    }
}

// The registers of moe_wide_fetch into one local buffer: A k-major (row stride TMP), W as is.
inline void moe_wide_stage(__local float* a_tile, __local VT* w_tile, const VT* a_st, const VT* w_st,
                           const uint TM, const uint TMP, const uint TK, const uint NVT, const uint WG,
                           const uint l) {
    const uint KV = TK / 4;
#pragma unroll
    for (uint p = 0; p < (TM * KV + WG - 1) / WG; ++p) {
        const uint q = l + p * WG;
        if (q < TM * KV) {
            const uint r = q / KV, c = (q % KV) * 4;
            a_tile[(c + 0) * TMP + r] = a_st[p].s0;
            a_tile[(c + 1) * TMP + r] = a_st[p].s1;
            a_tile[(c + 2) * TMP + r] = a_st[p].s2;
            a_tile[(c + 3) * TMP + r] = a_st[p].s3;
        }
    }
#pragma unroll
    for (uint p = 0; p < (TK * NVT + WG - 1) / WG; ++p) {
        const uint q = l + p * WG;
#ifdef MOE_MUT_TILE_ROW_SKIP
        if (q / NVT == TK - 1) continue;  // the w_tile row kk = TK - 1 is never stored
#endif
        if (q < TK * NVT) w_tile[q] = w_st[p];
    }
}

// The work-item's MWI x NV accumulators, zeroed.
inline void moe_wide_zero(VT acc[8][4], const uint MWI, const uint NV) {
#pragma unroll
    for (uint i = 0; i < MWI; ++i)
#pragma unroll
        for (uint v = 0; v < NV; ++v) acc[i][v] = 0.0f;
}

// One k-step's FMAs: the work-item's MWI x NV accumulators from the local tiles of one buffer,
// ap at its first rows (A k-major, row stride TMP) and bp at its first column vector (W).
inline void moe_wide_fmas(__local const float4* ap, __local const VT* bp, VT acc[8][4], const uint MWI,
                          const uint NV, const uint TK, const uint TMP, const uint NVT, const uint LX) {
#pragma unroll
    for (uint kk = 0; kk < TK; ++kk) {
        VT b[4];
#pragma unroll
        for (uint v = 0; v < NV; ++v) b[v] = bp[kk * NVT + v * LX];
#pragma unroll
        for (uint i4 = 0; i4 < MWI / 4; ++i4) {
            const float4 a = ap[kk * TMP / 4 + i4];
#pragma unroll
            for (uint v = 0; v < NV; ++v) {
                acc[4 * i4 + 0][v] = fma((VT)a.s0, b[v], acc[4 * i4 + 0][v]);
                acc[4 * i4 + 1][v] = fma((VT)a.s1, b[v], acc[4 * i4 + 1][v]);
                acc[4 * i4 + 2][v] = fma((VT)a.s2, b[v], acc[4 * i4 + 2][v]);
                acc[4 * i4 + 3][v] = fma((VT)a.s3, b[v], acc[4 * i4 + 3][v]);
            }
        }
    }
}

// The tile's results (rows y*MWI + i < rows, columns n0 + (x + v*LX)*4 .. + 3 below N), plus bias.
inline void moe_wide_store(VT acc[8][4], __global float* restrict C, __global const uchar* restrict bias,
                           int has_bias, const int b_type, uint N, uint expert, uint c_row0, uint rows, uint n0,
                           uint x, uint y, const uint LX, const uint MWI, const uint NV, const uint TN) {
#pragma unroll
    for (uint i = 0; i < MWI; ++i) {
        const uint m = y * MWI + i;
        if (m >= rows) continue;
        __global float* c_row = C + (ulong)(c_row0 + m) * N;
#pragma unroll
        for (uint v = 0; v < NV; ++v) {
            const uint n = n0 + (x + v * LX) * 4;
            VT out = acc[i][v];
            if (has_bias) out += moe_load_vec(bias, (ulong)expert * N + n, b_type);
#ifdef MOE_MUT_TILE_EDGE
            if (n0 + TN > N) continue;  // the last, partial tile of columns is never stored
#endif
            if (n + 4 <= N) {
                vstore4(out, 0, c_row + n);
            } else {
                if (n < N) c_row[n] = out.s0;
                if (n + 1 < N) c_row[n + 1] = out.s1;
                if (n + 2 < N) c_row[n + 2] = out.s2;
            }
        }
    }
}

inline void moe_gemm_tile_wide(__global const float* restrict A, __global const uint* restrict tiles, uint N,
                               uint K, __global const uchar* restrict W, __global const uchar* restrict bias,
                               int has_bias, __global float* restrict C, __local float4* a_buf,
                               __local VT* w_buf, const int w_type, const int b_type, const uint LX,
                               const uint LY, const uint MWI, const uint NV, const uint TK) {
    const uint TM = LY * MWI, TN = LX * NV * 4, WG = LX * LY, NVT = TN / 4;
    const uint TMP = TM + 4;  // padded: the k-major stores of one row hit fewer banks at once
    const uint A_SIZE = TK * TMP / 4, W_SIZE = TK * NVT;  // in vectors
    __global const uint* t = tiles + 4 * get_group_id(1);
    const uint expert = t[0], a_row0 = t[1], c_row0 = t[2], rows = t[3];
    const uint n0 = get_group_id(0) * TN;
    const ulong w_base = (ulong)expert * N * K;
    const uint l = get_local_id(1) * LX + get_local_id(0);
    uint x, y;
    moe_wide_xy(LX, LY, &x, &y);

    VT acc[8][4];  // MWI x NV used
    moe_wide_zero(acc, MWI, NV);

    VT a_st[8], w_st[8];
    moe_wide_fetch(A, W, N, K, 0, a_row0, rows, n0, w_base, w_type, a_st, w_st, TM, TK, NVT, WG, l);
    moe_wide_stage((__local float*)a_buf, w_buf, a_st, w_st, TM, TMP, TK, NVT, WG, l);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint k0 = 0, s = 0; k0 < K; k0 += TK, ++s) {
        const uint cur = s & 1;
        const bool next = k0 + TK < K;
        if (next)
            moe_wide_fetch(A, W, N, K, k0 + TK, a_row0, rows, n0, w_base, w_type, a_st, w_st, TM, TK, NVT, WG, l);
        moe_wide_fmas(a_buf + cur * A_SIZE + y * MWI / 4, w_buf + cur * W_SIZE + x, acc, MWI, NV, TK, TMP, NVT, LX);
        // Buffer cur ^ 1 was last read in step s - 1, before that step's barrier.
        if (next)
            moe_wide_stage((__local float*)(a_buf + (cur ^ 1) * A_SIZE), w_buf + (cur ^ 1) * W_SIZE, a_st, w_st, TM,
                           TMP, TK, NVT, WG, l);
#ifndef MOE_MUT_NO_BARRIER
        barrier(CLK_LOCAL_MEM_FENCE);  // step s + 1's tiles are stored; buffer cur is free again
#endif
    }
    moe_wide_store(acc, C, bias, has_bias, b_type, N, expert, c_row0, rows, n0, x, y, LX, MWI, NV, TN);
}

// U steps of moe_gemm_rows_nk_wide from k on (the next `stride` elements further each): the
// lane's 8 weights of each of its CPW rows at each step, all loaded first, then the same 8
// elements of each of the MR rows of A into acc, step by step. `whole`: every address is 16-byte
// aligned (moe_whole8); `edge`: elements from K on are zeroed. Both are constants where it is
// inlined, so the body is straight-line code.
inline void moe_rows_steps(__global const uchar* restrict W, const ulong* w_rows, __global const float** a_rows,
                           uint k, uint stride, uint K, const int w_type, const uint MR, const uint CPW,
                           float acc[8][4], const bool whole, const bool edge, const uint U) {
    float8 w[MOE_GR_STEPS][4];
#pragma unroll
    for (uint u = 0; u < U; ++u)
#pragma unroll
        for (uint c = 0; c < CPW; ++c) {
            const uint ku = k + u * stride;
            w[u][c] = whole ? moe_whole8(W, w_rows[c] + ku, w_type) : moe_load8(W, w_rows[c] + ku, w_type);
            if (edge) w[u][c] = moe_keep8(w[u][c], ku, K);
        }
#pragma unroll
    for (uint u = 0; u < U; ++u)
#pragma unroll
        for (uint i = 0; i < MR; ++i) {
            const uint ku = k + u * stride;
            float8 a = whole ? moe_whole8((__global const uchar*)a_rows[i], ku, MOE_F32) : vload8(0, a_rows[i] + ku);
            if (edge) a = moe_keep8(a, ku, K);
#pragma unroll
            for (uint c = 0; c < CPW; ++c) acc[i][c] += dot(a.lo, w[u][c].lo) + dot(a.hi, w[u][c].hi);
        }
}

// Lane groups of 32 (any device: the partial sums are reduced in local memory, `red`, of
// MR * CPW * (WG / 32) * 33 floats). Columns n0 + g*CPW + c for lane group g; rows of the tile
// (at most MR) share every weight vector loaded.
inline void moe_gemm_rows_nk_wide(__global const float* restrict A, __global const uint* restrict tiles, uint N,
                                  uint K, __global const uchar* restrict W, __global const uchar* restrict bias,
                                  int has_bias, __global float* restrict C, const int w_type, const int b_type,
                                  const uint WG, const uint MR, const uint CPW, __local float* red) {
    const uint LG = 32, G = WG / LG, GP = LG + 1;  // lane groups; a group's slot in `red`, padded
    const uint l = get_local_id(0), lane = l % LG, g = l / LG;
    __global const uint* t = tiles + 4 * get_group_id(1);
    const uint expert = t[0], a_row0 = t[1], c_row0 = t[2], rows = t[3];
    const uint n0 = get_group_id(0) * G * CPW;
    __global const float* a_rows[8];
    ulong w_rows[4];
#pragma unroll
    for (uint i = 0; i < MR; ++i) a_rows[i] = A + (ulong)(a_row0 + min(i, rows - 1)) * K;
#pragma unroll
    for (uint c = 0; c < CPW; ++c) w_rows[c] = ((ulong)expert * N + min(n0 + g * CPW + c, N - 1)) * K;
    float acc[8][4];
#pragma unroll
    for (uint i = 0; i < MR; ++i)
#pragma unroll
        for (uint c = 0; c < CPW; ++c) acc[i][c] = 0.0f;
    // 8 weights per lane and step. Whole-vector loads where every row of W and A starts 16-byte
    // aligned (then so does every lane's k, a multiple of 8), decided once: the steps' bodies have
    // no branch, so a warp issues all its rows' loads before it waits for the first (a branch
    // between two loads, as a per-load alignment test or the edge test made, has it wait for
    // each in turn). The last step, past K for some lanes, is masked apart. Same sums, same order.
    const uint step = LG * 8, full = K / step * step, es = w_type == MOE_F32 ? 4u : 2u;
    const bool whole = (((size_t)W | (size_t)A) & 15) == 0 && (K * es) % 16 == 0 && K % 4 == 0;
    // MOE_GR_STEPS steps a pass (no such loop when it is 1), then the whole steps left one at a time.
    const uint U = MOE_GR_STEPS, passes_end = K / (U * step) * (U * step);
    uint k = lane * 8;
    if (whole) {
        if (U > 1)
            for (; k < passes_end; k += U * step)
                moe_rows_steps(W, w_rows, a_rows, k, step, K, w_type, MR, CPW, acc, true, false, U);
        for (; k < full; k += step)
            moe_rows_steps(W, w_rows, a_rows, k, step, K, w_type, MR, CPW, acc, true, false, 1);
    } else {
        if (U > 1)
            for (; k < passes_end; k += U * step)
                moe_rows_steps(W, w_rows, a_rows, k, step, K, w_type, MR, CPW, acc, false, false, U);
        for (; k < full; k += step)
            moe_rows_steps(W, w_rows, a_rows, k, step, K, w_type, MR, CPW, acc, false, false, 1);
    }
    if (k < K) moe_rows_steps(W, w_rows, a_rows, k, step, K, w_type, MR, CPW, acc, false, true, 1);
#pragma unroll
    for (uint i = 0; i < MR; ++i)
#pragma unroll
        for (uint c = 0; c < CPW; ++c) red[((i * CPW + c) * G + g) * GP + lane] = acc[i][c];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint o = l; o < MR * G * CPW; o += WG) {
        const uint i = o / (G * CPW), gc = o % (G * CPW), n = n0 + gc;
        __local const float* p = red + ((i * CPW + gc % CPW) * G + gc / CPW) * GP;
        float sum = 0.0f;
        for (uint j = 0; j < LG; ++j) sum += p[j];
#ifdef MOE_MUT_TILE_EDGE
        if (n0 + G * CPW > N) continue;  // the last, partial tile of columns is never stored
#endif
        if (i >= rows || n >= N) continue;
        C[(ulong)(c_row0 + i) * N + n] = sum + (has_bias ? moe_load(bias, (ulong)expert * N + n, b_type) : 0.0f);
    }
}

#endif  // MOE_GEMM_WIDE

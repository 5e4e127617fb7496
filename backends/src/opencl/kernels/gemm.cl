// gemm: one expert's block of gathered rows times its weight matrix.
//   C[row0 + m, n] = sum_k A[row0 + m, k] * W[expert](n, k)  (+ bias[expert, n]),  m < M, n < N
// W is read in its own type; NK layout: (e, n, k) at (e*N + n)*K + k; KN: (e*K + k)*N + n.
// Accumulation in f32, k ascending.
//
// Work-groups of ts x ts work-items, one output element each; ts is chosen on the host from the
// device's work-group and local-memory limits and the tiles are __local arguments sized there.
// Each step stages a ts x ts tile of A and of W in local memory, so every element fetched from
// global memory is reused ts times. Work-items outside M x N still load (zeros) and reach the
// barriers; they only skip the store. A's rows start at a_row0, C's at row0 (the same block in
// the pipeline; kept apart so the host can place either).
//
// Selftest mutations, compiled in only when the host passes the -D flag (moe-conform selftest):
//   MOE_MUT_TILE_EDGE     the last partial tile of output columns is not computed (not stored)
//   MOE_MUT_NO_BARRIER    no barrier between loading a tile and using it (not in the selftest:
//                         PoCL's CPU device happens to compute it right, see opencl_backend.hpp)
//   MOE_MUT_TILE_ROW_SKIP the last row of the weight tile is never loaded: the tile is used
//                         before it is complete (stale or uninitialised local memory)
__kernel void moe_gemm(__global const float* A, uint a_row0, uint row0, uint M, uint N, uint K,
                       __global const uchar* W, int w_type, int kn_layout, uint expert,
                       __global const uchar* bias, int b_type, int has_bias,
                       __global float* C, uint ts, __local float* a_tile, __local float* w_tile) {
    const uint ln = get_local_id(0), lm = get_local_id(1);
    const uint n0 = get_group_id(0) * ts, m0 = get_group_id(1) * ts;
    const uint m = m0 + lm, n = n0 + ln;
    const ulong w_base = (ulong)expert * N * K;
    float acc = 0.0f;
    for (uint k0 = 0; k0 < K; k0 += ts) {
        // a_tile[r][c] = A[m0 + r, k0 + c]: consecutive work-items read consecutive k.
        const uint ka = k0 + ln;
        a_tile[lm * ts + ln] = (m < M && ka < K) ? A[(ulong)(a_row0 + m) * K + ka] : 0.0f;
        // w_tile[kk][nn] = W(n0 + nn, k0 + kk), loaded so that consecutive work-items read
        // consecutive addresses in either layout (k is contiguous in NK, n in KN).
#ifdef MOE_MUT_TILE_ROW_SKIP
        const int load_w = (kn_layout ? lm : ln) != ts - 1;  // the w_tile row kk = ts - 1 is skipped
#else
        const int load_w = 1;
#endif
        if (kn_layout) {
            const uint kw = k0 + lm, nw = n0 + ln;
            if (load_w) w_tile[lm * ts + ln] = (kw < K && nw < N) ? moe_load(W, w_base + (ulong)kw * N + nw, w_type) : 0.0f;
        } else {
            const uint kw = k0 + ln, nw = n0 + lm;
            if (load_w) w_tile[ln * ts + lm] = (kw < K && nw < N) ? moe_load(W, w_base + (ulong)nw * K + kw, w_type) : 0.0f;
        }
#ifndef MOE_MUT_NO_BARRIER
        barrier(CLK_LOCAL_MEM_FENCE);
#endif
        for (uint kk = 0; kk < ts; ++kk) acc += a_tile[lm * ts + kk] * w_tile[kk * ts + ln];
        barrier(CLK_LOCAL_MEM_FENCE);  // the tiles are overwritten by the next step
    }
#ifdef MOE_MUT_TILE_EDGE
    if (m < M && n < N && n0 + ts <= N) {
#else
    if (m < M && n < N) {
#endif
        if (has_bias) acc += moe_load(bias, (ulong)expert * N + n, b_type);
        C[(ulong)(row0 + m) * N + n] = acc;
    }
}

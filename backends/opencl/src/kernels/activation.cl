// activation: the op's SwiGLU on single values, shared by moe_swiglu (swiglu.cl) and by the decode
// GEMMs that apply it to what they have just stored (moe_act_epilogue, called by gemm_kernels.cl's
// moe_gemm_rows_*_nk*). The variants of the op's conventions arrive resolved
// (spec/src/convention.cpp): swish beta, clamp limit L, gate lane.
//   GEMM2: gate_j = first[2j + gate_lane], lin_j = first[2j + 1 - gate_lane]
//          act_j = (clamp(lin_j, -L, L) + 1) * swish(min(gate_j, L); beta)
//   GEMM3: act_j = swish(gate[j]; beta) * up[j]
float moe_swish(float x, float beta) { return x / (1.0f + exp(-beta * x)); }

float moe_act_gemm2(float g, float l, float beta, float limit) {
    // Comparisons rather than fmin/fmax: those drop a NaN operand, the op propagates it.
    const float gate = g > limit ? limit : g;
    const float lin = l < -limit ? -limit : (l > limit ? limit : l);
    return (lin + 1.0f) * moe_swish(gate, beta);
}

// What a rows GEMM does after storing its block of C (act_mode): nothing; GEMM2, C being the
// gate_up result [rows, 2I], act_j from C's columns 2j and 2j + 1; GEMM3, C being the up result
// [rows, I] and `gate` the gate GEMM's (enqueued before it on the in-order queue).
#define MOE_ACT_NONE 0
#define MOE_ACT_GEMM2 1
#define MOE_ACT_GEMM3 2

// The activation of the block of C one rows-GEMM work-group has just stored: the tile's `rows`
// rows from c_row0, columns n0 .. n0 + TN - 1 (below N). The barrier makes the work-group's
// stores visible to all of its work-items; no other work-group's results are read, so decode
// needs no SwiGLU launch of its own. For GEMM2 the host fuses only when TN is even, so that a
// block holds whole (gate, linear) pairs. act_mode is the same for the whole work-group.
inline void moe_act_epilogue(__global const float* C, uint N, uint c_row0, uint rows, uint n0, uint TN, int act_mode,
                             __global const float* gate, __global float* act, float beta, float limit, int gate_lane) {
    // The barrier comes first, whatever act_mode: under `if (act_mode != MOE_ACT_NONE)` (a branch
    // every work-item takes alike) PoCL 3.1's build of the GPU bodies crashed in most runs.
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (act_mode == MOE_ACT_NONE || n0 >= N) return;
    const bool gemm2 = act_mode == MOE_ACT_GEMM2;
    const uint cols = min(TN, N - n0), outs = gemm2 ? cols / 2 : cols, I = gemm2 ? N / 2 : N;
    for (uint o = get_local_id(0); o < rows * outs; o += get_local_size(0)) {
        const ulong row = c_row0 + o / outs;
        const uint c = o % outs;
        if (gemm2) {
            const uint j = n0 / 2 + c;
            __global const float* f = C + row * N;
            act[row * I + j] = moe_act_gemm2(f[2 * j + gate_lane], f[2 * j + 1 - gate_lane], beta, limit);
        } else {
            const ulong at = row * N + n0 + c;
            act[at] = moe_swish(gate[at], beta) * C[at];
        }
    }
}

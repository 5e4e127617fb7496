// swiglu: the activation of every routed pair, both expert types (activation.cl's formulas), where
// the GEMMs did not already apply it (decode fuses it into moe_gemm_rows_*_nk*).
// One work-item per (j, pair row).
__kernel void moe_swiglu(__global const float* first, __global const float* up, __global float* act,
                         uint inter, uint rows, int gemm2, float beta, float limit, int gate_lane) {
    const uint j = get_global_id(0), r = get_global_id(1);
    if (j >= inter || r >= rows) return;
    float a;
    if (gemm2) {
        __global const float* f = first + (ulong)r * 2 * inter;
        a = moe_act_gemm2(f[2 * j + gate_lane], f[2 * j + 1 - gate_lane], beta, limit);
    } else {
        const ulong at = (ulong)r * inter + j;
        a = moe_swish(first[at], beta) * up[at];
    }
    act[(ulong)r * inter + j] = a;
}

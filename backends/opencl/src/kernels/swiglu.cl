// swiglu: the activation of every routed pair, both expert types. The variants of the op's
// conventions arrive resolved (spec/src/convention.cpp): swish beta, clamp limit L, gate lane.
//   GEMM2: gate_j = first[2j + gate_lane], lin_j = first[2j + 1 - gate_lane]
//          act_j = (clamp(lin_j, -L, L) + 1) * swish(min(gate_j, L); beta)
//   GEMM3: act_j = swish(first[j]; beta) * up[j]
// One work-item per (j, pair row).
float moe_swish(float x, float beta) { return x / (1.0f + exp(-beta * x)); }

__kernel void moe_swiglu(__global const float* first, __global const float* up, __global float* act,
                         uint inter, uint rows, int gemm2, float beta, float limit, int gate_lane) {
    const uint j = get_global_id(0), r = get_global_id(1);
    if (j >= inter || r >= rows) return;
    float a;
    if (gemm2) {
        __global const float* f = first + (ulong)r * 2 * inter;
        // Comparisons rather than fmin/fmax: those drop a NaN operand, the op propagates it.
        const float g = f[2 * j + gate_lane], l = f[2 * j + 1 - gate_lane];
        const float gate = g > limit ? limit : g;
        const float lin = l < -limit ? -limit : (l > limit ? limit : l);
        a = (lin + 1.0f) * moe_swish(gate, beta);
    } else {
        const ulong at = (ulong)r * inter + j;
        a = moe_swish(first[at], beta) * up[at];
    }
    act[(ulong)r * inter + j] = a;
}

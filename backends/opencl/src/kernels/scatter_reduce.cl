// scatter_reduce: out[t, h] = sum over k = 0..K-1, in slot order, of w(t, k) * down[pair(t, k), h].
// One work-item per (feature h, token t) owns its output element and adds the K rows itself:
// no atomics, and the summation order is fixed (the result does not depend on scheduling).
// slot_weight[t*K + k] is the routing weight of (t, k) (already read in the routing layout).
__kernel void moe_scatter_reduce(__global const float* down, __global const float* slot_weight,
                                 __global const uint* position, uint hidden, uint tokens, uint topk,
                                 __global float* out) {
    const uint h = get_global_id(0), t = get_global_id(1);
    if (h >= hidden || t >= tokens) return;
    float acc = 0.0f;
    for (uint k = 0; k < topk; ++k) {
        const uint i = t * topk + k;
        acc += slot_weight[i] * down[(ulong)position[i] * hidden + h];
    }
    out[(ulong)t * hidden + h] = acc;
}

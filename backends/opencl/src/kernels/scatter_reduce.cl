// scatter_reduce: out[t, h] = sum over k = 0..K-1, in slot order, of w(t, k) * down[pair(t, k), h],
// stored in the op's data type (out_type).
// One work-item per (feature h, token t) owns its output element and adds the K rows itself:
// no atomics, and the summation order is fixed (the result does not depend on scheduling).
// The routing weight w(t, k) is read in its own type and in the convention's layout: compact
// [T, K] (rw[t*K + k]) or dense [E, T] (rw[e*T + t], e the slot's expert from the indices).
// Both come in the run's packed input buffer `in` (the routing weights at byte rw_off, the
// indices at idx_off), as the host uploaded them.
__kernel void moe_scatter_reduce(__global const float* down, __global const uchar* in, uint rw_off, int rw_type,
                                 int rw_dense, uint idx_off, int idx64,
                                 __global const uint* position, uint hidden, uint tokens, uint topk,
                                 __global uchar* out, int out_type) {
    const uint h = get_global_id(0), t = get_global_id(1);
    if (h >= hidden || t >= tokens) return;
    float acc = 0.0f;
    for (uint k = 0; k < topk; ++k) {
        const uint i = t * topk + k;
        const ulong flat = rw_dense ? (ulong)moe_index(in + idx_off, i, idx64) * tokens + t : (ulong)i;
        acc += moe_load(in + rw_off, flat, rw_type) * down[(ulong)position[i] * hidden + h];
    }
    moe_store(out, (ulong)t * hidden + h, acc, out_type);
}

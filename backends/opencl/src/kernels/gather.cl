// gather: the routed token rows copied into contiguous per-expert blocks (plan order), widened
// to f32, so that each expert's GEMM reads a dense [count, H] matrix.
// One work-item per (feature h, pair i); consecutive work-items read consecutive features. x
// starts at byte x_off of its buffer (small inputs travel packed in one buffer).
__kernel void moe_gather(__global const uchar* x, uint x_off, int x_type, __global const uint* token, uint hidden,
                         uint pairs, __global float* out) {
    const uint h = get_global_id(0), i = get_global_id(1);
    if (h >= hidden || i >= pairs) return;
    out[(ulong)i * hidden + h] = moe_load(x + x_off, (ulong)token[i] * hidden + h, x_type);
}

// Decode on a GPU: mask_gen's plan and then the gather, by mask_gen's one work-group (the host
// picks this kernel when pairs * hidden is small: one work-group's copy then costs about what a
// launch of moe_gather does, and the launch is saved). The barrier makes the token list the
// work-group has just stored visible to all of its work-items.
__kernel void moe_mask_gen_gather(__global const uchar* in, uint idx_off, int idx64, uint pairs, uint topk,
                                  uint experts, __global uint* counts, __global uint* offsets, __global uint* token,
                                  __global uint* slot, __global uint* position, __global uint* used,
                                  __global uint* used_count, __local uint* cnt, __local uint* masks,
                                  __global const uchar* x, uint x_off, int x_type, uint hidden, __global float* out) {
    moe_mask_gen_plan(in, idx_off, idx64, pairs, topk, experts, counts, offsets, token, slot, position, used,
                      used_count, cnt, masks);
    barrier(CLK_GLOBAL_MEM_FENCE);
    for (uint o = get_local_id(0); o < pairs * hidden; o += get_local_size(0)) {
        const uint i = o / hidden, h = o % hidden;
        out[o] = moe_load(x + x_off, (ulong)token[i] * hidden + h, x_type);
    }
}

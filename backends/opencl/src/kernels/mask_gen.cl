// mask_gen: from the top-k indices, the routing plan that make_routing_plan computes on the host:
// per expert its pair count, the exclusive scan of the counts (offsets, E + 1 entries), the
// (token, slot) pairs grouped by ascending expert with ascending token inside an expert, the
// inverse map position[token * K + slot] = pair index, and the list of used experts.
//
// Launched as ONE work-group. Each work-item owns experts lid, lid + lsize, ... and walks the
// pairs in row-major order for each of them: the order is stable by construction and no atomics
// are needed. The work is E * T * K comparisons, small next to the GEMMs for the usual E <= 256.
__kernel void moe_mask_gen(__global const int* indices, uint pairs, uint topk, uint experts,
                           __global uint* counts, __global uint* offsets, __global uint* token,
                           __global uint* slot, __global uint* position, __global uint* used,
                           __global uint* used_count) {
    const uint lid = get_local_id(0), lsize = get_local_size(0);
    for (uint e = lid; e < experts; e += lsize) {
        uint c = 0;
        for (uint i = 0; i < pairs; ++i) c += indices[i] == (int)e;
        counts[e] = c;
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    // The scan is serial: E entries, once per run; a parallel scan would not pay for itself.
    if (lid == 0) {
        uint acc = 0, n = 0;
        for (uint e = 0; e < experts; ++e) {
            offsets[e] = acc;
            acc += counts[e];
            if (counts[e]) used[n++] = e;
        }
        offsets[experts] = acc;
        *used_count = n;
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    for (uint e = lid; e < experts; e += lsize) {
        uint at = offsets[e];
        for (uint i = 0; i < pairs; ++i) {
            if (indices[i] != (int)e) continue;
            token[at] = i / topk;
            slot[at] = i % topk;
            position[i] = at;
            ++at;
        }
    }
}

// mask_gen: from the top-k indices, the routing plan that make_routing_plan computes on the host:
// per expert its pair count, the exclusive scan of the counts (offsets, E + 1 entries), the
// (token, slot) pairs grouped by ascending expert with ascending token inside an expert, the
// inverse map position[token * K + slot] = pair index, and the list of used experts.
//
// Launched as ONE work-group of G work-items, G a multiple of 32, with local memory for E
// counters (cnt) and E bit masks of G bits (masks). The pairs are counted with local atomics,
// the counts scanned by one work-item (E steps, once per run), then the pairs are placed G at a
// time, one per work-item: a pair's rank among the chunk's pairs of its expert is the number of
// lower work-items that set their bit in that expert's mask, so every expert's pairs keep the
// pair order (stable) although the work-items place them at once; the last of them advances the
// expert's running base. About 3 * T * K / G barriers in all, and no global atomics.
// The indices arrive as the op stores them, i32 or i64 (idx64), at byte idx_off of `in`.
// moe_mask_gen_gather (gather.cl) runs the same body and then the gather, in one launch.
inline void moe_mask_gen_plan(__global const uchar* in, uint idx_off, int idx64, uint pairs, uint topk, uint experts,
                              __global uint* counts, __global uint* offsets, __global uint* token,
                              __global uint* slot, __global uint* position, __global uint* used,
                              __global uint* used_count, __local uint* cnt, __local uint* masks) {
    const uint lid = get_local_id(0), G = get_local_size(0), W = G / 32;  // W: words per mask
    __global const uchar* indices = in + idx_off;
    for (uint e = lid; e < experts; e += G) cnt[e] = 0;
    for (uint w = lid; w < experts * W; w += G) masks[w] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint i = lid; i < pairs; i += G) atomic_inc(&cnt[moe_index(indices, i, idx64)]);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {  // counts, offsets, used experts; cnt becomes each expert's running base
        uint acc = 0, n = 0;
        for (uint e = 0; e < experts; ++e) {
            const uint c = cnt[e];
            counts[e] = c;
            offsets[e] = acc;
            cnt[e] = acc;
            acc += c;
            if (c) used[n++] = e;
        }
        offsets[experts] = acc;
        *used_count = n;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint word = lid / 32, bit = lid % 32;
    for (uint base = 0; base < pairs; base += G) {
        const uint i = base + lid;
        const bool valid = i < pairs;
        const uint e = valid ? (uint)moe_index(indices, i, idx64) : 0;
        __local uint* m = masks + e * W;
        if (valid) atomic_or(&m[word], 1u << bit);
        barrier(CLK_LOCAL_MEM_FENCE);
        uint rank = 0;
        bool last = true;  // no higher work-item of this chunk has the same expert
        if (valid) {
            for (uint w = 0; w < word; ++w) rank += popcount(m[w]);
            rank += popcount(m[word] & ((1u << bit) - 1u));
            last = (m[word] >> bit) == 1u;
            for (uint w = word + 1; w < W && last; ++w) last = m[w] == 0;
            const uint at = cnt[e] + rank;
            token[at] = i / topk;
            slot[at] = i % topk;
            position[i] = at;
        }
        barrier(CLK_LOCAL_MEM_FENCE);  // every rank read cnt[e] and the masks
        if (valid) {
            if (last) cnt[e] += rank + 1;
            m[word] = 0;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

__kernel void moe_mask_gen(__global const uchar* in, uint idx_off, int idx64, uint pairs, uint topk, uint experts,
                           __global uint* counts, __global uint* offsets, __global uint* token,
                           __global uint* slot, __global uint* position, __global uint* used,
                           __global uint* used_count, __local uint* cnt, __local uint* masks) {
    moe_mask_gen_plan(in, idx_off, idx64, pairs, topk, experts, counts, offsets, token, slot, position, used,
                      used_count, cnt, masks);
}

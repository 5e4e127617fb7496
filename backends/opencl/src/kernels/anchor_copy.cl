// anchor_copy.cl: moe-bench's same-device bandwidth baseline (opencl_anchors.hpp), a program of
// its own: b = a in float4 vectors, one per work-item, consecutive work-items on consecutive
// vectors (what a streaming kernel at best does).
__kernel void moe_anchor_copy(__global const float4* restrict a, __global float4* restrict b, uint n) {
    const uint i = get_global_id(0);
    if (i < n) b[i] = a[i];
}

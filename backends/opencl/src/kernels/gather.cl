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

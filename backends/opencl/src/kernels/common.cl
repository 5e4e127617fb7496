// Shared by every kernel of the program. Tensors stay on the device in their own element type
// and are widened to f32 where they are read, so a weight is converted once per use and the
// host never rewrites them. Type codes match elem_type in opencl_pipeline.cpp.
#define MOE_F32 0
#define MOE_F16 1
#define MOE_BF16 2

float moe_load(__global const uchar* p, ulong i, int type) {
    if (type == MOE_F16) return vload_half(i, (__global const half*)p);  // exact widening, no cl_khr_fp16 needed
    if (type == MOE_BF16) return as_float((uint)((__global const ushort*)p)[i] << 16);  // bf16 = top half of an f32
    return ((__global const float*)p)[i];
}

// An expert index as the op stores it (i32, or i64 when is64): the host uploads the indices'
// bytes as they are, so it never converts them.
int moe_index(__global const uchar* p, ulong i, int is64) {
    return is64 ? (int)((__global const long*)p)[i] : ((__global const int*)p)[i];
}

// v rounded to the element type, ties to even, as Tensor::set rounds (NaN as the canonical quiet
// NaN): the output is converted on the device and read back into the output tensor as it is.
void moe_store(__global uchar* p, ulong i, float v, int type) {
    if (type == MOE_F16) {
        if (isnan(v)) ((__global ushort*)p)[i] = (ushort)0x7e00;
        else vstore_half_rte(v, i, (__global half*)p);
    } else if (type == MOE_BF16) {
        const uint b = as_uint(v);
        ((__global ushort*)p)[i] = isnan(v) ? (ushort)0x7fc0 : (ushort)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
    } else {
        ((__global float*)p)[i] = v;
    }
}

// Shared by every kernel of the program. Tensors stay on the device in their own element type
// and are widened to f32 where they are read, so a weight is converted once per use and the
// host never rewrites them. Type codes match ElemType in opencl_pipeline.cpp.
#define MOE_F32 0
#define MOE_F16 1
#define MOE_BF16 2

float moe_load(__global const uchar* p, ulong i, int type) {
    if (type == MOE_F16) return vload_half(i, (__global const half*)p);  // exact widening, no cl_khr_fp16 needed
    if (type == MOE_BF16) return as_float((uint)((__global const ushort*)p)[i] << 16);  // bf16 = top half of an f32
    return ((__global const float*)p)[i];
}

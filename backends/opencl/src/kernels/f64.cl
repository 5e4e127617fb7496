// f64.cl: the pipeline's kernels in f64 for f64 data, built as a program of its own (common.cl and
// this file) only on devices with cl_khr_fp64; the f32 program never needs the extension. Same
// jobs and layouts as gather.cl, gemm.cl, swiglu.cl and scatter_reduce.cl, with f64 arithmetic
// and f64 intermediates; mask_gen comes from the f32 program (it only moves indices). f64 data
// is a conformance case, not a speed path: the GEMM is a plain T x T local-memory tile.
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

#define MOE_F64 3

// The GEMM's tile side T (work-group T x T): 16, or less where the device or the kernel takes
// fewer than 256 work-items (Runtime::build_f64; a 16 x 16 work-group there failed every f64
// case with CL_INVALID_WORK_GROUP_SIZE).
#ifndef MOE_F64_T
#define MOE_F64_T 16
#endif

double moe_load_f64(__global const uchar* p, ulong i, int type) {
    if (type == MOE_F64) return ((__global const double*)p)[i];
    return (double)moe_load(p, i, type);  // f32, f16, bf16 widen exactly
}

__kernel void moe_gather_f64(__global const uchar* x, uint x_off, int x_type, __global const uint* token, uint hidden,
                             uint pairs, __global double* out) {
    const uint h = get_global_id(0), i = get_global_id(1);
    if (h >= hidden || i >= pairs) return;
    out[(ulong)i * hidden + h] = moe_load_f64(x + x_off, (ulong)token[i] * hidden + h, x_type);
}

// C[c_row0 + m, n] = sum_k A[a_row0 + m, k] * W[expert](n, k) (+ bias), m < rows <= T, for the
// row tiles of `tiles` from tile0 on (gemm.cl's table: expert, first row of A, first row of C,
// rows). W in NK
// (kn = 0) or KN layout, read in its own type. Work-group T x T: one output per work-item.
__kernel __attribute__((reqd_work_group_size(MOE_F64_T, MOE_F64_T, 1))) void moe_gemm_f64(
    __global const double* A, __global const uint* tiles, uint tile0, uint N, uint K, __global const uchar* W, int w_type,
    int kn, __global const uchar* bias, int b_type, int has_bias, __global double* C) {
    __local double a_t[MOE_F64_T][MOE_F64_T + 1], w_t[MOE_F64_T][MOE_F64_T + 1];  // [row][k], [k][column]; padded against bank conflicts
    __global const uint* t = tiles + 4 * (tile0 + get_group_id(1));
    const uint expert = t[0], a_row0 = t[1], c_row0 = t[2], rows = t[3];
    const uint x = get_local_id(0), y = get_local_id(1), n0 = get_group_id(0) * MOE_F64_T, n = n0 + x;
    const ulong w_base = (ulong)expert * N * K;
    double acc = 0.0;
    for (uint k0 = 0; k0 < K; k0 += MOE_F64_T) {
        a_t[y][x] = k0 + x < K ? A[(ulong)(a_row0 + min(y, rows - 1)) * K + k0 + x] : 0.0;
        if (kn) {  // (k, n) at k*N + n: consecutive work-items read consecutive columns
            const uint k = k0 + y;
            w_t[y][x] = k < K && n < N ? moe_load_f64(W, w_base + (ulong)k * N + n, w_type) : 0.0;
        } else {  // (n, k) at n*K + k: consecutive work-items read consecutive k
            const uint k = k0 + x, nn = n0 + y;
            w_t[x][y] = k < K && nn < N ? moe_load_f64(W, w_base + (ulong)nn * K + k, w_type) : 0.0;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint kk = 0; kk < MOE_F64_T; ++kk) acc = fma(a_t[y][kk], w_t[kk][x], acc);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (y >= rows || n >= N) return;
    if (has_bias) acc += moe_load_f64(bias, (ulong)expert * N + n, b_type);
    C[(ulong)(c_row0 + y) * N + n] = acc;
}

double moe_swish_f64(double x, double beta) { return x / (1.0 + exp(-beta * x)); }

// swiglu.cl in f64 (the same lanes, clamps and NaN propagation).
__kernel void moe_swiglu_f64(__global const double* first, __global const double* up, __global double* act,
                             uint inter, uint rows, int gemm2, double beta, double limit, int gate_lane) {
    const uint j = get_global_id(0), r = get_global_id(1);
    if (j >= inter || r >= rows) return;
    double a;
    if (gemm2) {
        __global const double* f = first + (ulong)r * 2 * inter;
        const double g = f[2 * j + gate_lane], l = f[2 * j + 1 - gate_lane];
        const double gate = g > limit ? limit : g;
        const double lin = l < -limit ? -limit : (l > limit ? limit : l);
        a = (lin + 1.0) * moe_swish_f64(gate, beta);
    } else {
        const ulong at = (ulong)r * inter + j;
        a = moe_swish_f64(first[at], beta) * up[at];
    }
    act[(ulong)r * inter + j] = a;
}

// scatter_reduce.cl in f64; the output is f64 data.
__kernel void moe_scatter_reduce_f64(__global const double* down, __global const uchar* in, uint rw_off,
                                     int rw_type, int rw_dense, uint idx_off, int idx64,
                                     __global const uint* position, uint hidden, uint tokens, uint topk,
                                     __global double* out) {
    const uint h = get_global_id(0), t = get_global_id(1);
    if (h >= hidden || t >= tokens) return;
    double acc = 0.0;
    for (uint k = 0; k < topk; ++k) {
        const uint i = t * topk + k;
        const ulong flat = rw_dense ? (ulong)moe_index(in + idx_off, i, idx64) * tokens + t : (ulong)i;
        acc += moe_load_f64(in + rw_off, flat, rw_type) * down[(ulong)position[i] * hidden + h];
    }
    out[(ulong)t * hidden + h] = acc;
}

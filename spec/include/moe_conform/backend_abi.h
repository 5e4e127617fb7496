/* moe-conform backend ABI, versions 1 and 2: how a MoE implementation built outside this project
 * (a CUDA or OpenCL kernel behind a C shim, a vendor library, an NPU runtime) is judged by
 * `moe-conform run --backend-lib PATH.so`.
 *
 * The plugin is a shared library exporting one C function,
 *
 *     const moe_conform_backend_v2_t* moe_conform_backend_v2(void);   (version 2), or
 *     const moe_conform_backend_v1_t* moe_conform_backend_v1(void);   (version 1)
 *
 * that returns a table of function pointers valid until release() is called. Version 2 is
 * version 1 plus compressed weights (u8, i8, u4, i4 with group scales and zero points, MXFP4, FP8:
 * spec/compressed.md), at the end of this header; a version-1 plugin is still loaded, and the
 * cases with compressed weights are skipped for it with the reason. A library exporting both
 * symbols is taken as version 2. Only C types cross the boundary. The host validates every problem against the spec before the plugin sees it, so
 * shapes, indices and attributes are always consistent (spec/README.md, "Rejected inputs").
 *
 * Conventions:
 *  - Tensors are dense row-major; f16 and bf16 elements are uint16 bit patterns; i32/i64 are
 *    native-endian integers.
 *  - The host owns every buffer it passes; the plugin owns its table, its state and the strings
 *    it returns. Output and stage buffers are filled with a NaN of a fixed payload before run();
 *    an element still holding those bits afterwards (the output's, or a stage's when
 *    stages_written is 1) makes the case an ERROR that names it, instead of passing as a zero, or
 *    as a NaN where the golden value is NaN too. 64 elements of the same fill follow each
 *    buffer: a plugin that writes one of them (an off-by-one in its last tile) gets an ERROR
 *    saying so. Error and reason messages are written NUL-terminated into the caller's buffer.
 *  - A function returns MOE_OK (0) on success, any other value on failure; the message in `err`
 *    becomes the case's ERROR reason, with the code ("run() returned 3: <err>"). supports() is
 *    the exception: 1 supported, 0 not (the case is SKIP, "not supported: <reason>"; moe-bench
 *    does not time the row). Anything a plugin prints to stdout reaches the tools' stderr.
 *  - The entry function (moe_conform_backend_v2 or _v1) and precision() may be called in a
 *    process that then forks the workers that run the cases (crash isolation): they must not open
 *    device contexts or start threads. Do that in availability(), prepare() or run(), which run
 *    in the worker. Each worker process calls the entry function again and then the other
 *    functions, one call at a time from one thread; it ends with _exit() after its cases,
 *    without calling release(): write traces or profiles out before run() returns. A plugin never
 *    calls exit(): while loading it is refused, in run() it is the case's ERROR.
 *  - A thread or process the plugin starts should not outlive the call that started it: a
 *    crash it causes later is reported against whatever step the worker is in then (the report
 *    names that suspect).
 *  - Everything a plugin needs to compute the op is in moe_problem_v1: the op attributes as
 *    given AND their resolved meaning (swish beta, clamp limit, gate lane, layouts), so a plugin
 *    need not implement the two conventions' mapping itself (spec/errata.md explains them).
 *
 * Versioning: a host accepts exactly the versions it knows (1 and 2). A later version exports
 * moe_conform_backend_vN and keeps this header's symbols untouched; a host that finds only
 * another version's symbol refuses the plugin and says which version it found. */
#ifndef MOE_CONFORM_BACKEND_ABI_H
#define MOE_CONFORM_BACKEND_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MOE_CONFORM_ABI_VERSION 1 /* a version-1 table's abi_version (version 2's: below) */
#define MOE_OK 0
#define MOE_MAX_RANK 4

/* Element types (the golden format's `element_type` names in comments). */
enum moe_dtype { MOE_F64 = 0, MOE_F32 = 1, MOE_F16 = 2, MOE_BF16 = 3, MOE_I32 = 4, MOE_I64 = 5 };
enum moe_expert_type { MOE_GEMM2_BIAS_SWIGLU_CLAMP = 0, MOE_GEMM3_SWIGLU = 1 };
enum moe_convention { MOE_CONVENTION_SPEC = 0, MOE_CONVENTION_OPENVINO = 1 };
/* KN: expert e's weight is [K, N] (y = x W); NK: [N, K] (y = x W^T). */
enum moe_weight_layout { MOE_LAYOUT_KN = 0, MOE_LAYOUT_NK = 1 };
/* dense: routing_weights is [E, T] (shaped [E, T, 1], [E, T, 1, 1], [E, 1, T, 1] or [E, B, S, 1]);
   compact: [T, K]. */
enum moe_routing_layout { MOE_ROUTING_DENSE = 0, MOE_ROUTING_COMPACT = 1 };

typedef struct {
    const char* name;             /* the op's input name: "hidden_states", "weight_0", ... */
    int32_t dtype;                /* enum moe_dtype */
    int32_t rank;                 /* 1..MOE_MAX_RANK */
    int64_t shape[MOE_MAX_RANK];  /* entries past rank are 0 */
    const void* data;             /* row-major elements */
} moe_tensor_view_v1;

typedef struct {
    const char* case_name;
    /* The op attributes as given. */
    int32_t expert_type;  /* enum moe_expert_type */
    int32_t convention;   /* enum moe_convention */
    double expert_alpha;
    double expert_beta;
    int32_t has_gate_idx; /* openvino convention only */
    int64_t gate_idx;
    /* Their resolved meaning (the spec's resolve()). */
    double swish_beta;
    double clamp_limit;   /* GEMM2 only */
    int32_t gate_lane;    /* GEMM2 only: 0 = the swish/minimum lane is on the even elements of gate_up */
    int32_t weight_layout;  /* enum moe_weight_layout */
    int32_t routing_layout; /* enum moe_routing_layout */
    /* Sizes: T tokens (B * S), hidden H, intermediate I, experts E, top-k K. */
    int64_t T, H, I, E, K;
    /* The inputs present, in op order (hidden_states, routing_weights,
     * router_topk_output_indices, weight_0, bias_0?, weight_1, bias_1?, weight_2?). */
    int32_t num_inputs;
    const moe_tensor_view_v1* inputs;
} moe_problem_v1;

/* A buffer the host allocated for the plugin to fill. */
typedef struct {
    const char* name;             /* "output", or a stage name: gate_up, gate, up, act, down */
    int32_t dtype;                /* enum moe_dtype: what the plugin must write */
    int32_t rank;
    int64_t shape[MOE_MAX_RANK];
    void* data;
} moe_buffer_v1;

typedef struct {
    moe_buffer_v1 output;  /* the shape of hidden_states, in the dtype the plugin declared */
    /* With want_stages (and provides_stages set): the expert type's stages in pipeline order,
     * each [T, K, features] in the declared storage dtype (GEMM2: gate_up [.., 2I], act [.., I],
     * down [.., H] without the routing weight; GEMM3: gate, up, act [.., I], down [.., H]).
     * Set stages_written to 1 after filling them; 0 leaves them unreported. */
    int32_t want_stages;
    int32_t num_stages;
    moe_buffer_v1* stages;
    int32_t stages_written;
} moe_outputs_v1;

/* The arithmetic the plugin uses for one input data type; it sets the tolerance
 * (spec/tolerance.md). compute: accumulation and elementwise math; storage: the type of the
 * intermediates kept between stages; output: the dtype of the output buffer (-1: the data type,
 * as the op defines it). */
typedef struct {
    int32_t compute;
    int32_t storage;
    int32_t output;
} moe_precision_v1;

typedef struct moe_conform_backend_v1_t {
    uint32_t abi_version;  /* MOE_CONFORM_ABI_VERSION */
    uint32_t struct_size;  /* sizeof(moe_conform_backend_v1_t), checked by the host */
    const char* name;      /* the backend's name in reports: letters, digits, '_', '-', '.',
                              starting with a letter or digit; not "all" */
    const char* description;
    void* state;           /* passed back to every function */
    int32_t provides_stages;

    /* MOE_OK when the backend can run here; else the reason (no device, no driver). NULL: always. */
    int (*availability)(void* state, char* reason, size_t reason_size);
    /* 1 when the problem is supported; 0 with the reason (reported as SKIP). NULL: everything. */
    int (*supports)(void* state, const moe_problem_v1* problem, char* reason, size_t reason_size);
    /* The precision for inputs of `data_type` (enum moe_dtype). */
    int (*precision)(void* state, int32_t data_type, moe_precision_v1* out);
    /* Optional (NULL): work that depends only on the weights, done once per problem before run();
     * not part of the case's reported seconds (a --case-timeout covers it). */
    int (*prepare)(void* state, const moe_problem_v1* problem, char* err, size_t err_size);
    /* Computes the problem into the host's buffers. */
    int (*run)(void* state, const moe_problem_v1* problem, moe_outputs_v1* outputs, char* err, size_t err_size);
    /* Frees the state; the table is not used afterwards. NULL: nothing to free. */
    void (*release)(void* state);
} moe_conform_backend_v1_t;

/* The one symbol a version-1 plugin exports. */
typedef const moe_conform_backend_v1_t* (*moe_conform_backend_v1_fn)(void);
#define MOE_CONFORM_BACKEND_V1_SYMBOL "moe_conform_backend_v1"

/* ---- Version 2: compressed weights ----------------------------------------------------------
 *
 * Everything above holds, with these additions. A weight input (weight_0, weight_1, weight_2) may
 * be stored compressed: its view in `inputs` has one of the element types below and the shape
 * [E, N, K] (always the NK layout: weight_layout is MOE_LAYOUT_NK), and the problem lists it in
 * `compressed` with its scale S and optional zero point Z. The weight's value is
 *
 *     W_f(e, n, k) = (W(e, n, k) - Z(e, n', g)) * S(e, n', g),   g = k / group_size,
 *
 * with n' = n, or 0 when the scale has one row for all outputs (scale_rows = 0); the codes, zero
 * points and scales are read as spec/compressed.md's value tables say (i4 two's complement; E2M1,
 * E4M3 and E5M2 per the OCP formats; E8M0 a power of two 2^(c - 127)). The product is exact in
 * f64; a plugin that rounds W_f to a narrower type before its GEMM declares that type as
 * `dequant` in moe_precision_v2 (the tolerance's dequantisation term, spec/tolerance.md).
 *
 * Storage: 8-bit codes one per byte. 4-bit codes (u4, i4, f4e2m1) packed two per byte, element
 * 2i in the low nibble of byte i and element 2i + 1 in the high nibble, flat row-major order over
 * the whole tensor: the layout OpenVINO's kernels take (and a 4-bit zero point likewise). The host
 * has validated the codes, the parameter shapes and values (no E8M0 NaN scale, K divisible by the
 * group size) before the plugin sees them. */

#define MOE_CONFORM_ABI_VERSION_2 2

/* Element types a version-2 problem may carry besides enum moe_dtype's (never in a version-1 one). */
enum moe_compressed_dtype {
    MOE_U8 = 6,
    MOE_I8 = 7,
    MOE_U4 = 8,      /* packed two per byte, low nibble first */
    MOE_I4 = 9,      /* packed two per byte, low nibble first; two's complement */
    MOE_F4E2M1 = 10, /* MXFP4 codes: packed two per byte, low nibble first */
    MOE_F8E4M3 = 11,
    MOE_F8E5M2 = 12,
    MOE_F8E8M0 = 13  /* MXFP4 block scales: 2^(c - 127) */
};

/* One compressed weight. */
typedef struct {
    int32_t input;                  /* its index in moe_problem_v1.inputs (the codes) */
    moe_tensor_view_v1 scale;       /* "<weight>_scale": [E, N, G] (or [E, N, G, 1]; [E, 1, G] when
                                       scale_rows is 0); f32, f16 or bf16, f8e8m0 for f4e2m1 */
    moe_tensor_view_v1 zero_point;  /* "<weight>_zero_point", the scale's shape, the weight's type or
                                       f16; absent (Z = 0): name and data NULL, rank 0 */
    int64_t group_size;             /* GS consecutive k share a scale; GS = K: per channel */
    int64_t groups;                 /* G = K / GS */
    int32_t scale_rows;             /* 1: one scale row per output n; 0: one row shared by all */
} moe_compressed_weight_v2;

typedef struct {
    moe_problem_v1 base;  /* as in version 1; a compressed weight's view has its stored type */
    int32_t num_compressed;
    const moe_compressed_weight_v2* compressed;  /* in input order; NULL when num_compressed is 0 */
} moe_problem_v2;

/* moe_precision_v1 plus the type W_f is rounded to before the GEMM uses it (-1: compute). */
typedef struct {
    int32_t compute;
    int32_t storage;
    int32_t output;
    int32_t dequant;
} moe_precision_v2;

/* Version 1's table, its functions taking version-2 problems and precisions. */
typedef struct moe_conform_backend_v2_t {
    uint32_t abi_version;  /* MOE_CONFORM_ABI_VERSION_2 */
    uint32_t struct_size;  /* sizeof(moe_conform_backend_v2_t), checked by the host */
    const char* name;
    const char* description;
    void* state;
    int32_t provides_stages;

    int (*availability)(void* state, char* reason, size_t reason_size);
    int (*supports)(void* state, const moe_problem_v2* problem, char* reason, size_t reason_size);
    int (*precision)(void* state, int32_t data_type, moe_precision_v2* out);
    int (*prepare)(void* state, const moe_problem_v2* problem, char* err, size_t err_size);
    int (*run)(void* state, const moe_problem_v2* problem, moe_outputs_v1* outputs, char* err, size_t err_size);
    void (*release)(void* state);
} moe_conform_backend_v2_t;

/* The one symbol a version-2 plugin exports. */
typedef const moe_conform_backend_v2_t* (*moe_conform_backend_v2_fn)(void);
#define MOE_CONFORM_BACKEND_V2_SYMBOL "moe_conform_backend_v2"

#ifdef __cplusplus
}
#endif

#endif /* MOE_CONFORM_BACKEND_ABI_H */

/* moe-conform backend ABI, version 1: how a MoE implementation built outside this project (a
 * CUDA or OpenCL kernel behind a C shim, a vendor library, an NPU runtime) is judged by
 * `moe-conform run --backend-lib PATH.so`.
 *
 * The plugin is a shared library exporting one C function,
 *
 *     const moe_conform_backend_v1_t* moe_conform_backend_v1(void);
 *
 * that returns a table of function pointers valid until release() is called. Only C types cross
 * the boundary. The host validates every problem against the spec before the plugin sees it, so
 * shapes, indices and attributes are always consistent (spec/README.md, "Rejected inputs").
 *
 * Conventions:
 *  - Tensors are dense row-major; f16 and bf16 elements are uint16 bit patterns; i32/i64 are
 *    native-endian integers.
 *  - The host owns every buffer it passes; the plugin owns its table, its state and the strings
 *    it returns. Output and stage buffers are filled with NaN before run(), so an element the
 *    plugin forgets to write fails the comparison instead of passing as a zero. Error and reason messages are written NUL-terminated into the caller's buffer.
 *  - A function returns MOE_OK (0) on success, any other value on failure; the message in `err`
 *    becomes the case's ERROR reason.
 *  - moe_conform_backend_v1() and precision() may be called in a process that then forks the
 *    workers that run the cases (crash isolation): they must not open device contexts or start
 *    threads. Do that in availability(), prepare() or run(), which run in the worker.
 *  - Everything a plugin needs to compute the op is in moe_problem_v1: the op attributes as
 *    given AND their resolved meaning (swish beta, clamp limit, gate lane, layouts), so a plugin
 *    need not implement the two conventions' mapping itself (spec/errata.md explains them).
 *
 * Versioning: a host accepts exactly the versions it knows. A future version 2 exports
 * moe_conform_backend_v2 and keeps this header's symbols untouched; a host that finds only
 * another version's symbol refuses the plugin and says which version it found. */
#ifndef MOE_CONFORM_BACKEND_ABI_H
#define MOE_CONFORM_BACKEND_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MOE_CONFORM_ABI_VERSION 1
#define MOE_OK 0
#define MOE_MAX_RANK 4

/* Element types (the golden format's `element_type` names in comments). */
enum moe_dtype { MOE_F64 = 0, MOE_F32 = 1, MOE_F16 = 2, MOE_BF16 = 3, MOE_I32 = 4, MOE_I64 = 5 };
enum moe_expert_type { MOE_GEMM2_BIAS_SWIGLU_CLAMP = 0, MOE_GEMM3_SWIGLU = 1 };
enum moe_convention { MOE_CONVENTION_SPEC = 0, MOE_CONVENTION_OPENVINO = 1 };
/* KN: expert e's weight is [K, N] (y = x W); NK: [N, K] (y = x W^T). */
enum moe_weight_layout { MOE_LAYOUT_KN = 0, MOE_LAYOUT_NK = 1 };
/* dense: routing_weights is [E, T] (or [E, B, S, 1]); compact: [T, K]. */
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
    const char* name;      /* the backend's name in reports: letters, digits, '_', '-', '.' */
    const char* description;
    void* state;           /* passed back to every function */
    int32_t provides_stages;

    /* MOE_OK when the backend can run here; else the reason (no device, no driver). NULL: always. */
    int (*availability)(void* state, char* reason, size_t reason_size);
    /* 1 when the problem is supported; 0 with the reason (reported as SKIP). NULL: everything. */
    int (*supports)(void* state, const moe_problem_v1* problem, char* reason, size_t reason_size);
    /* The precision for inputs of `data_type` (enum moe_dtype). */
    int (*precision)(void* state, int32_t data_type, moe_precision_v1* out);
    /* Optional (NULL): work that depends only on the weights, done once per problem, untimed. */
    int (*prepare)(void* state, const moe_problem_v1* problem, char* err, size_t err_size);
    /* Computes the problem into the host's buffers. */
    int (*run)(void* state, const moe_problem_v1* problem, moe_outputs_v1* outputs, char* err, size_t err_size);
    /* Frees the state; the table is not used afterwards. NULL: nothing to free. */
    void (*release)(void* state);
} moe_conform_backend_v1_t;

/* The one symbol a version-1 plugin exports. */
typedef const moe_conform_backend_v1_t* (*moe_conform_backend_v1_fn)(void);
#define MOE_CONFORM_BACKEND_V1_SYMBOL "moe_conform_backend_v1"

#ifdef __cplusplus
}
#endif

#endif /* MOE_CONFORM_BACKEND_ABI_H */

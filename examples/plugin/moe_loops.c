/* A complete moe-conform backend plugin in plain C99 (backend ABI version 2): the MOE operation as
 * f32 loops, token by token and slot by slot, the K slots summed in slot order, compressed weights
 * (u8, i8, u4, i4 with scales and zero points, MXFP4, FP8) dequantised once to f32. It computes
 * exactly what the built-in backend `loop_f32` computes (same operations in the same order), so
 * the two get the same verdicts and metrics; use it as the template for a shim around your own
 * kernel: replace run_moe() with a call into your library, keep the table.
 *
 * Two builds are deliberately broken, for the suite to catch: -DMOE_EXAMPLE_BUG drops bias_1 (the
 * down projection's bias; the report names "down" as the first diverging stage), and
 * -DMOE_EXAMPLE_NIBBLE_BUG reads the high nibble of a 4-bit code's byte first. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "moe_conform/backend_abi.h"

#if defined(MOE_EXAMPLE_BUG)
#define PLUGIN_NAME "example_loops_broken"
#elif defined(MOE_EXAMPLE_NIBBLE_BUG)
#define PLUGIN_NAME "example_loops_nibbles_swapped"
#else
#define PLUGIN_NAME "example_loops"
#endif

/* ---- element conversions (f16 and bf16 are bit patterns; rounding is to nearest, ties even) ---- */

static float f16_to_f32(uint16_t h) {
    const float sign = (h & 0x8000u) ? -1.0f : 1.0f;
    const int e = (h >> 10) & 31;
    const int m = h & 1023;
    if (e == 0) return sign * ldexpf((float)m, -24);
    if (e == 31) return m ? NAN : sign * INFINITY;
    return sign * ldexpf((float)(m + 1024), e - 25);
}

static float bf16_to_f32(uint16_t b) {
    const uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint16_t f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if (isnan(f)) return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static uint16_t f32_to_f16(float f) {
    const uint16_t sign = signbit(f) ? 0x8000u : 0u;
    if (isnan(f)) return (uint16_t)(sign | 0x7E00u);
    const double a = fabs((double)f);
    if (a >= 65520.0) return (uint16_t)(sign | 0x7C00u); /* 65520 ties to the even 2^16: infinity */
    if (a < ldexp(1.0, -14)) return (uint16_t)(sign | (uint16_t)nearbyint(a * 16777216.0)); /* subnormal */
    int e;
    frexp(a, &e);
    int E = e - 1; /* a in [2^E, 2^(E+1)) */
    double m = nearbyint(ldexp(a, 10 - E));
    if (m == 2048.0) {
        m = 1024.0;
        ++E;
    }
    return (uint16_t)(sign | (uint16_t)((E + 15) << 10) | (uint16_t)(m - 1024.0));
}

static size_t element_count(const moe_tensor_view_v1* t) {
    size_t n = 1;
    for (int i = 0; i < t->rank; ++i) n *= (size_t)t->shape[i];
    return n;
}

/* The tensor widened to float: f64 rounded once (the input rounding of an f32 kernel), f16, bf16
 * and f32 exactly. NULL when absent (an optional bias) or out of memory (*oom set). */
static float* widen(const moe_tensor_view_v1* t, int* oom) {
    if (!t) return NULL;
    const size_t n = element_count(t);
    float* out = (float*)malloc((n ? n : 1) * sizeof(float));
    if (!out) {
        *oom = 1;
        return NULL;
    }
    for (size_t i = 0; i < n; ++i) {
        switch (t->dtype) {
            case MOE_F64: out[i] = (float)((const double*)t->data)[i]; break;
            case MOE_F32: out[i] = ((const float*)t->data)[i]; break;
            case MOE_F16: out[i] = f16_to_f32(((const uint16_t*)t->data)[i]); break;
            default: out[i] = bf16_to_f32(((const uint16_t*)t->data)[i]); break;
        }
    }
    return out;
}

static const moe_tensor_view_v1* find_input(const moe_problem_v1* p, const char* name) {
    for (int i = 0; i < p->num_inputs; ++i)
        if (strcmp(p->inputs[i].name, name) == 0) return &p->inputs[i];
    return NULL;
}

/* ---- compressed weights (spec/compressed.md; backend_abi.h, "Version 2") ---- */

/* The stored code of element i: a byte, or for the 4-bit types a nibble (element 2j in the low
 * nibble of byte j, element 2j + 1 in the high one). */
static unsigned code_at(const moe_tensor_view_v1* t, size_t i) {
    const unsigned char* bytes = (const unsigned char*)t->data;
    if (t->dtype != MOE_U4 && t->dtype != MOE_I4 && t->dtype != MOE_F4E2M1) return bytes[i];
#ifdef MOE_EXAMPLE_NIBBLE_BUG
    const int high = i % 2 == 0;
#else
    const int high = i % 2 == 1;
#endif
    return (high ? bytes[i / 2] >> 4 : bytes[i / 2]) & 15u;
}

/* The value a code of a compressed type stands for (the value tables of spec/compressed.md). */
static double code_value(int32_t type, unsigned c) {
    static const double e2m1[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
    const double sign = (c & 0x80u) ? -1.0 : 1.0;
    switch (type) {
        case MOE_U8:
        case MOE_U4: return (double)c;
        case MOE_I8: return c >= 128 ? (double)c - 256.0 : (double)c;
        case MOE_I4: return c >= 8 ? (double)c - 16.0 : (double)c;
        case MOE_F4E2M1: return (c & 8u) ? -e2m1[c & 7u] : e2m1[c & 7u];
        case MOE_F8E4M3: { /* bias 7, no infinities, S.1111.111 is NaN */
            const unsigned e = (c >> 3) & 15u, m = c & 7u;
            if (e == 15 && m == 7) return NAN;
            return sign * (e == 0 ? ldexp(m / 8.0, -6) : ldexp(1.0 + m / 8.0, (int)e - 7));
        }
        case MOE_F8E5M2: { /* bias 15, IEEE infinities and NaNs */
            const unsigned e = (c >> 2) & 31u, m = c & 3u;
            if (e == 31) return m ? NAN : sign * INFINITY;
            return sign * (e == 0 ? ldexp(m / 4.0, -14) : ldexp(1.0 + m / 4.0, (int)e - 15));
        }
        case MOE_F8E8M0: return ldexp(1.0, (int)c - 127); /* 255 (NaN) never reaches a plugin */
        default: return NAN;
    }
}

/* Element i of a scale or zero point: a float type, or a code. */
static double param_value(const moe_tensor_view_v1* t, size_t i) {
    switch (t->dtype) {
        case MOE_F32: return ((const float*)t->data)[i];
        case MOE_F16: return f16_to_f32(((const uint16_t*)t->data)[i]);
        case MOE_BF16: return bf16_to_f32(((const uint16_t*)t->data)[i]);
        default: return code_value(t->dtype, code_at(t, i));
    }
}

/* W_f = (W - Z) * S for every element of the [E, N, K] weight: exact in f64, then rounded once to
 * f32 (the `dequant` type precision() declares). NULL when out of memory (*oom set). */
static float* dequantize(const moe_tensor_view_v1* w, const moe_compressed_weight_v2* c, int* oom) {
    const size_t E = (size_t)w->shape[0], N = (size_t)w->shape[1], K = (size_t)w->shape[2];
    const size_t G = (size_t)c->groups, group_size = (size_t)c->group_size, count = E * N * K;
    float* out = (float*)malloc((count > 0 ? count : 1) * sizeof(float));
    if (!out) {
        *oom = 1;
        return NULL;
    }
    for (size_t e = 0; e < E; ++e)
        for (size_t n = 0; n < N; ++n)
            for (size_t k = 0; k < K; ++k) {
                const size_t param = (e * (c->scale_rows ? N : 1) + (c->scale_rows ? n : 0)) * G + k / group_size;
                const size_t flat = (e * N + n) * K + k;
                const double q = code_value(w->dtype, code_at(w, flat));
                const double z = c->zero_point.data ? param_value(&c->zero_point, param) : 0.0;
                out[flat] = (float)((q - z) * param_value(&c->scale, param));
            }
    return out;
}

/* A weight input as floats: dequantised when it is compressed, else widened. */
static float* weight_values(const moe_problem_v2* p, const char* name, int* oom) {
    const moe_tensor_view_v1* w = find_input(&p->base, name);
    for (int i = 0; w && i < p->num_compressed; ++i)
        if (&p->base.inputs[p->compressed[i].input] == w) return dequantize(w, &p->compressed[i], oom);
    return widen(w, oom);
}

static int64_t index_at(const moe_tensor_view_v1* t, size_t i) {
    return t->dtype == MOE_I32 ? (int64_t)((const int32_t*)t->data)[i] : ((const int64_t*)t->data)[i];
}

static void store(void* data, int32_t dtype, size_t i, float v) {
    switch (dtype) {
        case MOE_F64: ((double*)data)[i] = (double)v; break;
        case MOE_F32: ((float*)data)[i] = v; break;
        case MOE_F16: ((uint16_t*)data)[i] = f32_to_f16(v); break;
        default: ((uint16_t*)data)[i] = f32_to_bf16(v); break;
    }
}

/* ---- the operation ---- */

typedef struct {
    const moe_problem_v1* p;
    int gemm2, nk, compact_routing, gate_lane;
    float beta, limit;
    float *x, *routing, *w0, *w1, *w2, *b0, *b1;
} setup_t;

/* y[n] = sum_k W[e](n, k) in[k] (+ b[e][n]) in index order, W of `rows` outputs by `cols` inputs. */
static void gemv(const setup_t* s, const float* w, const float* bias, size_t e, size_t rows, size_t cols,
                 const float* in, float* y) {
    const float* we = w + e * rows * cols;
    for (size_t n = 0; n < rows; ++n) {
        float sum = 0.0f;
        for (size_t k = 0; k < cols; ++k) sum = sum + (s->nk ? we[n * cols + k] : we[k * rows + n]) * in[k];
        if (bias) sum += bias[e * rows + n];
        y[n] = sum;
    }
}

/* NaN comes back unchanged from both: every comparison with NaN is false. */
static float minimum(float x, float limit) { return x > limit ? limit : x; }
static float clamp(float x, float lo, float hi) { return x < lo ? lo : (x > hi ? hi : x); }
static float swish(float x, float beta) { return x / (1.0f + expf(-beta * x)); }

/* One expert on one token: fills the stage rows gate_up/act/down (GEMM2) or gate/up/act/down. */
static void run_expert(const setup_t* s, size_t e, const float* x, float* first, float* up, float* act, float* down) {
    const size_t H = (size_t)s->p->H, I = (size_t)s->p->I;
    if (s->gemm2) {
        gemv(s, s->w0, s->b0, e, 2 * I, H, x, first);
        for (size_t j = 0; j < I; ++j) {
            const float gate = first[2 * j + (size_t)s->gate_lane];
            const float lin = first[2 * j + 1 - (size_t)s->gate_lane];
            act[j] = (clamp(lin, -s->limit, s->limit) + 1.0f) * swish(minimum(gate, s->limit), s->beta);
        }
#ifdef MOE_EXAMPLE_BUG
        gemv(s, s->w1, NULL, e, H, I, act, down);
#else
        gemv(s, s->w1, s->b1, e, H, I, act, down);
#endif
        return;
    }
    gemv(s, s->w0, NULL, e, I, H, x, first);
    gemv(s, s->w1, NULL, e, I, H, x, up);
    for (size_t j = 0; j < I; ++j) act[j] = swish(first[j], s->beta) * up[j];
    gemv(s, s->w2, NULL, e, H, I, act, down);
}

static void write_stage(moe_outputs_v1* o, int which, size_t row, const float* v, size_t width) {
    moe_buffer_v1* b = &o->stages[which];
    for (size_t i = 0; i < width; ++i) store(b->data, b->dtype, row * width + i, v[i]);
}

static int run_moe(const setup_t* s, moe_outputs_v1* o) {
    const moe_problem_v1* p = s->p;
    const size_t T = (size_t)p->T, H = (size_t)p->H, I = (size_t)p->I, K = (size_t)p->K;
    const moe_tensor_view_v1* idx = find_input(p, "router_topk_output_indices");
    float* out = (float*)calloc(T * H + 1, sizeof(float));
    float* first = (float*)malloc((2 * I + 1) * sizeof(float));
    float* up = (float*)malloc((I + 1) * sizeof(float));
    float* act = (float*)malloc((I + 1) * sizeof(float));
    float* down = (float*)malloc((H + 1) * sizeof(float));
    const int ok = out && first && up && act && down;
    const int stages = ok && o->want_stages;
    for (size_t t = 0; ok && t < T; ++t) {
        for (size_t k = 0; k < K; ++k) {
            const size_t e = (size_t)index_at(idx, t * K + k);
            run_expert(s, e, s->x + t * H, first, up, act, down);
            if (stages) { /* pipeline order: gate_up, act, down | gate, up, act, down */
                const size_t row = t * K + k;
                int i = 0;
                write_stage(o, i++, row, first, s->gemm2 ? 2 * I : I);
                if (!s->gemm2) write_stage(o, i++, row, up, I);
                write_stage(o, i++, row, act, I);
                write_stage(o, i, row, down, H);
            }
            const float w = s->compact_routing ? s->routing[t * K + k] : s->routing[e * T + t];
            for (size_t h = 0; h < H; ++h) out[t * H + h] = out[t * H + h] + w * down[h];
        }
    }
    if (ok) {
        for (size_t i = 0; i < T * H; ++i) store(o->output.data, o->output.dtype, i, out[i]);
        o->stages_written = stages;
    }
    free(out);
    free(first);
    free(up);
    free(act);
    free(down);
    return ok ? MOE_OK : 1;
}

/* ---- the table ---- */

static int precision(void* state, int32_t data_type, moe_precision_v2* out) {
    (void)state;
    (void)data_type;
    out->compute = MOE_F32; /* f32 arithmetic for every data type */
    out->storage = MOE_F32; /* intermediates kept in f32 */
    out->output = -1;       /* the output in the data type, as the op defines it */
    out->dequant = MOE_F32; /* compressed weights: W_f rounded once to f32 */
    return MOE_OK;
}

/* supports(): 1 to run the problem, 0 to decline it with a reason, which the report shows as the
 * case's SKIP ("not supported: ...") and moe-bench as a skipped row. Decline what your kernel
 * does not do (an expert type, a data type, a weight type, a shape), so that it is reported as
 * such rather than as a failure or a crash. This example does everything, but keeps an f32 copy
 * of every weight while it runs: it declines a layer whose copies would take more than 16 GiB
 * (no bundled case comes near; gpt-oss-20b's take 3.2 GB). */
static int supports(void* state, const moe_problem_v2* problem, char* reason, size_t reason_size) {
    const moe_problem_v1* p = &problem->base;
    const double f32_weight_bytes = 3.0 * (double)p->E * (double)p->H * (double)p->I * sizeof(float);
    (void)state;
    if (f32_weight_bytes <= 16.0 * 1024 * 1024 * 1024) return 1;
    snprintf(reason, reason_size, "the f32 copies of the weights would take %.1f GiB, more than this example's 16",
             f32_weight_bytes / (1024.0 * 1024 * 1024));
    return 0;
}

static int run(void* state, const moe_problem_v2* problem, moe_outputs_v1* o, char* err, size_t err_size) {
    const moe_problem_v1* p = &problem->base;
    (void)state;
    setup_t s;
    memset(&s, 0, sizeof s);
    s.p = p;
    s.gemm2 = p->expert_type == MOE_GEMM2_BIAS_SWIGLU_CLAMP;
    s.nk = p->weight_layout == MOE_LAYOUT_NK;
    s.compact_routing = p->routing_layout == MOE_ROUTING_COMPACT;
    s.gate_lane = p->gate_lane;
    s.beta = (float)p->swish_beta;
    s.limit = (float)p->clamp_limit;
    int oom = 0;
    s.x = widen(find_input(p, "hidden_states"), &oom);
    s.routing = widen(find_input(p, "routing_weights"), &oom);
    s.w0 = weight_values(problem, "weight_0", &oom);
    s.w1 = weight_values(problem, "weight_1", &oom);
    s.w2 = weight_values(problem, "weight_2", &oom);
    s.b0 = widen(find_input(p, "bias_0"), &oom);
    s.b1 = widen(find_input(p, "bias_1"), &oom);
    const int rc = oom ? 1 : run_moe(&s, o);
    if (rc != MOE_OK) snprintf(err, err_size, "out of memory for case %s", p->case_name);
    free(s.x);
    free(s.routing);
    free(s.w0);
    free(s.w1);
    free(s.w2);
    free(s.b0);
    free(s.b1);
    return rc;
}

static const moe_conform_backend_v2_t table = {
    MOE_CONFORM_ABI_VERSION_2,
    sizeof(moe_conform_backend_v2_t),
    PLUGIN_NAME,
    "plain C f32 loops, K slots summed in slot order (examples/plugin/moe_loops.c)",
    NULL, /* state */
    1,    /* provides_stages */
    NULL, /* availability: always */
    supports,
    precision,
    NULL, /* prepare: nothing to do */
    run,
    NULL, /* release: no state */
};

const moe_conform_backend_v2_t* moe_conform_backend_v2(void) { return &table; }

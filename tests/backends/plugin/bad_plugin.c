/* Plugins that are wrong in one way each (one -D per build), for tests/plugin/test_plugin_loader.cpp:
 * moe-conform must refuse or report each with the fault named, never crash. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "moe_conform/backend_abi.h"

static moe_conform_backend_v1_t table; /* defined below; HOSTILE_TEXTS renames it */

static int precision(void* state, int32_t data_type, moe_precision_v1* out) {
    (void)state;
    (void)data_type;
#ifdef HOSTILE_TEXTS
    /* Renames itself after the loader checked the name (a pointer into a reused buffer). */
    table.name = "renamed\x1b[31m;../x";
#endif
#ifdef BAD_PRECISION
    out->compute = MOE_I32;
#else
    out->compute = MOE_F32;
#endif
    out->storage = MOE_F32;
    out->output = -1;
    return MOE_OK;
}

static int availability(void* state, char* reason, size_t size) {
    (void)state;
#ifdef UNAVAILABLE
    snprintf(reason, size, "no accelerator in this machine");
    return 1;
#else
    (void)reason;
    (void)size;
    return MOE_OK;
#endif
}

#ifdef DECLINES_F16
/* A kernel for f32 data only, which says so in supports(), and crashes when it is run on f16
 * anyway (as a real kernel reading f16 as f32 may): moe-bench must not time what it declined. */
static int supports(void* state, const moe_problem_v1* p, char* reason, size_t size) {
    (void)state;
    for (int32_t i = 0; i < p->num_inputs; ++i)
        if (strcmp(p->inputs[i].name, "hidden_states") == 0 && p->inputs[i].dtype != MOE_F32) {
            snprintf(reason, size, "f32 data only, not dtype %d", (int)p->inputs[i].dtype);
            return 0;
        }
    return 1;
}
#define SUPPORTS supports
#else
#define SUPPORTS NULL
#endif

#ifdef CRASHES_LATER
#include <pthread.h>
static void* crash_later(void* arg) {
    (void)arg;
    usleep(200000);
    raise(SIGSEGV);
    return NULL;
}
#endif

static int run(void* state, const moe_problem_v1* p, moe_outputs_v1* o, char* err, size_t size) {
    (void)state;
    (void)o;
#ifdef WRITES_INPUTS
    /* An in-place kernel: scales hidden_states (f32 in the test's case) where it lies. */
    for (int32_t i = 0; i < p->num_inputs; ++i)
        if (strcmp(p->inputs[i].name, "hidden_states") == 0) ((float*)p->inputs[i].data)[0] *= 2.0f;
    memset(o->output.data, 0, sizeof(float));
    return MOE_OK;
#endif
#ifdef LEAVES_ROW_UNWRITTEN
    /* Writes every output row but the last token's (f32 output, [T, H]). */
    {
        const int64_t T = o->output.shape[0], H = o->output.shape[1];
        for (int64_t i = 0; i < (T - 1) * H; ++i) ((float*)o->output.data)[i] = 0.0f;
        return MOE_OK;
    }
#endif
#ifdef DECLINES_F16
    /* Every output element (f32), and a line on stdout, which must not reach the tool's report. */
    {
        const int64_t n = o->output.shape[0] * o->output.shape[1];
        if (o->output.dtype != MOE_F32) raise(SIGSEGV);
        for (int64_t i = 0; i < n; ++i) ((float*)o->output.data)[i] = 0.0f;
        printf("declines_f16 ran %s on stdout\n", p->case_name);
        return MOE_OK;
    }
#endif
#ifdef WRITES_PAST_OUTPUT
    /* Every output element, and one more: an off-by-one in the last tile (f32 output). */
    {
        const int64_t n = o->output.shape[0] * o->output.shape[1];
        for (int64_t i = 0; i <= n; ++i) ((float*)o->output.data)[i] = 0.0f;
        return MOE_OK;
    }
#endif
#ifdef CRASHES_WHEN_SMALL
    /* Wrong on every case (all zeros, in the output's own type), and crashes on one token: what
     * moe-conform shrink meets when a smaller candidate takes another code path. */
    {
        static const size_t bytes[] = {8, 4, 2, 2}; /* MOE_F64, MOE_F32, MOE_F16, MOE_BF16 */
        int64_t n = 1;
        for (int32_t d = 0; d < o->output.rank; ++d) n *= o->output.shape[d];
        if (n == o->output.shape[o->output.rank - 1]) raise(SIGSEGV);
        memset(o->output.data, 0, (size_t)n * bytes[o->output.dtype]);
        return MOE_OK;
    }
#endif
#ifdef HANGS_WHEN_SMALL
    /* Wrong on every case, as CRASHES_WHEN_SMALL, and deadlocks on one token instead: what
     * moe-conform shrink meets when a kernel hangs at some small shape. */
    {
        static const size_t bytes[] = {8, 4, 2, 2}; /* MOE_F64, MOE_F32, MOE_F16, MOE_BF16 */
        int64_t n = 1;
        for (int32_t d = 0; d < o->output.rank; ++d) n *= o->output.shape[d];
        if (n == o->output.shape[o->output.rank - 1])
            for (;;) pause();
        memset(o->output.data, 0, (size_t)n * bytes[o->output.dtype]);
        return MOE_OK;
    }
#endif
#ifdef FLAKY_ON_REPEAT
    /* A race that shows only on the first run of some inputs (a cold cache): the first run of a
     * case is wrong (all zeros, a FAIL), a run on inputs it has seen before is an error. So
     * moe-conform shrink's two reruns of the shrunk case never fail the way the search did,
     * deterministically. Inputs are told apart by an FNV-1a hash of every input's shape and bytes. */
    {
        static const size_t bytes[] = {8, 4, 2, 2, 4, 8}; /* enum moe_dtype */
        static uint64_t seen[8192];
        static size_t num_seen = 0;
        uint64_t h = 1469598103934665603ull;
        int64_t n = 1;
        size_t k;
        for (int32_t i = 0; i < p->num_inputs; ++i) {
            const moe_tensor_view_v1* t = &p->inputs[i];
            int64_t count = 1;
            for (int32_t d = 0; d < t->rank; ++d) {
                count *= t->shape[d];
                h = (h ^ (uint64_t)t->shape[d]) * 1099511628211ull;
            }
            for (size_t b = 0; b < (size_t)count * bytes[t->dtype]; ++b)
                h = (h ^ ((const unsigned char*)t->data)[b]) * 1099511628211ull;
        }
        for (k = 0; k < num_seen; ++k)
            if (seen[k] == h) {
                snprintf(err, size, "these inputs ran before, and now the race went the other way");
                return 7;
            }
        if (num_seen < sizeof seen / sizeof seen[0]) seen[num_seen++] = h;
        for (int32_t d = 0; d < o->output.rank; ++d) n *= o->output.shape[d];
        memset(o->output.data, 0, (size_t)n * bytes[o->output.dtype]);
        return MOE_OK;
    }
#endif
#ifdef EXITS_IN_RUN
    exit(0); /* ends the host process with status 0 */
#endif
#ifdef HANGS_IN_RUN
    for (;;) pause(); /* a deadlock: run() never returns */
#endif
#ifdef SLOW_IN_RUN
    usleep(1000000); /* one second, then the error below */
#endif
#ifdef CRASHES_WITH_CHILD
    /* A helper process that keeps the host's pipes open for 30 s, then a crash. */
    if (fork() == 0) {
        sleep(30);
        _exit(0);
    }
    raise(SIGSEGV);
#endif
#ifdef PRINTS
    printf("the plugin printed this line to stdout\n"); /* left in stdio's buffer */
#endif
#ifdef CRASHES_LATER
    /* Returns an error at once, after starting a thread that crashes the process 200 ms later,
     * while the host reads or runs a later case in the same worker. */
    {
        static int started = 0;
        pthread_t t;
        if (!started && pthread_create(&t, NULL, crash_later, NULL) == 0) started = 1;
    }
#endif
#ifdef HOSTILE_TEXTS
    /* Terminal controls: clear screen, a C1 CSI, a right-to-left override, a forged line. */
    snprintf(err, size, "lost\x1b[2J \xc2\x9b" "31m \xe2\x80\xae \xff\nFAKE LINE");
    return 7;
#endif
    snprintf(err, size, "device lost while running %s", p->case_name);
    return 7;
}

static moe_conform_backend_v1_t table = {
    MOE_CONFORM_ABI_VERSION, sizeof(moe_conform_backend_v1_t), "bad_plugin", "a plugin wrong in one way",
    NULL, 0, availability, SUPPORTS, precision, NULL, run, NULL};

#if defined(V2_BAD_DEQUANT)
/* Version 2 (beside version 1): a precision whose dequantisation type is not a floating type. */
static int precision_v2(void* state, int32_t data_type, moe_precision_v2* out) {
    (void)state;
    (void)data_type;
    out->compute = MOE_F32;
    out->storage = MOE_F32;
    out->output = -1;
    out->dequant = MOE_U8;
    return MOE_OK;
}

static int run_v2(void* state, const moe_problem_v2* p, moe_outputs_v1* o, char* err, size_t size) {
    return run(state, &p->base, o, err, size);
}

static moe_conform_backend_v2_t table_v2 = {
    MOE_CONFORM_ABI_VERSION_2, sizeof(moe_conform_backend_v2_t), "bad_plugin", "a plugin wrong in one way",
    NULL, 0, availability, NULL, precision_v2, NULL, run_v2, NULL};

const moe_conform_backend_v2_t* moe_conform_backend_v2(void) { return &table_v2; }
/* Both symbols: the host must take version 2 (and then refuse its precision); the version-1
 * table alone would load. */
const moe_conform_backend_v1_t* moe_conform_backend_v1(void) { return &table; }
#elif defined(NO_SYMBOL)
const void* not_a_backend_table(void) { return &table; }
#elif defined(V3_ONLY)
const moe_conform_backend_v1_t* moe_conform_backend_v3(void) { return &table; }
#elif defined(V2_WITH_V1_TABLE)
/* A version-2 symbol returning a version-1 table: its abi_version says 1. */
const moe_conform_backend_v1_t* moe_conform_backend_v2(void) { return &table; }
#else
const moe_conform_backend_v1_t* moe_conform_backend_v1(void) {
#ifdef CRASHES_ON_LOAD
    raise(SIGSEGV);
#endif
#ifdef EXITS_ON_LOAD
    exit(0);
#endif
#ifdef DOTS_NAME
    table.name = "..";
#endif
#ifdef ALL_NAME
    table.name = "all";
#endif
#ifdef BAD_VERSION
    table.abi_version = 3;
#endif
#ifdef SMALL_STRUCT
    table.struct_size = 24;
#endif
#ifdef NO_RUN
    table.run = NULL;
#endif
#ifdef BAD_NAME
    table.name = "bad name; rm -rf";
#endif
#ifdef NULL_TABLE
    return NULL;
#endif
#ifdef HOSTILE_TEXTS
    table.description = "desc\x1b]0;owned\x07\nfake line";
#endif
    return &table;
}
#endif

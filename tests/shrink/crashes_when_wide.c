/* A plugin whose kernel is right but segfaults on wide layers: what moe-conform shrink must reduce
 * when the failure is a crash. It is the example plugin's correct loops
 * (examples/plugin/moe_loops.c, included with its entry function renamed, so that the planted
 * fault is the only thing wrong) with a run() that first dereferences a null pointer when the
 * layer has more than 8 experts or more than 64 hidden features, as a kernel with fixed-size
 * per-expert or per-feature tables would. A real fault, not raise(): the kernel's signal. */
#define moe_conform_backend_v2 example_loops_backend_v2
#include "../../examples/plugin/moe_loops.c"
#undef moe_conform_backend_v2

#define MAX_EXPERTS 8
#define MAX_HIDDEN 64

static moe_conform_backend_v2_t wide_table;
static int (*loops_run)(void*, const moe_problem_v2*, moe_outputs_v1*, char*, size_t);

static int run_unless_wide(void* state, const moe_problem_v2* problem, moe_outputs_v1* o, char* err, size_t err_size) {
    if (problem->base.E > MAX_EXPERTS || problem->base.H > MAX_HIDDEN) {
        volatile int* volatile table_of_a_wider_layer = NULL;
        *table_of_a_wider_layer = 1;
    }
    return loops_run(state, problem, o, err, err_size);
}

const moe_conform_backend_v2_t* moe_conform_backend_v2(void);
const moe_conform_backend_v2_t* moe_conform_backend_v2(void) {
    wide_table = *example_loops_backend_v2();
    loops_run = wide_table.run;
    wide_table.name = "crashes_when_wide";
    wide_table.description = "example_loops, but a SIGSEGV on more than 8 experts or 64 hidden features";
    wide_table.run = run_unless_wide;
    return &wide_table;
}

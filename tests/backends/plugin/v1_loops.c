/* The example plugin's loops (examples/plugin/moe_loops.c) behind a version-1 table, as a plugin
 * built before backend ABI version 2 is: the host must still load and run it, pass it every case
 * without compressed weights and skip those with them (tests/backends/plugin/CMakeLists.txt). */
#define moe_conform_backend_v2 example_loops_v2_table /* the example's v2 symbol, renamed away */
#include "../../../examples/plugin/moe_loops.c"
#undef moe_conform_backend_v2

static int precision_v1(void* state, int32_t data_type, moe_precision_v1* out) {
    moe_precision_v2 p;
    const int rc = precision(state, data_type, &p);
    out->compute = p.compute;
    out->storage = p.storage;
    out->output = p.output;
    return rc;
}

static int run_v1(void* state, const moe_problem_v1* problem, moe_outputs_v1* o, char* err, size_t err_size) {
    moe_problem_v2 p;
    p.base = *problem;
    p.num_compressed = 0;
    p.compressed = NULL;
    return run(state, &p, o, err, err_size);
}

static const moe_conform_backend_v1_t table_v1 = {
    MOE_CONFORM_ABI_VERSION, sizeof(moe_conform_backend_v1_t), "example_loops_v1",
    "the example's loops behind a version-1 table", NULL, 1, NULL, NULL, precision_v1, NULL, run_v1, NULL};

const moe_conform_backend_v1_t* moe_conform_backend_v1(void) { return &table_v1; }

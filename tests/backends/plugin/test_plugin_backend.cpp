// The plugin door in process: prepare() validates a problem, values included; run() on that same
// problem checks only its structure (a compressed weight's scales are O(weights / group size)
// elements, tens of ms a run on a model's layer, which moe-bench --backend-lib would otherwise
// time as the plugin's), while any other problem is validated whole. And the ABI's struct layout,
// frozen.
#include <doctest/doctest.h>

#include <dlfcn.h>

#include <cstddef>
#include <string>

#include "compressed_problem.hpp"
#include "moe_conform/backend_abi.h"
#include "moe/backends/plugin_backend.hpp"
#include "moe/spec/error.hpp"
#include "plain_problem.hpp"

using namespace moe;

TEST_CASE("plugin door: a run of the prepared problem skips the value scans; another problem gets them") {
    auto b = backends::load_plugin_backend(MOE_EXAMPLE_PLUGIN);
    Problem p = test::plain_problem(ExpertType::gemm3_swiglu, Convention::openvino, 3, 64, 32, 4, 2);
    test::CompressOptions o;
    o.type = DType::f4e2m1;
    test::compress_all_weights(p, o);
    b->prepare(p);
    CHECK_NOTHROW(b->run(p, false));
    // An E8M0 NaN scale (code 255): a copy of the problem is validated whole and refused ...
    Problem q = p;
    q.inputs.at(std::string(kWeight0) + "_scale").data()[0] = 0xFF;
    CHECK_THROWS_WITH_AS(b->run(q, false), doctest::Contains("weight_0_scale"), InputError);
    // ... and so is the prepared problem once prepare() sees the NaN.
    Problem r = p;
    r.inputs.at(std::string(kWeight0) + "_scale").data()[0] = 0xFF;
    CHECK_THROWS_AS(b->prepare(r), InputError);
    // The prepared problem, changed in place after prepare(): its run does not scan the scales
    // again (what a caller that changes inputs between prepare() and run() gives up).
    b->prepare(p);
    p.inputs.at(std::string(kWeight0) + "_scale").data()[0] = 0xFF;
    CHECK_NOTHROW(b->run(p, false));
}

TEST_CASE("the example plugin's supports() declines with a reason what it cannot hold, and takes the rest") {
    // Called through the table as the host calls it: the example teaches how a plugin declines
    // (it once left supports NULL, accepting everything). Its test looks at E, H and I alone, so a
    // layer too large to hold needs no memory here.
    void* lib = dlopen(MOE_EXAMPLE_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    REQUIRE(lib);
    const auto entry = reinterpret_cast<const moe_conform_backend_v2_t* (*)()>(dlsym(lib, "moe_conform_backend_v2"));
    const bool has_entry = entry != nullptr;
    REQUIRE(has_entry);
    const moe_conform_backend_v2_t* table = entry();
    const bool has_supports = table->supports != nullptr;  // a bool: doctest prints no function pointer
    REQUIRE(has_supports);
    moe_problem_v2 p{};
    char reason[256] = {};
    p.base.T = 8;
    p.base.K = 2;
    p.base.E = 32;  // gpt-oss-20b: 3.2 GB of f32 weights
    p.base.H = 2880;
    p.base.I = 2880;
    CHECK(table->supports(table->state, &p, reason, sizeof reason) == 1);
    p.base.E = 256;  // 4 * 3 * 256 * 4096 * 4096 bytes: 48 GiB
    p.base.H = 4096;
    p.base.I = 4096;
    CHECK(table->supports(table->state, &p, reason, sizeof reason) == 0);
    CHECK(std::string(reason) == "the f32 copies of the weights would take 48.0 GiB, more than this example's 16");
    dlclose(lib);
}

TEST_CASE("the plugin ABI's structs keep their sizes and alignments (a plugin built against an older header still loads)") {
    // Frozen as first published on LP64 (x86-64, AArch64): a field added, removed or widened
    // changes one of these, and the header must then say so with a new version, not silently.
    if (sizeof(void*) != 8) return;
    const struct {
        const char* name;
        std::size_t size, align, want_size, want_align;
    } structs[] = {
        {"moe_tensor_view_v1", sizeof(moe_tensor_view_v1), alignof(moe_tensor_view_v1), 56, 8},
        {"moe_problem_v1", sizeof(moe_problem_v1), alignof(moe_problem_v1), 136, 8},
        {"moe_buffer_v1", sizeof(moe_buffer_v1), alignof(moe_buffer_v1), 56, 8},
        {"moe_outputs_v1", sizeof(moe_outputs_v1), alignof(moe_outputs_v1), 80, 8},
        {"moe_precision_v1", sizeof(moe_precision_v1), alignof(moe_precision_v1), 12, 4},
        {"moe_conform_backend_v1_t", sizeof(moe_conform_backend_v1_t), alignof(moe_conform_backend_v1_t), 88, 8},
        {"moe_compressed_weight_v2", sizeof(moe_compressed_weight_v2), alignof(moe_compressed_weight_v2), 144, 8},
        {"moe_problem_v2", sizeof(moe_problem_v2), alignof(moe_problem_v2), 152, 8},
        {"moe_precision_v2", sizeof(moe_precision_v2), alignof(moe_precision_v2), 16, 4},
        {"moe_conform_backend_v2_t", sizeof(moe_conform_backend_v2_t), alignof(moe_conform_backend_v2_t), 88, 8},
    };
    for (const auto& s : structs) {
        CAPTURE(s.name);
        CHECK(s.size == s.want_size);
        CHECK(s.align == s.want_align);
    }
}

// The plugin door in process: prepare() validates a problem, values included; run() on that same
// problem checks only its structure (a compressed weight's scales are O(weights / group size)
// elements, tens of ms a run on a model's layer, which moe-bench --backend-lib would otherwise
// time as the plugin's), while any other problem is validated whole.
#include <doctest/doctest.h>

#include "compressed_problem.hpp"
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

// The loop backends read the weights of the experts the routing uses, one expert at a time (a
// model-sized case has 128 experts, of which a few tokens use a handful). Whatever an unused
// expert's weights hold must not change one bit of the output or of a stage, for the correct
// loops and for every mutant, with plain and compressed weights.
#include <doctest/doctest.h>

#include <functional>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "moe/backends/loop_backend.hpp"
#include "moe/spec/compression.hpp"
#include "small_cases.hpp"

using namespace moe;
using moe::backends::LoopBackend;
using moe::backends::LoopOptions;

namespace {

std::set<std::size_t> routed_experts(const Problem& p) {
    const Tensor& idx = p.input(kTopkIndices);
    std::set<std::size_t> used;
    for (std::size_t i = 0; i < idx.size(); ++i) used.insert(static_cast<std::size_t>(idx.get_index(i)));
    return used;
}

// `p` with every weight of every expert the routing does not use overwritten: NaN for plain
// weights, every code 0xF (u4: 15, MXFP4: -6) for compressed ones.
Problem with_unused_experts_poisoned(const Problem& p) {
    const std::set<std::size_t> used = routed_experts(p);
    Problem q = p;
    for (const char* name : {kWeight0, kWeight1, kWeight2}) {
        if (!q.has(name)) continue;
        Tensor& w = q.inputs.at(name);
        const std::size_t E = w.shape()[0], per_expert = w.size() / E;
        for (std::size_t e = 0; e < E; ++e) {
            if (used.count(e)) continue;
            if (is_floating(w.dtype())) {
                for (std::size_t i = 0; i < per_expert; ++i)
                    w.set(e * per_expert + i, std::numeric_limits<double>::quiet_NaN());
            } else {
                REQUIRE(w.nbytes() % E == 0);  // 4-bit codes: an even count per expert
                const std::size_t bytes = w.nbytes() / E;
                for (std::size_t b = 0; b < bytes; ++b) w.data()[e * bytes + b] = 0xff;
            }
        }
    }
    return q;
}

std::vector<Problem> problems() {
    std::vector<Problem> out;
    for (const ExpertType t : {ExpertType::gemm2_bias_swiglu_clamp, ExpertType::gemm3_swiglu})
        for (const DType dt : {DType::f32, DType::bf16, DType::f64})
            out.push_back(test::small_problem(t, Convention::openvino, 3, 16, 8, 8, 2, dt));
    for (const DType ct : {DType::u4, DType::f4e2m1}) {
        const bool mx = ct == DType::f4e2m1;
        auto spec = test::small_spec(ExpertType::gemm3_swiglu, Convention::openvino, 3, 32, 32, 8, 2);
        generator::CompressionSpec cs;
        cs.type = ct;
        cs.group_size = mx ? kMxBlock : 8;
        cs.scale_dtype = mx ? DType::f8e8m0 : DType::f16;
        cs.zero_point = mx ? generator::CompressionSpec::ZeroPoint::none : generator::CompressionSpec::ZeroPoint::weight_type;
        spec.compression = cs;
        out.push_back(generator::synthesize(spec));
    }
    return out;
}

}  // namespace

TEST_CASE("loop backends: the weights of experts no token uses change no bit of the output or the stages") {
    std::vector<std::pair<std::string, std::function<std::unique_ptr<Backend>()>>> backends = {
        {"loop_f32", [] { return std::make_unique<LoopBackend>(LoopOptions{}); }},
        {"loop_lowp", [] { return std::make_unique<LoopBackend>(LoopOptions{true}); }},
        {"loop_f32_reversed",
         [] { return std::make_unique<LoopBackend>(LoopOptions{false, backends::LoopMutation::none, -1.0, true}); }},
    };
    for (const auto& m : backends::loop_mutants()) backends.emplace_back(m.name, m.make);
    for (const Problem& p : problems()) {
        const std::set<std::size_t> used = routed_experts(p);
        REQUIRE(used.size() < 8);  // some expert is unused, so the check has something to poison
        const Problem q = with_unused_experts_poisoned(p);
        for (const auto& [name, make] : backends) {
            CAPTURE(name);
            CAPTURE(std::string(dtype_name(p.input(kWeight0).dtype())));
            const Output a = make()->run(p, true), b = make()->run(q, true);
            CHECK(a.output == b.output);
            REQUIRE(a.stages.size() == b.stages.size());
            for (const auto& [stage, t] : a.stages) CHECK(b.stages.at(stage) == t);
        }
    }
}

// The blockwise (BWMM) simulator: the Neuron guide's worked examples reproduced from the block plan
// alone, its outputs judged by the product's comparison for every option combination, its
// counted loads against the predicted statistics, and its mutants.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "moe/backends/blockwise_backend.hpp"
#include "conformance_check.hpp"
#include "moe/spec/error.hpp"
#include "small_cases.hpp"
#include "tensor_compare.hpp"

using namespace moe;
using namespace moe::backends;
using moe::test::small_problem;

namespace {

double max_abs_diff(const Tensor& a, const Tensor& b) {
    REQUIRE(a.shape() == b.shape());
    return test::max_abs_diff(a, b);
}

using test::max_abs;

}  // namespace

TEST_CASE("the Neuron guide worked example: 1000 tokens, 8 experts, top_k 2, block_size 256, best case") {
    const std::vector<std::size_t> counts(8, 250);  // 2000 pairs, perfectly balanced
    const BlockPlan plan = plan_blocks(counts, 256, 8);
    CHECK(plan.pairs == 2000);
    CHECK(plan.num_blocks == 15);  // ceil(2000 / 256) + (8 - 1) = 8 + 7
    CHECK(plan.used_blocks == 8);
    const BlockwiseStats s = blockwise_stats(plan, {256, true, true, true, BlockwiseSplit::none});
    CHECK(s.blocks_provisioned == 15);
    CHECK(s.provisioned_rows == 3840);  // 15 x 256, "total compute slots (actual)"
    CHECK(s.required_rows == 2048);     // 8 x 256, "total compute slots (required)"
    CHECK(s.padding_overhead == doctest::Approx(0.875).epsilon(1e-12));           // (3840 - 2048) / 2048
    CHECK(s.algorithmic_padding_overhead == doctest::Approx(0.024).epsilon(1e-12)); // (2048 - 2000) / 2000
    CHECK(std::round(1000 * s.padding_overhead) / 10 == 87.5);
    CHECK(std::round(1000 * s.algorithmic_padding_overhead) / 10 == 2.4);
    CHECK(s.padding_rows == 1840);  // the guide's formula: 15 x 256 - 1000 x 2
    CHECK(s.total_padding_overhead == doctest::Approx(0.92).epsilon(1e-12));
    CHECK(s.blocks_skipped == 7);
    CHECK(s.blocks_computed == 8);
    CHECK(s.token_loads == 2000);
    CHECK(s.token_loads_without_token_skipping == 2048);
    CHECK(s.weight_loads == 8);
    CHECK(s.weight_loads_without_weight_skipping == 8);
    CHECK(s.arithmetic_intensity == doctest::Approx(480.0));  // 256 x 15 / 8
    CHECK(s.arithmetic_intensity_used == doctest::Approx(256.0));
    // Without block skipping the 7 padded blocks are computed too (with the last expert's weights).
    const BlockwiseStats all = blockwise_stats(plan, {256, false, false, false, BlockwiseSplit::none});
    CHECK(all.blocks_computed == 15);
    CHECK(all.token_loads == 3840);
    CHECK(all.weight_loads == 15);
    const BlockwiseStats reuse = blockwise_stats(plan, {256, true, true, false, BlockwiseSplit::none});
    CHECK(reuse.weight_loads == 8);  // the 7 trailing blocks reuse expert 7's weights
    CHECK(reuse.weight_loads_saved == 7);
    CHECK(reuse.token_loads_saved == 3840 - 2000);
    MESSAGE(s.to_text());
}

TEST_CASE("the Neuron guide worked example: worst case, one expert 1750 pairs, the others ~36") {
    // 1750 + 5 x 36 + 2 x 35 = 2000 pairs ("others get ~36 tokens each").
    const std::vector<std::size_t> counts = {1750, 36, 36, 36, 36, 36, 35, 35};
    const BlockPlan plan = plan_blocks(counts, 256, 8);
    CHECK(plan.pairs == 2000);
    CHECK(plan.num_blocks == 15);
    CHECK(plan.used_blocks == 14);  // 7 for the hot expert + 7 for the others
    const BlockwiseStats s = blockwise_stats(plan, {});
    CHECK(s.provisioned_rows == 3840);
    CHECK(s.required_rows == 3584);  // 14 x 256
    CHECK(s.padding_overhead == doctest::Approx(256.0 / 3584.0).epsilon(1e-12));
    CHECK(s.algorithmic_padding_overhead == doctest::Approx(0.792).epsilon(1e-12));  // (3584 - 2000) / 2000
    CHECK(std::round(10000 * s.padding_overhead) / 100 == 7.14);
    CHECK(std::round(1000 * s.algorithmic_padding_overhead) / 10 == 79.2);
    // The hot expert's 7 blocks come first; weight skipping loads its weights once.
    for (std::size_t b = 0; b < 7; ++b) CHECK(plan.block_expert[b] == 0);
    CHECK(plan.block_real[6] == 1750 - 6 * 256);
    for (std::size_t b = 7; b < 14; ++b) CHECK(plan.block_expert[b] == b - 6);
    CHECK(s.weight_loads == 8);
    CHECK(s.weight_loads_without_weight_skipping == 14);
    CHECK(s.weight_loads_saved == 6);
    // Block parallel: core 0 takes blocks 0, 2, 4, 6 (all expert 0), core 1 blocks 1, 3, 5 (expert 0)...
    BlockwiseOptions bp;
    bp.block_size = 256;
    bp.split = BlockwiseSplit::block_parallel;
    const BlockwiseStats sp = blockwise_stats(plan, bp);
    // core 0: 0,2,4,6 (E0) 8,10,12 (E2,E4,E6) -> 4 loads; core 1: 1,3,5 (E0) 7,9,11,13 (E1,E3,E5,E7) -> 5.
    CHECK(sp.weight_loads == 9);
}

TEST_CASE("the Neuron guide block organization: 6 tokens, experts [E0, E1, E0, E2, E1, E0], block_size 4") {
    const Tensor idx = Tensor::from_f64(DType::i32, {6, 1}, {0, 1, 0, 2, 1, 0});
    const RoutingPlan routing = make_routing_plan(idx, 3);
    const BlockPlan plan = plan_blocks(routing.counts, 4, 3);
    CHECK(plan.num_blocks == 4);  // ceil(6 / 4) + (3 - 1)
    CHECK(plan.used_blocks == 3);
    CHECK(plan.block_expert == std::vector<std::size_t>{0, 1, 2, 2});
    const std::vector<std::int64_t> tokens = block_tokens(plan, routing);
    CHECK(std::vector<std::int64_t>(tokens.begin(), tokens.begin() + 4) == std::vector<std::int64_t>{0, 2, 5, -1});
    CHECK(std::vector<std::int64_t>(tokens.begin() + 4, tokens.begin() + 8) == std::vector<std::int64_t>{1, 4, -1, -1});
    CHECK(std::vector<std::int64_t>(tokens.begin() + 8, tokens.begin() + 12) == std::vector<std::int64_t>{3, -1, -1, -1});
    CHECK(std::vector<std::int64_t>(tokens.begin() + 12, tokens.end()) == std::vector<std::int64_t>(4, -1));
    const BlockwiseStats s = blockwise_stats(plan, {});
    // Token skipping: block 0 loads 3 rows instead of 4 (the guide's "~25 %").
    CHECK(s.token_loads == 6);
    CHECK(s.token_loads_without_token_skipping == 12);
    CHECK(s.padding_rows == 10);
}

TEST_CASE("the Neuron guide weight skipping: block sequence [E0, E0, E1, E2, E2]") {
    const BlockPlan plan = plan_blocks({8, 4, 5}, 4, 3);  // N = ceil(17 / 4) + 2 = 7; 5 used
    CHECK(plan.used_blocks == 5);
    CHECK(std::vector<std::size_t>(plan.block_expert.begin(), plan.block_expert.begin() + 5) ==
          std::vector<std::size_t>{0, 0, 1, 2, 2});
    const BlockwiseStats s = blockwise_stats(plan, {});
    CHECK(s.weight_loads == 3);
    CHECK(s.weight_loads_without_weight_skipping == 5);
    CHECK(s.weight_loads_saved == 2);
}

TEST_CASE("the dropless N always suffices and every pair lands in exactly one row") {
    for (std::size_t bs : {1, 2, 3, 4, 7})
        for (const auto& counts : std::vector<std::vector<std::size_t>>{
                 {0, 0, 0}, {1, 1, 1}, {5, 0, 9}, {4, 4, 4, 4}, {3, 5, 7, 1, 0, 2}, {13}}) {
            const BlockPlan p = plan_blocks(counts, bs, counts.size());
            std::vector<int> seen(p.pairs, 0);
            for (std::int64_t r : p.rows)
                if (r >= 0) ++seen[static_cast<std::size_t>(r)];
            CHECK(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
            CHECK(p.used_blocks <= p.num_blocks);
        }
    CHECK_THROWS_AS(plan_blocks({1, 2}, 0, 2), InputError);
}

TEST_CASE("blockwise passes the conformance comparison for every option combination, and counts what it predicts") {
    const BlockwiseSplit splits[] = {BlockwiseSplit::none, BlockwiseSplit::h_sharded, BlockwiseSplit::i_sharded,
                                     BlockwiseSplit::block_parallel};
    for (ExpertType type : {ExpertType::gemm2_bias_swiglu_clamp, ExpertType::gemm3_swiglu})
        for (Convention conv : {Convention::spec, Convention::openvino})
            for (std::size_t H : {12, 13}) {
                const Problem p = small_problem(type, conv, 9, H, 7, 4, 2);
                const auto c = test::golden_case(p);
                for (std::size_t bs : {1, 3, 4, 16})
                    for (int flags = 0; flags < 8; ++flags)
                        for (BlockwiseSplit split : splits) {
                            BlockwiseOptions o;
                            o.block_size = bs;
                            o.token_skipping = flags & 1;
                            o.weight_skipping = flags & 2;
                            o.block_skipping = flags & 4;
                            o.split = split;
                            CAPTURE(expert_type_name(type));
                            CAPTURE(H);
                            CAPTURE(bs);
                            CAPTURE(flags);
                            CAPTURE(blockwise_split_name(split));
                            BlockwiseBackend b(o);
                            const Tensor got = b.run(p, false).output;
                            CHECK(test::verdict(c, got, b.precision(DType::f32)) == "PASS");
                            // The loads and blocks the run counted are the ones the plan predicts.
                            const RoutingPlan rp = make_routing_plan(p.input(kTopkIndices), 4);
                            const BlockwiseStats predicted = blockwise_stats(plan_blocks(rp.counts, bs, 4), o);
                            CHECK(b.stats().token_loads == predicted.token_loads);
                            CHECK(b.stats().weight_loads == predicted.weight_loads);
                            CHECK(b.stats().blocks_computed == predicted.blocks_computed);
                            CHECK(b.stats().blocks_skipped == predicted.blocks_skipped);
                            CHECK(b.stats().real_rows == 18);
                        }
            }
}

TEST_CASE("blockwise handles f16/bf16/f64 data and an empty problem") {
    for (DType dt : {DType::f16, DType::bf16, DType::f64}) {
        const Problem p = small_problem(ExpertType::gemm2_bias_swiglu_clamp, Convention::openvino, 6, 12, 6, 4, 2, dt);
        BlockwiseBackend b;
        const Tensor got = b.run(p, false).output;
        CHECK(got.dtype() == dt);
        CHECK(test::verdict(test::golden_case(p), got, b.precision(dt)) == "PASS");
    }
    const Problem empty = small_problem(ExpertType::gemm3_swiglu, Convention::spec, 0, 12, 6, 4, 2);
    BlockwiseBackend b;
    CHECK(b.run(empty, false).output.size() == 0);
    CHECK(b.stats().blocks_provisioned == 3);
    CHECK(b.stats().blocks_used == 0);
}

TEST_CASE("the blockwise mutants change the output") {
    const Problem p = small_problem(ExpertType::gemm2_bias_swiglu_clamp, Convention::openvino, 9, 12, 6, 4, 2);
    const Tensor want = BlockwiseBackend().run(p, false).output;
    for (const auto& m : blockwise_mutants()) {
        CAPTURE(m.name);
        const auto b = m.make();
        CHECK(b->name() == "mutant:" + m.name);
        CHECK(max_abs_diff(b->run(p, false).output, want) > 1e-3 * max_abs(want));
    }
}

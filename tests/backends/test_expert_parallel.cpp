// The expert-parallel simulator (Tenstorrent's Qwen3 MoE plan): its routing tensors on a hand case, its outputs
// (EP with uniform and custom mappings, and the TP variant) judged by the product's comparison,
// the overwrite mutant, and the statistics for the guide's Qwen3-30B-A3B configuration (T 4096, E 128, K 8,
// D 8, H 2048, I 768, bf16) with routings built so that every number can be computed by hand.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "moe/backends/expert_parallel_backend.hpp"
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

// Qwen3-30B-A3B (Tenstorrent's Qwen3 MoE plan).
constexpr std::size_t T = 4096, E = 128, K = 8, D = 8, H = 2048, I = 768, B = 2;  // bf16: 2 bytes
constexpr std::uint64_t kRow = H * B;                                              // one token row: 4096 B

std::vector<std::int64_t> routing(std::size_t (*expert)(std::size_t t, std::size_t k)) {
    std::vector<std::int64_t> idx(T * K);
    for (std::size_t t = 0; t < T; ++t)
        for (std::size_t k = 0; k < K; ++k) idx[t * K + k] = static_cast<std::int64_t>(expert(t, k));
    return idx;
}

}  // namespace

TEST_CASE("uniform contiguous device-expert mapping") {
    const auto m = uniform_expert_mapping(128, 8);
    REQUIRE(m.size() == 8);
    for (std::size_t d = 0; d < 8; ++d) {
        REQUIRE(m[d].size() == 16);
        CHECK(m[d].front() == 16 * d);
        CHECK(m[d].back() == 16 * d + 15);
    }
    CHECK(uniform_expert_mapping(10, 4) == std::vector<std::vector<std::size_t>>{{0, 1}, {2, 3, 4}, {5, 6}, {7, 8, 9}});
    // More devices than experts: the devices beyond E hold none.
    CHECK(uniform_expert_mapping(3, 8) ==
          std::vector<std::vector<std::size_t>>{{0}, {1}, {2}, {}, {}, {}, {}, {}});
}

TEST_CASE("routed token tensors of the Tenstorrent plan on a hand case") {
    // 4 tokens, K 2, E 3: token 0 -> (E2 w.7, E0 w.3), 1 -> (E0 .6, E1 .4), 2 -> (E1 .5, E2 .5), 3 -> (E0 .9, E2 .1).
    const Tensor idx = Tensor::from_f64(DType::i32, {4, 2}, {2, 0, 0, 1, 1, 2, 0, 2});
    const std::vector<float> w = {.7f, .3f, .6f, .4f, .5f, .5f, .9f, .1f};
    const RoutedTokens r = make_routed_tokens(make_routing_plan(idx, 3),
                                              [&](std::size_t t, std::size_t k, std::size_t) { return w[t * 2 + k]; });
    CHECK(r.num_routed_tokens == std::vector<std::int32_t>{3, 2, 3});
    CHECK(r.routed_tokens == std::vector<std::int32_t>{0, 1, 3, -1, 1, 2, -1, -1, 0, 2, 3, -1});
    CHECK(r.routed_token_weights == std::vector<float>{.3f, .6f, .9f, 0, .4f, .5f, 0, 0, .7f, .5f, .1f, 0});
}

TEST_CASE("expert_parallel and its TP variant pass the conformance comparison") {
    for (ExpertType type : {ExpertType::gemm2_bias_swiglu_clamp, ExpertType::gemm3_swiglu})
        for (Convention conv : {Convention::spec, Convention::openvino}) {
            const Problem p = small_problem(type, conv, 9, 12, 7, 6, 3);
            const auto c = test::golden_case(p);
            CAPTURE(expert_type_name(type));
            CAPTURE(convention_name(conv));
            for (std::size_t devices : {1, 2, 3, 4, 6, 8})
                for (bool tp : {false, true}) {
                    CAPTURE(devices);
                    CAPTURE(tp);
                    ExpertParallelOptions o;
                    o.devices = devices;
                    o.tensor_parallel = tp;
                    ExpertParallelBackend b(o);
                    CHECK(test::verdict(c, b.run(p, false).output, b.precision(DType::f32)) == "PASS");
                    CHECK(b.stats().device_pairs.size() == devices);
                }
            ExpertParallelOptions custom;  // non-contiguous, uneven
            custom.devices = 3;
            custom.mapping = {{5, 0}, {}, {3, 1, 4, 2}};
            ExpertParallelBackend b(custom);
            CHECK(test::verdict(c, b.run(p, false).output, b.precision(DType::f32)) == "PASS");
            std::size_t pairs = 0;
            for (std::size_t v : b.stats().device_pairs) pairs += v;
            CHECK(pairs == 27);
            CHECK(b.stats().device_pairs[1] == 0);
        }
}

TEST_CASE("a custom mapping must hold every expert exactly once") {
    const Problem p = small_problem(ExpertType::gemm3_swiglu, Convention::spec, 5, 12, 6, 4, 2);
    ExpertParallelOptions o;
    o.devices = 2;
    o.mapping = {{0, 1}, {2}};  // expert 3 missing
    CHECK_THROWS_AS(ExpertParallelBackend(o).run(p, false), InputError);
    o.mapping = {{0, 1, 3}, {2, 3}};  // expert 3 twice
    CHECK_THROWS_AS(ExpertParallelBackend(o).run(p, false), InputError);
    o.mapping = {{0, 1, 2, 3}};  // one list for two devices
    CHECK_THROWS_AS(ExpertParallelBackend(o).run(p, false), InputError);
}

TEST_CASE("each mutant changes the output") {
    // E = 12 on the default 8 devices: devices with one and with two experts, so that the
    // leftover experts' mutant differs too (with E <= 8 or a multiple of 8 it computes alike).
    const Problem p = small_problem(ExpertType::gemm2_bias_swiglu_clamp, Convention::openvino, 9, 12, 6, 12, 2);
    const Tensor want = ExpertParallelBackend().run(p, false).output;
    for (const auto& m : expert_parallel_mutants()) {
        CAPTURE(m.name);
        const auto b = m.make();
        CHECK(b->name() == "mutant:" + m.name);
        CHECK(max_abs_diff(b->run(p, false).output, want) > 1e-3 * max_abs(want));
    }
}

TEST_CASE("Qwen3-30B-A3B statistics, balanced, each token's experts on one device") {
    // Token t, slot k -> expert 8 * (t % 16) + k: each expert gets T*K/E = 256 tokens; all of a
    // token's experts sit on device (t % 16) / 2.
    const auto s = expert_parallel_stats(routing([](std::size_t t, std::size_t k) { return 8 * (t % 16) + k; }), T, K,
                                         E, H, I, D, {}, B);
    CHECK(s.device_pairs == std::vector<std::size_t>(8, 4096));  // 2/16 of the tokens x 8 pairs
    CHECK(s.device_tokens == std::vector<std::size_t>(8, 512));
    CHECK(s.max_pairs == 4096);
    CHECK(s.mean_pairs == 4096.0);  // 4096 x 8 / 8
    CHECK(s.imbalance == 1.0);
    // Home of t: t / 512. Of a device's 512 home tokens, 2/16 (64) stay: 4096 - 8 x 64 = 3584 sends.
    CHECK(s.alltoallv_sends == 3584);
    CHECK(s.alltoallv_dispatch_bytes == 3584 * kRow);  // 14,680,064
    CHECK(s.alltoallv_dispatch_bytes == 14680064);
    CHECK(s.alltoallv_combine_bytes == 14680064);
    CHECK(s.allgather_bytes == 7 * 4096 * kRow);  // 117,440,512
    CHECK(s.allgather_bytes == 117440512);
    CHECK(s.reduce_scatter_bytes == 117440512);
    CHECK(s.allreduce_bytes == 234881024);
    // EP vs TP: balanced EP does the same work as TP; both hold 1/8 of the expert weights.
    CHECK(s.ep_max_device_flops == 4096ull * 6 * 2048 * 768);  // 38,654,705,664
    CHECK(s.tp_max_device_flops == 4096ull * 8 * 6 * 2048 * 96);
    CHECK(s.ep_max_device_flops == s.tp_max_device_flops);
    CHECK(s.ep_max_device_weight_bytes == 16ull * 3 * 2048 * 768 * 2);  // 150,994,944
    CHECK(s.tp_max_device_weight_bytes == 128ull * 3 * 2048 * 96 * 2);
    CHECK(s.ep_max_device_weight_bytes == 150994944);
    CHECK(s.tp_max_device_weight_bytes == 150994944);
    MESSAGE(s.to_text());
}

TEST_CASE("Qwen3-30B-A3B statistics, balanced, each token's experts on 8 different devices") {
    // Token t, slot k -> expert (t + 16 k) % 128: 256 tokens per expert, one pair per device per token.
    const auto s = expert_parallel_stats(routing([](std::size_t t, std::size_t k) { return (t + 16 * k) % 128; }), T,
                                         K, E, H, I, D, {}, B);
    CHECK(s.device_pairs == std::vector<std::size_t>(8, 4096));
    CHECK(s.device_tokens == std::vector<std::size_t>(8, 4096));
    CHECK(s.imbalance == 1.0);
    // Every token goes to its 7 other devices: the all-to-all-v moves as much as the all-gather.
    CHECK(s.alltoallv_sends == 7 * 4096);
    CHECK(s.alltoallv_dispatch_bytes == 117440512);
    CHECK(s.alltoallv_dispatch_bytes == s.allgather_bytes);
}

TEST_CASE("Qwen3-30B-A3B statistics, skewed: every token to experts 0..7") {
    const auto s = expert_parallel_stats(routing([](std::size_t, std::size_t k) { return k; }), T, K, E, H, I, D, {}, B);
    CHECK(s.device_pairs == std::vector<std::size_t>{32768, 0, 0, 0, 0, 0, 0, 0});
    CHECK(s.device_tokens == std::vector<std::size_t>{4096, 0, 0, 0, 0, 0, 0, 0});
    CHECK(s.max_pairs == 32768);
    CHECK(s.imbalance == 8.0);  // 32768 / 4096
    CHECK(s.alltoallv_sends == 4096 - 512);  // every token not homed on device 0, once
    CHECK(s.alltoallv_dispatch_bytes == 14680064);
    CHECK(s.ep_max_device_flops == 32768ull * 6 * 2048 * 768);  // 309,237,645,312: 8x TP's
    CHECK(s.ep_max_device_flops == 8 * s.tp_max_device_flops);

    // A load-balanced custom mapping (the Tenstorrent plan's "future" option): device d holds expert d and 15
    // cold experts. Now every device has T_d = 4096 and every token goes to 7 remote devices.
    std::vector<std::vector<std::size_t>> mapping(8);
    for (std::size_t d = 0; d < 8; ++d) {
        mapping[d].push_back(d);
        for (std::size_t i = 0; i < 15; ++i) mapping[d].push_back(8 + 15 * d + i);
    }
    const auto b = expert_parallel_stats(routing([](std::size_t, std::size_t k) { return k; }), T, K, E, H, I, D,
                                         mapping, B);
    CHECK(b.device_pairs == std::vector<std::size_t>(8, 4096));
    CHECK(b.imbalance == 1.0);
    CHECK(b.alltoallv_sends == 7 * 4096);
}

TEST_CASE("statistics of a problem run: T_d and imbalance by hand") {
    // 4 tokens, K 2, E 4, D 2 (device 0: experts 0, 1; device 1: 2, 3); all pairs but one on device 0.
    const auto s = expert_parallel_stats({0, 1, 1, 0, 0, 1, 2, 0}, 4, 2, 4, 3, 5, 2, {}, 4);
    CHECK(s.device_pairs == std::vector<std::size_t>{7, 1});
    CHECK(s.imbalance == doctest::Approx(7.0 / 4.0));
    // Homes: tokens 0, 1 -> device 0; 2, 3 -> device 1. Sends: tokens 2 and 3 to device 0.
    CHECK(s.alltoallv_sends == 2);
    CHECK(s.alltoallv_dispatch_bytes == 2 * 3 * 4);
    CHECK(s.allgather_bytes == 1 * 4 * 3 * 4);
    CHECK(s.tp_max_device_flops == 8ull * 6 * 3 * 3);  // ceil(5 / 2) = 3 columns
}

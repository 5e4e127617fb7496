// Router front-ends (tools/generator/src/routers.cpp): hand-computed values, ties, group limiting.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include <map>
#include <string>

#include "moe/generator/case_spec.hpp"
#include "moe/generator/golden_builder.hpp"
#include "moe/generator/routers.hpp"
#include "moe/generator/random_stream.hpp"
#include "moe/generator/synthesize.hpp"
#include "moe/spec/error.hpp"
#include "catalog_text.hpp"
#include "text_contains.hpp"

using namespace moe;
using namespace moe::generator;
using moe::test::has;

namespace {
RouterConfig cfg(RouterKind k, std::size_t K) {
    RouterConfig c;
    c.kind = k;
    c.topk = K;
    return c;
}
using Idx = std::vector<std::size_t>;
}  // namespace

TEST_CASE("sigmoid and exp at 0 are exact") {
    CHECK(sigmoid_portable(0.0) == 0.5);
}

TEST_CASE("softmax_topk: softmax over E, top-K, renormalised (Qwen3)") {
    // probabilities 1/10, 2/10, 3/10, 4/10
    const std::vector<double> z = {std::log(1.0), std::log(2.0), std::log(3.0), std::log(4.0)};
    auto c = cfg(RouterKind::softmax_topk, 2);
    auto r = route(z, 1, 4, c);
    CHECK(r.indices == Idx{3, 2});
    CHECK(r.weights[0] == doctest::Approx(4.0 / 7.0).epsilon(1e-14));
    CHECK(r.weights[1] == doctest::Approx(3.0 / 7.0).epsilon(1e-14));
    c.normalize = false;
    r = route(z, 1, 4, c);
    CHECK(r.indices == Idx{3, 2});
    CHECK(r.weights[0] == doctest::Approx(0.4).epsilon(1e-14));
    CHECK(r.weights[1] == doctest::Approx(0.3).epsilon(1e-14));
    c.bias = {0, 0, 0, 0};
    CHECK_THROWS_AS(route(z, 1, 4, c), InputError);
}

TEST_CASE("ties: the lower expert id wins, slots in descending score") {
    auto c = cfg(RouterKind::softmax_topk, 2);
    auto r = route({1, 1, 1, 1, /* token 1 */ 0, 5, 5, 5}, 2, 4, c);
    CHECK(r.indices == Idx{0, 1, 1, 2});
    CHECK(r.weights[0] == 0.5);
    CHECK(r.weights[1] == 0.5);
    auto g = cfg(RouterKind::topk_softmax, 3);
    r = route({2, 7, 2, 7, 2}, 1, 5, g);
    CHECK(r.indices == Idx{1, 3, 0});
    CHECK(top_k({3, 1, 3, 2}, {3, 2, 1, 0}, 3) == Idx{0, 2, 3});
}

TEST_CASE("topk_softmax: top-K on logits + bias, softmax over the K (GPT-OSS)") {
    auto c = cfg(RouterKind::topk_softmax, 2);
    auto r = route({0, 2, 1, 3}, 1, 4, c);
    const double e = std::exp(1.0);
    CHECK(r.indices == Idx{3, 1});
    CHECK(r.weights[0] == doctest::Approx(e / (1 + e)).epsilon(1e-14));
    CHECK(r.weights[1] == doctest::Approx(1 / (1 + e)).epsilon(1e-14));
    c.bias = {10, 0, 0, 0};  // biased logits 10, 2, 1, 3: the bias enters the weights too
    r = route({0, 2, 1, 3}, 1, 4, c);
    CHECK(r.indices == Idx{0, 3});
    CHECK(r.weights[0] == doctest::Approx(1 / (1 + std::exp(-7.0))).epsilon(1e-14));
    CHECK(r.weights[1] == doctest::Approx(std::exp(-7.0) / (1 + std::exp(-7.0))).epsilon(1e-12));
}

TEST_CASE("sigmoid_bias: bias steers selection, weights are the unbiased sigmoids (DeepSeek-V3)") {
    // sigmoids 0.5, 0.5, 0.75, 0.25
    const std::vector<double> z = {0, 0, std::log(3.0), -std::log(3.0)};
    auto c = cfg(RouterKind::sigmoid_bias, 2);
    auto r = route(z, 1, 4, c);
    CHECK(r.indices == Idx{2, 0});  // 0 and 1 tie at 0.5: 0 wins
    CHECK(r.weights[0] == doctest::Approx(0.6).epsilon(1e-14));
    CHECK(r.weights[1] == doctest::Approx(0.4).epsilon(1e-14));
    c.normalize = false;
    r = route(z, 1, 4, c);
    CHECK(r.weights[0] == doctest::Approx(0.75).epsilon(1e-14));
    CHECK(r.weights[1] == 0.5);
    c.normalize = true;
    c.bias = {0, 0.125, 0, 1.0};  // selection scores 0.5, 0.625, 0.75, 1.25
    r = route(z, 1, 4, c);
    CHECK(r.indices == Idx{3, 2});
    CHECK(r.weights[0] == doctest::Approx(0.25).epsilon(1e-14));
    CHECK(r.weights[1] == doctest::Approx(0.75).epsilon(1e-14));
}

TEST_CASE("group_limited: groups scored by their top-2 sum, best groups kept, ties to the lower id") {
    // All sigmoids 0.5; bias sets the selection scores exactly:
    // g0: 0.75 0.5 (sum 1.25, max 0.75)   g1: 0.625 0.625 (sum 1.25)
    // g2: 0.875 0.0 (sum 0.875, best max)  g3: 0.5 0.5 (sum 1.0)
    const std::vector<double> z(8, 0.0);
    auto c = cfg(RouterKind::group_limited, 2);
    c.n_group = 4;
    c.topk_group = 2;
    c.bias = {0.25, 0, 0.125, 0.125, 0.375, -0.5, 0, 0};
    auto r = route(z, 1, 8, c);
    CHECK(r.indices == Idx{0, 2});  // groups 0 and 1 kept; 2 and 3 tie at 0.625: 2 wins
    CHECK(r.weights[0] == 0.5);
    CHECK(r.weights[1] == 0.5);
    c.topk_group = 1;  // g0 and g1 tie at 1.25: g0 wins
    r = route(z, 1, 8, c);
    CHECK(r.indices == Idx{0, 1});
    c.topk_group = 4;  // every group: plain sigmoid_bias
    r = route(z, 1, 8, c);
    CHECK(r.indices == Idx{4, 0});
    auto s = c;
    s.kind = RouterKind::sigmoid_bias;
    CHECK(route(z, 1, 8, s).indices == Idx{4, 0});
    // Sizes the grouping cannot serve.
    c.n_group = 3;
    CHECK_THROWS_AS(route(z, 1, 8, c), InputError);
    c.n_group = 4;
    c.topk_group = 5;
    CHECK_THROWS_AS(route(z, 1, 8, c), InputError);
    c.topk_group = 1;
    c.topk = 3;  // one group of 2 cannot fill top-3
    CHECK_THROWS_AS(route(z, 1, 8, c), InputError);
}

TEST_CASE("group_limited with distinct sigmoid weights") {
    // E = 4, 2 groups; sigmoids 0.5, 0.75 | 0.25, 0.5 -> group 0 kept; weights 0.75 / 1.25, 0.5 / 1.25
    const std::vector<double> z = {0, std::log(3.0), -std::log(3.0), 0};
    auto c = cfg(RouterKind::group_limited, 2);
    c.n_group = 2;
    c.topk_group = 1;
    auto r = route(z, 1, 4, c);
    CHECK(r.indices == Idx{1, 0});
    CHECK(r.weights[0] == doctest::Approx(0.6).epsilon(1e-14));
    CHECK(r.weights[1] == doctest::Approx(0.4).epsilon(1e-14));
}

TEST_CASE("router names and refused inputs") {
    for (auto k : {RouterKind::none, RouterKind::softmax_topk, RouterKind::topk_softmax, RouterKind::sigmoid_bias,
                   RouterKind::group_limited})
        CHECK(parse_router(router_name(k)) == k);
    CHECK(!parse_router("softmax"));
    CHECK_THROWS_AS(route({0, NAN}, 1, 2, cfg(RouterKind::softmax_topk, 1)), InputError);
    CHECK_THROWS_AS(route({0, 1}, 1, 2, cfg(RouterKind::softmax_topk, 3)), InputError);
    CHECK_THROWS_AS(route({0, 1, 2}, 1, 2, cfg(RouterKind::softmax_topk, 1)), InputError);
}

// ---- catalogue keys (case_spec.cpp) and the scenarios they drive (synthesize.cpp) ----

namespace {

// One GEMM3 openvino case (compact routing) with the given routing object and shape.
std::string catalog_with(const std::string& routing, std::size_t T = 8, std::size_t E = 8, std::size_t K = 2) {
    return R"({"format": "moe-catalog", "format_version": 1, "cases": [{"name": "c", "expert_type": "GEMM3_SWIGLU",
        "convention": "openvino", "seed": 7, "shape": {"tokens": )" + std::to_string(T) +
           R"(, "hidden": 8, "inter": 4, "experts": )" + std::to_string(E) + R"(, "topk": )" + std::to_string(K) +
           R"(}, "routing": )" + routing + "}]}";
}

std::vector<CaseSpec> load_text(const std::string& text) { return moe::test::load_catalog_text(text); }

std::string load_error(const std::string& text) { return moe::test::catalog_text_error(text); }

}  // namespace

TEST_CASE("catalogue: router keys parse strictly, errors name the case and the key") {
    const auto c = load_text(catalog_with(
        R"({"router": "group_limited", "n_group": 4, "topk_group": 2, "normalize": false, "logit_scale": 3, "bias_scale": 0.5})"));
    REQUIRE(c.size() == 1);
    CHECK(c[0].routing.router == RouterKind::group_limited);
    CHECK(c[0].routing.n_group == 4);
    CHECK(c[0].routing.topk_group == 2);
    CHECK(!c[0].routing.normalize);
    CHECK(c[0].routing.logit_scale == 3.0);
    CHECK(c[0].routing.bias_scale == 0.5);
    CHECK(has(load_error(catalog_with(R"({"router": "softmax"})")), "case c, key routing.router: unknown router"));
    CHECK(has(load_error(catalog_with(R"({"routr": "softmax_topk"})")), "key routing.routr: unknown key"));
    CHECK(has(load_error(catalog_with(R"({"router": "softmax_topk", "skew": 1})")), "key routing.skew"));
    CHECK(has(load_error(catalog_with(R"({"router": "softmax_topk", "bias_scale": 1})")), "key routing.bias_scale"));
    CHECK(has(load_error(catalog_with(R"({"router": "topk_softmax", "normalize": true})")), "key routing.normalize"));
    CHECK(has(load_error(catalog_with(R"({"router": "sigmoid_bias", "n_group": 2})")), "key routing.n_group"));
    CHECK(has(load_error(catalog_with(R"({"router": "group_limited", "n_group": 3})")), "key routing.n_group"));
    CHECK(has(load_error(catalog_with(R"({"router": "group_limited", "n_group": 4, "topk_group": 5})")),
              "key routing.topk_group"));
    CHECK(has(load_error(catalog_with(R"({"n_group": 4})")), "key routing.n_group"));
    CHECK(has(load_error(catalog_with(R"({"balanced": true})", 3)), "key routing.balanced: needs experts = 8 to divide T*K = 6"));
    CHECK(has(load_error(catalog_with(R"({"balanced": true, "skew": 1})")), "key routing.balanced"));
    CHECK(has(load_error(catalog_with(R"({"shared_expert": 8})")), "key routing.shared_expert"));
    CHECK(has(load_error(catalog_with(R"({"shared_expert": 1, "exclude": [1]})")), "key routing.shared_expert"));
    CHECK(has(load_error(catalog_with(R"({"capacity_factor": 0})")), "key routing.capacity_factor"));
    CHECK(has(load_error(catalog_with(R"({"router": "softmax_topk", "logit_scale": -1})")), "key routing.logit_scale"));
}

TEST_CASE("catalogue: a router case routes the logits of stream router_logits") {
    auto c = load_text(catalog_with(R"({"router": "sigmoid_bias", "bias_scale": 0.2})", 5, 8, 3)).at(0);
    const Problem p = synthesize(c);
    // Recompute with the documented streams.
    RandomStream lr(7, "router_logits"), br(7, "router_bias");
    std::vector<double> logits(5 * 8);
    for (auto& v : logits) v = lr.normal();
    RouterConfig cfg = [] { RouterConfig r; r.kind = RouterKind::sigmoid_bias; r.topk = 3; return r; }();
    cfg.bias.resize(8);
    for (auto& v : cfg.bias) v = br.uniform(-0.2, 0.2);
    const auto want = route(logits, 5, 8, cfg);
    for (std::size_t i = 0; i < 15; ++i) {
        CHECK(static_cast<std::size_t>(p.input(kTopkIndices).get_index(i)) == want.indices[i]);
        CHECK(p.input(kRoutingWeights).get(i) == static_cast<double>(static_cast<float>(want.weights[i])));
    }
}

TEST_CASE("catalogue: balanced, shared_expert and capacity_factor") {
    auto count = [](const Problem& p, std::size_t E) {
        std::vector<std::size_t> n(E, 0);
        const Tensor& idx = p.input(kTopkIndices);
        for (std::size_t i = 0; i < idx.size(); ++i) ++n[static_cast<std::size_t>(idx.get_index(i))];
        return n;
    };
    SUBCASE("balanced: every expert exactly T*K/E pairs, K distinct per token") {
        const Problem p = synthesize(load_text(catalog_with(R"({"balanced": true})", 12, 8, 2)).at(0));
        CHECK(count(p, 8) == std::vector<std::size_t>(8, 3));
        for (std::size_t t = 0; t < 12; ++t)
            CHECK(p.input(kTopkIndices).get_index(2 * t) != p.input(kTopkIndices).get_index(2 * t + 1));
    }
    SUBCASE("shared expert: slot 0, weight 1; the other slots sum to 1") {
        for (const char* r : {R"({"shared_expert": 5})", R"({"shared_expert": 5, "router": "softmax_topk"})"}) {
            CAPTURE(r);
            const Problem p = synthesize(load_text(catalog_with(r, 6, 8, 3)).at(0));
            for (std::size_t t = 0; t < 6; ++t) {
                CHECK(p.input(kTopkIndices).get_index(3 * t) == 5);
                CHECK(p.input(kTopkIndices).get_index(3 * t + 1) != 5);
                CHECK(p.input(kTopkIndices).get_index(3 * t + 2) != 5);
                CHECK(p.input(kRoutingWeights).get(3 * t) == 1.0);
                CHECK(p.input(kRoutingWeights).get(3 * t + 1) + p.input(kRoutingWeights).get(3 * t + 2) ==
                      doctest::Approx(1.0).epsilon(1e-6));
            }
        }
    }
    SUBCASE("capacity: the first ceil(c*T*K/E) pairs of each expert in token order keep their weight") {
        const auto spec = load_text(catalog_with(R"({"skew": 2.0, "capacity_factor": 1.0})", 16, 8, 2)).at(0);
        SynthesisReport rep;
        const Problem p = synthesize(spec, &rep);
        const std::size_t cap = 4;  // ceil(1.0 * 16 * 2 / 8)
        std::vector<std::size_t> kept(8, 0);
        std::size_t dropped = 0;
        for (std::size_t i = 0; i < 32; ++i) {
            const auto e = static_cast<std::size_t>(p.input(kTopkIndices).get_index(i));
            const bool zero = p.input(kRoutingWeights).get(i) == 0.0;
            CHECK(zero == (kept[e] >= cap));
            if (zero) ++dropped;
            else ++kept[e];
        }
        CHECK(dropped > 0);
        CHECK(dropped == rep.dropped_pairs);
        // The same indices as without the capacity: dropped pairs stay in the indices.
        auto no_cap = spec;
        no_cap.routing.capacity_factor = 0.0;
        CHECK(synthesize(no_cap).input(kTopkIndices) == p.input(kTopkIndices));
        // The golden file's description names the router and the drop count.
        const auto g = build_golden(spec, {});
        CHECK(has(g.description, "[routing: router none, " + std::to_string(dropped) + " dropped pairs]"));
    }
}

TEST_CASE("routing.skew so large that the Zipf weights underflow: the lowest-numbered free experts, never a wild index") {
    // 1/(e+1)^s is 0 for every e >= 1 at s = 1e308 (and inf): after expert 0 the weights left sum
    // to 0. The sampler walked below index 0 there (found by mutating the bundled catalogue; the
    // generator died with "free(): invalid pointer").
    for (const char* skew : {"1e308", "1.7976931348623157e308"}) {
        CAPTURE(skew);
        const auto spec = load_text(catalog_with(std::string(R"({"skew": )") + skew + R"(, "exclude": [2]})", 6, 8, 3)).at(0);
        const Problem p = synthesize(spec);
        const Problem again = synthesize(spec);
        CHECK(p.input(kTopkIndices) == again.input(kTopkIndices));
        for (std::size_t t = 0; t < 6; ++t) {
            std::vector<std::int64_t> experts;
            for (std::size_t k = 0; k < 3; ++k) experts.push_back(p.input(kTopkIndices).get_index(t * 3 + k));
            std::sort(experts.begin(), experts.end());
            CHECK(experts == std::vector<std::int64_t>{0, 1, 3});  // expert 2 is excluded
        }
    }
}
